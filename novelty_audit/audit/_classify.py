"""Classify verdict changes between two tables from their digests, and name the decisive evidence.

Pure functions over tables: the ledger audit, the report and the drift watch all call
`classify_changes`. Rows are aligned by (dataset, judge, item id), never by position.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import polars as pl

from ..artifacts import digest_obj
from ..errors import BadInputError
from ._model import AuditResult, Change, Diff, DocMove, Evidence, Membership, Outcome, TextDiff

__all__ = ["classify_changes", "config_knobs", "word_diff", "KEY", "KIND_KEYS"]

KEY = ("dataset", "judge", "pair_id")
KIND_KEYS: dict[str, tuple[str, str, str]] = {
    "pairwise": KEY,
    "pointwise": ("dataset", "judge", "idea_id"),
    "review": ("dataset", "judge", "paper_id"),
}
_VERDICT = {"pairwise": "verdict", "pointwise": "predicted", "review": "label_counts"}
_DIGESTS = ("config_digest", "evidence_digest", "code_digest", "call_digests", "provider_model", "evidence_parts")


def _records(df: pl.DataFrame, side: str, kind: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    key_cols = KIND_KEYS[kind]
    missing = [c for c in (*key_cols, _VERDICT[kind]) if c not in df.columns]
    if missing:
        raise BadInputError(f"{side}: {kind} table lacks column(s) {', '.join(missing)}", hint="see docs/design/tables.md")
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    dups: list[str] = []
    for row in df.to_dicts():
        key = tuple(row[c] for c in key_cols)
        if key in out:
            dups.append("/".join(map(str, key)))
        out[key] = row  # type: ignore[index]
    if dups:
        raise BadInputError(
            f"{side}: duplicate {'verdict' if kind == 'pairwise' else kind} key ({', '.join(key_cols)}) for {len(dups)} row(s), e.g. {', '.join(sorted(dups)[:5])}",
            hint="each judge must give one row per item and dataset; the table is malformed",
        )
    return out


def _parts(row: Mapping[str, Any]) -> dict[str, str]:
    raw = row.get("evidence_parts")
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return {str(k): v for k, v in raw.items()}
    return dict(orjson.loads(raw))


def _docs(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = row.get("evidence_docs")
    if not raw:
        return []
    return list(orjson.loads(raw)) if isinstance(raw, (str, bytes)) else list(raw)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out or {prefix[:-1]: {}}
    return {prefix[:-1]: value}


def config_knobs(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[Diff]:
    """The knobs whose values differ between two judge configs (nested keys dotted)."""
    a = _flatten(dict(before or {}))
    b = _flatten(dict(after or {}))
    return [Diff(name=k, before=a.get(k), after=b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """Word-level diff: ("=", kept words), ("-", removed words), ("+", added words) in text order."""
    a, b = before.split(), after.split()
    ops: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append(("=", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            ops.append(("-", " ".join(a[i1:i2])))
        if j2 > j1:
            ops.append(("+", " ".join(b[j1:j2])))
    return ops


def _changed_inputs(b: Mapping[str, Any], a: Mapping[str, Any]) -> list[Diff]:
    """Evidence parts, code, call keys and provider model that differ, in that order."""
    diffs: list[Diff] = []
    if b.get("evidence_digest") != a.get("evidence_digest") or _parts(b) != _parts(a):
        pb, pa = _parts(b), _parts(a)
        parts = [Diff(name=k, before=pb.get(k), after=pa.get(k)) for k in sorted(set(pb) | set(pa)) if pb.get(k) != pa.get(k)]
        diffs.extend(parts or [Diff(name="evidence", before=b.get("evidence_digest"), after=a.get("evidence_digest"))])
    if b.get("code_digest") != a.get("code_digest"):
        diffs.append(Diff(name="code", before=b.get("code_digest"), after=a.get("code_digest")))
    same_asked = not diffs and b.get("config_digest") == a.get("config_digest")
    calls_b, calls_a = list(b.get("call_digests") or []), list(a.get("call_digests") or [])
    if same_asked and calls_b != calls_a:
        # Call keys follow config and evidence; only listed when those held, where a move means the harness
        # built different requests from the same inputs.
        diffs.append(Diff(name="call_keys", before=digest_obj(calls_b), after=digest_obj(calls_a)))
    if b.get("provider_model") != a.get("provider_model"):
        diffs.append(Diff(name="provider_model", before=b.get("provider_model"), after=a.get("provider_model")))
    return diffs


def _any_digest_moved(b: Mapping[str, Any], a: Mapping[str, Any]) -> bool:
    def norm(v: Any) -> Any:
        return list(v) if isinstance(v, (list, tuple)) else v

    return any(norm(b.get(c)) != norm(a.get(c)) for c in _DIGESTS)


def _doc_moves(b: Mapping[str, Any], a: Mapping[str, Any]) -> list[DocMove]:
    """Documents that entered or left the evidence; a document whose content changed counts as left + entered."""

    def ident(d: Mapping[str, Any]) -> tuple[str, str, str]:
        return (str(d.get("slot")), str(d.get("doc_id")), str(d.get("digest")))

    before = {ident(d): d for d in _docs(b)}
    after = {ident(d): d for d in _docs(a)}
    entered = [after[k] for k in after if k not in before]
    left = [before[k] for k in before if k not in after]
    moves = []
    for d, movement, side in [(d, "entered", "after") for d in entered] + [(d, "left", "before") for d in left]:
        moves.append(
            DocMove(
                slot=str(d.get("slot")), movement=movement, doc_id=str(d.get("doc_id")), title=str(d.get("title") or d.get("doc_id")),  # type: ignore[arg-type]
                year=d.get("year"), source=d.get("source"),
                rank_before=d.get("rank") if side == "before" else None, rank_after=d.get("rank") if side == "after" else None,
                similarity_before=d.get("similarity") if side == "before" else None,
                similarity_after=d.get("similarity") if side == "after" else None,
                # What entered now shapes the score (Yin: the one entering at rank 0 is the new nearest); when
                # nothing entered, the departure decided it.
                decisive=movement == "entered" or not entered,
            )
        )  # fmt: skip
    if not moves:
        # Nothing in or out: show how the kept documents moved (a refitted embedder, a changed cutoff), never decisive.
        for k in after:
            if k in before and (before[k].get("similarity"), before[k].get("rank")) != (after[k].get("similarity"), after[k].get("rank")):
                d, o = after[k], before[k]
                moves.append(DocMove(slot=str(d.get("slot")), movement="moved", doc_id=str(d.get("doc_id")),
                                     title=str(d.get("title") or d.get("doc_id")), year=d.get("year"), source=d.get("source"),
                                     rank_before=o.get("rank"), rank_after=d.get("rank"), similarity_before=o.get("similarity"),
                                     similarity_after=d.get("similarity")))
    return sorted(moves, key=lambda m: (m.slot, m.movement, m.rank_after if m.rank_after is not None else m.rank_before or 0))


@dataclass(frozen=True)
class _View:
    """How one kind of table reads: ideas, titles, gold, scores and texts of a row."""

    kind: str
    titles: Mapping[tuple[str, str], str]
    texts_before: Mapping[tuple[str, str], str]
    texts_after: Mapping[tuple[str, str], str]

    def ideas(self, row: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(slot, idea id) of the row's ideas."""
        if self.kind == "pairwise":
            return [("idea_0", row.get("idea_0") or "?"), ("idea_1", row.get("idea_1") or "?")]
        if self.kind == "pointwise":
            return [("idea", row["idea_id"])]
        return []

    def item_titles(self, row: Mapping[str, Any]) -> tuple[str, ...]:
        if self.kind == "review":
            return (str(row.get("title") or row.get("paper_id")),)
        return tuple(self.titles.get((row["dataset"], i), i) for _, i in self.ideas(row))

    def gold(self, row: Mapping[str, Any]) -> str | None:
        return {"pairwise": row.get("gold_idea_id"), "pointwise": row.get("gold_label")}.get(self.kind)

    def outcome(self, row: Mapping[str, Any] | None) -> Outcome:
        if row is None:
            return Outcome(verdict=None, label="(absent)")
        v = row.get(_VERDICT[self.kind])
        v = None if v is None else str(v)
        if self.kind == "pairwise":
            ids = dict((i, t) for (_, i), t in zip(self.ideas(row), self.item_titles(row)))
            gold = self.gold(row)
            return Outcome(verdict=v, label=ids.get(v, v or "none"), correct=None if gold is None else v == gold,
                           scores=[row.get("score_0"), row.get("score_1")])
        if self.kind == "pointwise":
            gold = self.gold(row)
            return Outcome(verdict=v, label=v or "none", correct=None if gold is None else v == gold, scores=[row.get("score")])
        return Outcome(verdict=v, label=v or "(no labels)")

    def differs(self, b: Mapping[str, Any], a: Mapping[str, Any]) -> bool:
        if self.kind == "review":
            return b.get("text") != a.get("text") or b.get("items") != a.get("items")
        return b.get(_VERDICT[self.kind]) != a.get(_VERDICT[self.kind])

    def text_diffs(self, b: Mapping[str, Any], a: Mapping[str, Any]) -> list[TextDiff]:
        if self.kind == "review":
            if b.get("text") == a.get("text"):
                return []
            return [TextDiff(slot="review", title=str(a.get("title") or ""), ops=word_diff(str(b.get("text") or ""), str(a.get("text") or "")))]
        out = []
        ds = a["dataset"]
        for slot, idea in self.ideas(a):
            tb, ta = self.texts_before.get((ds, idea)), self.texts_after.get((ds, idea))
            if tb is not None and ta is not None and tb != ta:
                out.append(TextDiff(slot=slot, idea_id=idea, title=self.titles.get((ds, idea)), ops=word_diff(tb, ta)))
        return out


