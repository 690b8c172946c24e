"""What the audit returns: one `Change` per changed verdict, with its cause and decisive evidence, and an `AuditResult`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CAUSES",
    "DECISIONS",
    "KINDS",
    "STATUSES",
    "Cause",
    "Status",
    "Kind",
    "Diff",
    "Outcome",
    "DocMove",
    "Decisive",
    "TextDiff",
    "Evidence",
    "LeakageDrop",
    "CorpusDoc",
    "CorpusChange",
    "AdjudicationRecord",
    "Adjudication",
    "Change",
    "Membership",
    "Group",
    "AuditFilters",
    "AuditResult",
]

Cause = Literal["dataset", "config", "evidence", "harness", "provider", "spurious"]
CAUSES: tuple[str, ...] = ("dataset", "config", "evidence", "harness", "provider", "spurious")
"""In precedence order: a change is attributed to the first cause whose digest moved."""

Status = Literal["unadjudicated", "correct", "incorrect", "unclear", "not-adjudicable"]
STATUSES: tuple[str, ...] = ("unadjudicated", "correct", "incorrect", "unclear", "not-adjudicable")
DECISIONS: tuple[str, ...] = ("correct", "incorrect", "unclear")

Kind = Literal["pairwise", "pointwise", "review"]
KINDS: tuple[str, ...] = ("pairwise", "pointwise", "review")
"""pairwise: verdicts.parquet (item = pair id); pointwise: pointwise.parquet (item = idea id);
review: reviews.parquet (item = paper id)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Diff(_Frozen):
    """One knob or input that differs between the two sides."""

    name: str
    """knob (config key, dotted for nested keys) or input (evidence part, `code`, `provider_model`, `pair`)."""
    before: Any = None
    after: Any = None


class Outcome(_Frozen):
    """One side's verdict as a person reads it."""

    verdict: str | None
    """idea id | tie | none (pairwise), POSITIVE | NEGATIVE | none (pointwise), label counts (review); null: absent."""
    label: str
    """The chosen idea's title, `tie`, `none`, the predicted label, the label counts, or `(absent)`."""
    correct: bool | None = None
    """Against gold; null when there is no gold (reviews) or no verdict on this side."""
    scores: list[float | None] = Field(default_factory=list)
    """[score_0, score_1] (pairwise), [score] (pointwise), [] (reviews)."""


class DocMove(_Frozen):
    """A document that entered or left the evidence a verdict rests on (neighbour set, retrieved documents), or
    that the leakage filter dropped."""

    slot: str
    """idea_0 | idea_1 | idea: whose evidence it is."""
    movement: Literal["entered", "left", "moved", "kept"]
    """moved: the same document in both sets with another similarity, rank or density (listed when it matters);
    kept: a leakage drop on both sides (listed in `Evidence.dropped` only)."""
    doc_id: str
    title: str
    year: int | None = None
    source: str | None = None
    rank_before: int | None = None
    rank_after: int | None = None
    similarity_before: float | None = None
    similarity_after: float | None = None
    decisive: bool = False
    """It now decides the score: it entered (Yin: it is the new nearest neighbour), or, when nothing entered, it left."""
    role: Literal["neighbour", "dropped"] = "neighbour"
    """dropped: the leakage filter removed it for this idea (`reason`); its similarity is the cosine it was dropped at."""
    reason: str | None = None
    """For a dropped document: own-title | near-duplicate."""
    density_before: float | None = None
    density_after: float | None = None
    """RND: the document's own kNN density on each side (when the judge recorded it)."""
    digest: str | None = None
    """sha256 of the document's text (title + abstract) as the judge saw it, on the side shown."""
    abstract: str | None = None
    """The document's abstract, when the corpus file still holds this very text (matched by its digest)."""
    query: str | None = None
    """Search agents: the query whose results it entered or left (the same paper found by two queries is two
    entries); None for judges that do not search."""

    def public(self) -> dict[str, Any]:
        # `query` only where a judge searched, so other judges' audit.json keeps its bytes
        return self.model_dump(exclude={"query"} if self.query is None else None)


class Decisive(_Frozen):
    """One reason a verdict changed, in words, with what it names: a document in or out, a neighbour's density, a
    similarity move, the pointwise threshold, an idea's text edit, or a score move too small to show."""

    kind: Literal["document", "dropped", "density", "similarity", "threshold", "text", "score", "parts"]
    text: str
    """The reason as a person reads it, e.g. '"X" (2024, id d-7) entered Alpha's neighbours at rank 0 (similarity 0.93)'."""
    slot: str | None = None
    doc_id: str | None = None
    title: str | None = None
    year: int | None = None
    before: float | None = None
    after: float | None = None
    """What moved: the density, similarity, threshold or score on each side."""
    effect: float | None = None
    """The score change it caused (RND: its share of the rank percentile), when it can be computed."""
    abstract: str | None = None
    query: str | None = None
    """Search agents: the query whose results the document entered or left."""

    def public(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class TextDiff(_Frozen):
    """A word-level diff of an edited text (an idea the judge saw, or a generated review)."""

    slot: str
    """idea_0 | idea_1 | idea | review."""
    idea_id: str | None = None
    title: str | None = None
    ops: list[tuple[str, str]] = Field(default_factory=list)
    """("=", words) kept, ("-", words) removed, ("+", words) added, in text order."""


class Evidence(_Frozen):
    """What a person needs to decide an evidence change: documents in/out, leakage drops, text edits and, first,
    the decisive reasons in words (never empty on an `evidence` change)."""

    docs: list[DocMove] = Field(default_factory=list)
    text_diffs: list[TextDiff] = Field(default_factory=list)
    decisive: list[Decisive] = Field(default_factory=list)
    dropped: list[DocMove] = Field(default_factory=list)
    """Documents the judge's leakage filter dropped for these ideas (entered, left or kept on both sides)."""

    def public(self) -> dict[str, Any]:
        return {
            "docs": [d.public() for d in self.docs],
            "decisive": [d.public() for d in self.decisive],
            "dropped": [d.public() for d in self.dropped],
            "text_diffs": [t.model_dump() for t in self.text_diffs],
        }


class AdjudicationRecord(_Frozen):
    """One row of the adjudication file."""

    dataset: str
    judge: str
    pair: str
    """The item id: pair id (pairwise), idea id (pointwise) or paper id (review)."""
    from_verdict: str
    to_verdict: str
    decision: Literal["correct", "incorrect", "unclear"]
    reason: str
    who: str
    when: str
    row: int
    """1-based position in the file (data rows), so a reader can find it."""
    evidence_before: str | None = None
    evidence_after: str | None = None
    """The change's evidence digests; None on rows written before decisions were bound to evidence (legacy)."""
    group: str | None = None

    @property
    def bound(self) -> bool:
        return bool(self.evidence_before and self.evidence_after)

    def public(self) -> dict[str, Any]:
        return {"decision": self.decision, "reason": self.reason, "who": self.who, "when": self.when, "row": self.row,
                "group": self.group}


class Adjudication(_Frozen):
    """The decision in force for a change (the file's last row for it) and the rows it superseded."""

    current: AdjudicationRecord
    superseded: list[AdjudicationRecord] = Field(default_factory=list)
    """Earlier rows for the same change, oldest first: kept and shown, never dropped."""

    def public(self) -> dict[str, Any]:
        return {**self.current.public(), "superseded": [r.public() for r in self.superseded]}


class Change(_Frozen):
    """A verdict that differs between the two sides of an audit (or an item present on one side only)."""

    id: str
    """Stable change id: digest of kind, key, verdicts and evidence digests before/after."""
    kind: Kind = "pairwise"
    dataset: str
    judge: str
    pair: str
    """The item id: pair id, idea id (pointwise) or paper id (review)."""
    titles: tuple[str, ...]
    """Titles of the item's ideas (pairwise: both, in published slot order) or of the paper."""
    ideas: tuple[str, ...] = ()
    """Idea ids in the same order as `titles` (empty for reviews)."""
    gold: str | None = None
    """The gold idea id (pairwise) or gold label (pointwise)."""
    before: str | None
    """idea id | `tie` | `none` (pointwise: the label; review: the label counts); null when absent on that side."""
    after: str | None
    outcome_before: Outcome
    outcome_after: Outcome
    cause: Cause
    knobs: list[Diff] | None = None
    """config changes: the knobs whose values differ (from judges.parquet)."""
    inputs: list[Diff] | None = None
    """every other cause: the inputs whose digests differ (evidence parts, code, provider model, pair presence)."""
    evidence: Evidence | None = None
    """Decisive evidence (documents in/out, text diffs), on every change where the evidence moved."""
    evidence_digests: tuple[str | None, str | None] = (None, None)
    family: str | None = None
    """Injection-probe items: the attack family of the probe pair (instruction, authority, claim, format,
    length_control), read from the probe stage's probes table; None elsewhere."""
    probe: dict[str, Any] | None = None
    """Injection-probe items: {family, template_id, position, attacked_idea_id, slot, injected} — `injected` is the
    text the probe added to the attacked idea (its text minus the clean idea's)."""
    group: str | None = None
    """Evidence changes from the same cause (one document added, removed or edited, one idea edit, one moved
    threshold's cause): the id digests the cause, never a document that merely left."""
    group_label: str | None = None
    """The cause in words (shown for the group)."""
    status: Status
    adjudication: Adjudication | None = None
    unbound: list[AdjudicationRecord] = Field(default_factory=list)
    """Legacy rows (no evidence digests) naming this change's key and verdicts: shown, never applied."""

    @property
    def gold_title(self) -> str | None:
        """The gold idea's title (pairwise), or the gold label (pointwise)."""
        if self.kind == "pairwise" and self.gold in self.ideas:
            return self.titles[self.ideas.index(self.gold)]
        return self.gold

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "group": self.group,
            "dataset": self.dataset,
            "judge": self.judge,
            "pair": self.pair,
            "titles": list(self.titles),
            "ideas": list(self.ideas),
            "gold": self.gold,
            "gold_title": self.gold_title,
            "before": self.before,
            "after": self.after,
            "outcome_before": self.outcome_before.model_dump(),
            "outcome_after": self.outcome_after.model_dump(),
            "cause": self.cause,
            "status": self.status,
            "evidence_digests": {"before": self.evidence_digests[0], "after": self.evidence_digests[1]},
        }
        if self.family is not None:
            out["family"] = self.family
        if self.probe is not None:
            out["probe"] = dict(self.probe)
        if self.knobs is not None:
            out["knobs"] = [d.model_dump() for d in self.knobs]
        if self.inputs is not None:
            out["inputs"] = [d.model_dump() for d in self.inputs]
        if self.evidence is not None:
            out["evidence"] = self.evidence.public()
        if self.cause == "evidence":
            out["adjudication"] = self.adjudication.public() if self.adjudication else None
            if self.unbound:
                out["unbound_adjudications"] = [r.public() for r in self.unbound]
        return out