def _group_id(ev: Evidence, b: Mapping[str, Any], a: Mapping[str, Any], view: _View, inputs: list[Diff]) -> str:
    """Same evidence delta, same id: one document in or out (whatever slot or pair), one idea edit, one part move."""
    if any(d.movement != "moved" for d in ev.docs):
        delta: Any = ["docs", sorted({(d.movement, d.doc_id, d.title) for d in ev.docs if d.movement != "moved"})]
    elif ev.text_diffs:
        ds = a["dataset"]
        delta = ["text", sorted({(t.idea_id or t.slot, digest_obj(view.texts_before.get((ds, t.idea_id or ""), "")),
                                  digest_obj(view.texts_after.get((ds, t.idea_id or ""), ""))) for t in ev.text_diffs})]
        if view.kind == "review":
            delta = ["review-text", a.get("dataset"), a.get("judge"), a.get("paper_id")]
    else:
        def bare(name: str) -> str:
            for p in ("idea_0_", "idea_1_"):
                if name.startswith(p):
                    return name[len(p):]
            return name

        delta = ["parts", sorted({(bare(d.name), str(d.before), str(d.after)) for d in inputs})]
    return "g-" + digest_obj(delta)[:12]


def classify_changes(
    before: pl.DataFrame,
    after: pl.DataFrame,
    *,
    from_run: str = "before",
    to_run: str = "after",
    configs_before: Mapping[str, Mapping[str, Any]] | None = None,
    configs_after: Mapping[str, Mapping[str, Any]] | None = None,
    titles: Mapping[tuple[str, str], str] | None = None,
    adjudications: Any = None,
    kind: str = "pairwise",
    texts_before: Mapping[tuple[str, str], str] | None = None,
    texts_after: Mapping[tuple[str, str], str] | None = None,
    families: Mapping[tuple[str, str], str] | None = None,
) -> AuditResult:
    """Every changed verdict between two tables of one kind (pairwise | pointwise | review), with a cause.

    Causes, first match wins: `dataset` (the key is on one side only), `config` (config_digest
    moved; knobs named from the judges' config JSON), `evidence` (evidence_digest moved; inputs
    named from evidence_parts), `harness` (code digest or call keys moved), `provider` (only the
    provider-reported model id moved), `spurious` (same call keys, inputs and provider model).
    A judge with rows on one side only is one `membership` line, not a change per row.
    `configs_*` map judge → config dict (judges.parquet), `titles`/`texts_*` (dataset, idea_id) → title/text.
    `adjudications` is an `AdjudicationIndex` (or None): evidence changes take their status from the row
    bound to their key, verdicts and evidence digests. `families` maps (probe dataset, pair id) → attack family:
    an edited attack template moves its probes' idea texts, so their changes are `evidence` naming the family.
    """
    from ._adjudicate import AdjudicationIndex

    if kind not in KIND_KEYS:
        raise ValueError(f"unknown kind {kind!r}")
    b_rows = _records(before, f"{from_run} {kind}", kind)
    a_rows = _records(after, f"{to_run} {kind}", kind)
    view = _View(kind, titles or {}, texts_before or {}, texts_after or {})
    if adjudications is not None and not isinstance(adjudications, AdjudicationIndex):
        raise TypeError("adjudications must be an AdjudicationIndex (index_adjudications(load_adjudications(path)))")
    index = adjudications or AdjudicationIndex([])
    judges_b = {k[1] for k in b_rows}
    judges_a = {k[1] for k in a_rows}
    membership = [
        Membership(kind=kind, judge=j, change=change, verdicts=sum(1 for k in rows if k[1] == j))  # type: ignore[arg-type]
        for change, only, rows in (("removed", judges_b - judges_a, b_rows), ("added", judges_a - judges_b, a_rows))
        for j in sorted(only)
    ]
    one_sided = {m.judge for m in membership}
    # A dataset newly judged (or dropped) by a judge on both sides: one line as well, not a change per pair.
    combos_b = {(k[0], k[1]) for k in b_rows if k[1] not in one_sided}
    combos_a = {(k[0], k[1]) for k in a_rows if k[1] not in one_sided}
    for change, only, rows in (("removed", combos_b - combos_a, b_rows), ("added", combos_a - combos_b, a_rows)):
        for ds, j in sorted(only):
            membership.append(Membership(kind=kind, judge=j, dataset=ds, change=change,  # type: ignore[arg-type]
                                         verdicts=sum(1 for k in rows if (k[0], k[1]) == (ds, j))))
    one_sided_sets = {(m.dataset, m.judge) for m in membership if m.dataset is not None}
    changes: list[Change] = []
    compared = 0
    quiet_moves = 0

    for key in sorted(set(b_rows) | set(a_rows)):
        ds, judge, item = key
        if judge in one_sided or (ds, judge) in one_sided_sets:
            continue
        b, a = b_rows.get(key), a_rows.get(key)
        present = a if a is not None else b
        assert present is not None
        ev_digests = (None if b is None else b.get("evidence_digest"), None if a is None else a.get("evidence_digest"))
        before_v = None if b is None else b.get(_VERDICT[kind])
        after_v = None if a is None else a.get(_VERDICT[kind])
        cid = "c-" + digest_obj({"kind": kind, "key": list(key), "before": before_v, "after": after_v,
                                 "evidence": list(ev_digests),
                                 "config": [None if b is None else b.get("config_digest"), None if a is None else a.get("config_digest")]})[:16]
        common = {"id": cid, "kind": kind, "dataset": ds, "judge": judge, "pair": item, "titles": view.item_titles(present),
                  "ideas": tuple(i for _, i in view.ideas(present)), "gold": view.gold(present), "before": before_v, "after": after_v, "outcome_before": view.outcome(b),
                  "outcome_after": view.outcome(a), "evidence_digests": ev_digests, "family": (families or {}).get((ds, item))}
        if b is None or a is None:
            changes.append(
                Change(**common, cause="dataset", status="not-adjudicable",
                       inputs=[Diff(name="pair", before="absent" if b is None else "present", after="absent" if a is None else "present")])
            )  # fmt: skip
            continue
        compared += 1
        if not view.differs(b, a):
            quiet_moves += _any_digest_moved(b, a)
            continue
        inputs = _changed_inputs(b, a)
        evidence = None
        if b.get("evidence_digest") != a.get("evidence_digest") or kind == "review":
            evidence = Evidence(docs=_doc_moves(b, a), text_diffs=view.text_diffs(b, a))
            if not evidence.docs and not evidence.text_diffs:
                evidence = None
        if b.get("config_digest") != a.get("config_digest"):
            knobs = config_knobs((configs_before or {}).get(judge), (configs_after or {}).get(judge))
            if not knobs:
                # The judges table did not explain the move (absent or identical): say so rather than guess.
                knobs = [Diff(name="config_digest", before=b.get("config_digest"), after=a.get("config_digest"))]
            changes.append(Change(**common, cause="config", knobs=knobs, inputs=inputs or None, evidence=evidence, status="not-adjudicable"))
            continue
        names = {d.name for d in inputs}
        if names - {"code", "call_keys", "provider_model"}:
            group = _group_id(evidence or Evidence(), b, a, view, [d for d in inputs if d.name not in ("code", "call_keys", "provider_model")])
            adj, unbound = index.lookup(ds, judge, item, str(before_v), str(after_v), ev_digests)
            status = adj.current.decision if adj else "unadjudicated"
            changes.append(Change(**common, cause="evidence", inputs=inputs, evidence=evidence, group=group, status=status,
                                  adjudication=adj, unbound=unbound))
        elif names & {"code", "call_keys"}:
            changes.append(Change(**common, cause="harness", inputs=inputs, evidence=evidence, status="not-adjudicable"))
        elif "provider_model" in names:
            changes.append(Change(**common, cause="provider", inputs=inputs, evidence=evidence, status="not-adjudicable"))
        else:
            changes.append(Change(**common, cause="spurious", inputs=[], status="not-adjudicable"))

    return AuditResult(
        from_run=from_run, to_run=to_run, compared=compared, unchanged_with_changed_digests=quiet_moves, changes=changes,
        membership=membership, datasets=sorted({k[0] for k in (*b_rows, *a_rows)}), judges=sorted(judges_a | judges_b),
    )