class Membership(_Frozen):
    """A judge (or one dataset of a judge) present on one side only: one line, not one `dataset` change per row."""

    kind: Kind
    judge: str
    change: Literal["added", "removed"]
    verdicts: int
    """Distinct items the judge covers (has a verdict or asked a call for), not rows: an import judge's rows for
    pairs its file has no vote on are not counted."""
    dataset: str | None = None
    """None: the judge is on one side only; else the judge is on both sides but this dataset of it only on one."""

    def line(self) -> str:
        noun = {"pairwise": "verdicts", "pointwise": "pointwise predictions", "review": "reviews"}[self.kind]
        if self.dataset is None:
            return f"judge {self.change}: {self.judge} ({self.verdicts} {noun})"
        return f"dataset {self.change} for judge {self.judge}: {self.dataset} ({self.verdicts} {noun})"


class LeakageDrop(_Frozen):
    """One judge's leakage filter dropping a changed corpus document."""

    judge: str
    reason: str
    """near-duplicate | own-title"""
    ideas: list[str]
    """Idea ids it was dropped for."""
    similarity: float | None = None
    """The largest cosine it was dropped at."""


class CorpusDoc(_Frozen):
    """A corpus document added, removed or edited between the two sides, and what each judge did with it."""

    doc_id: str
    title: str
    year: int | None = None
    digest: str | None = None
    abstract: str | None = None
    dropped_by: list[LeakageDrop] = Field(default_factory=list)
    """Judges whose leakage filter dropped it (the side where it is present)."""
    kept_by: dict[str, int] = Field(default_factory=dict)
    """judge → neighbour sets it is in (the side where it is present)."""


class CorpusChange(_Frozen):
    """The prior-work corpus of some distance judges changed (corpus digest before → after).

    Which documents were added or removed is inferred from the documents the judges list (their neighbours and
    leakage drops) and the corpus sizes they record: a document listed only after, by most neighbour sets, when
    the corpus grew; an edited document keeps its id with another digest (exact)."""

    before: str | None
    after: str | None
    judges: list[str]
    docs_before: int | None = None
    docs_after: int | None = None
    added: list[CorpusDoc] = Field(default_factory=list)
    removed: list[CorpusDoc] = Field(default_factory=list)
    edited: list[CorpusDoc] = Field(default_factory=list)

    def label(self) -> str:
        """`corpus changed (3023 → 3024 documents): added "X" (id d-7)`."""
        size = f" ({self.docs_before} → {self.docs_after} documents)" if self.docs_before is not None and self.docs_after is not None else ""
        bits = []
        for verb, docs in (("added", self.added), ("removed", self.removed), ("edited", self.edited)):
            if docs:
                bits.append(f"{verb} " + "; ".join(f'"{d.title}" (id {d.doc_id})' for d in docs[:5]) + (" …" if len(docs) > 5 else ""))
        return f"corpus changed{size}" + (": " + ", ".join(bits) if bits else "")


class Group(_Frozen):
    """Evidence changes sharing one evidence delta."""

    id: str
    label: str
    changes: list[str]
    """Change ids."""
    status: dict[str, int]


class AuditFilters(_Frozen):
    """Which changes to show; each field None = all. Values are matched exactly (cause/status from CAUSES/STATUSES)."""

    dataset: str | None = None
    judge: str | None = None
    pair: str | None = None
    cause: str | None = None
    status: str | None = None
    group: str | None = None

    def active(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}

    def keep(self, ch: Change) -> bool:
        return all(getattr(ch, k) == v for k, v in self.active().items())


class AuditResult(_Frozen):
    """The changes between two runs, with counts by cause."""

    from_run: str
    to_run: str
    compared: int
    """Keys present on both sides (all kinds)."""
    unchanged_with_changed_digests: int
    """Keys whose verdict held although some digest (config, evidence, code, calls, provider model) moved."""
    changes: list[Change]
    membership: list[Membership] = Field(default_factory=list)
    filters: dict[str, str] = Field(default_factory=dict)
    hidden: int = 0
    """Changes left out by the filters."""
    datasets: list[str] = Field(default_factory=list)
    judges: list[str] = Field(default_factory=list)
    """Datasets and judges present on either side (for validating adjudications)."""
    not_judged: int = 0
    """Items on one side only because the other run judged a subset (`judge.limit`): not changes, not compared."""
    subsets: dict[str, Any] = Field(default_factory=dict)
    """Run label → its judge stage's subset summary ({limit, seed, datasets}), for runs that judged a subset."""
    corpus: list[CorpusChange] = Field(default_factory=list)
    """Corpus changes of the distance judges, with the documents inferred added/removed/edited."""

    @property
    def summary(self) -> dict[str, int]:
        counts = {c: 0 for c in CAUSES}
        for ch in self.changes:
            counts[ch.cause] += 1
        return {**counts, "unchanged_with_changed_digests": self.unchanged_with_changed_digests}

    @property
    def groups(self) -> list[Group]:
        by: dict[str, list[Change]] = {}
        for ch in self.changes:
            if ch.group:
                by.setdefault(ch.group, []).append(ch)
        out = []
        for gid, chs in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            status: dict[str, int] = {}
            for ch in chs:
                status[ch.status] = status.get(ch.status, 0) + 1
            label = chs[0].group_label or group_label(chs)
            if chs[0].group_label:
                label = f"{label} ({len(chs)} change{'s' * (len(chs) != 1)})"
            out.append(Group(id=gid, label=label, changes=[c.id for c in chs], status=dict(sorted(status.items()))))
        return out

    def change(self, change_id: str) -> Change | None:
        return next((c for c in self.changes if c.id == change_id), None)

    def to_json(self) -> dict[str, Any]:
        """{from, to, summary: {cause: count}, compared, not_judged, subsets, corpus, membership, groups, filters,
        hidden, changes: [...]}."""
        return {
            "from": self.from_run,
            "to": self.to_run,
            "summary": self.summary,
            "compared": self.compared,
            "not_judged": self.not_judged,
            "subsets": dict(self.subsets),
            "corpus": [c.model_dump() | {"label": c.label()} for c in self.corpus],
            "membership": [m.model_dump() | {"line": m.line()} for m in self.membership],
            "groups": [g.model_dump() for g in self.groups],
            "filters": dict(self.filters),
            "hidden": self.hidden,
            "changes": [c.public() for c in self.changes],
        }

    def status_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for ch in self.changes:
            if ch.cause == "evidence":
                out[ch.status] = out.get(ch.status, 0) + 1
        return dict(sorted(out.items()))


def group_label(changes: list[Change]) -> str:
    """What a group's changes share, for people: the entering/leaving documents, or the edited idea."""
    first = changes[0]
    n = len(changes)
    if first.evidence and any(d.movement != "moved" for d in first.evidence.docs):
        entered = sorted({d.title for d in first.evidence.docs if d.movement == "entered"})
        left = sorted({d.title for d in first.evidence.docs if d.movement == "left"})
        bits = []
        if entered:
            bits.append("entered: " + "; ".join(f'"{t}"' for t in entered))
        if left:
            bits.append("left: " + "; ".join(f'"{t}"' for t in left))
        return f"{', '.join(bits)} ({n} change{'s' * (n != 1)})"
    if first.evidence and first.evidence.text_diffs:
        titles = sorted({t.title or t.idea_id or t.slot for t in first.evidence.text_diffs})
        return f"text edited: {'; '.join(titles)} ({n} change{'s' * (n != 1)})"
    names = sorted({d.name for d in first.inputs or []})
    return f"moved: {', '.join(names) or 'evidence'} ({n} change{'s' * (n != 1)})"
