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
from ._explain import Lookup, RowView, explain, group_id, infer_corpus_changes, read_slots
from ._model import AuditResult, Change, CorpusChange, Diff, DocMove, Evidence, Membership, Outcome, TextDiff

__all__ = ["classify_changes", "config_knobs", "word_diff", "corpus_rows", "KEY", "KIND_KEYS"]

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


_CALL_COUNTS = ("n_valid", "n_invalid", "n_refusal", "n_error", "n_truncated")


def _covered(row: Mapping[str, Any], kind: str) -> bool:
    """The judge has this item: a verdict, or a call asked (an import judge's row for a pair its file has no vote on
    is `none` with every count zero: not covered). An agent's undecided decision was asked too (`n_undecided`, absent
    from older tables: 0)."""
    if kind == "review" or row.get(_VERDICT[kind]) != "none" or any(row.get(c) is None for c in _CALL_COUNTS):
        return True
    return sum(int(row[c]) for c in _CALL_COUNTS) + int(row.get("n_undecided") or 0) > 0


def _membership(kind: str, b_rows: dict, a_rows: dict) -> list[Membership]:
    """Judges (or a judge's datasets) on one side only, counted by the distinct items they cover."""
    judges_b, judges_a = {k[1] for k in b_rows}, {k[1] for k in a_rows}
    out = []
    for change, only, rows in (("removed", judges_b - judges_a, b_rows), ("added", judges_a - judges_b, a_rows)):
        for j in sorted(only):
            n = sum(1 for k, r in rows.items() if k[1] == j and _covered(r, kind))
            out.append(Membership(kind=kind, judge=j, change=change, verdicts=n))  # type: ignore[arg-type]
    one_sided = judges_b ^ judges_a
    combos_b = {(k[0], k[1]) for k in b_rows if k[1] not in one_sided}
    combos_a = {(k[0], k[1]) for k in a_rows if k[1] not in one_sided}
    for change, only, rows in (("removed", combos_b - combos_a, b_rows), ("added", combos_a - combos_b, a_rows)):
        for ds, j in sorted(only):
            n = sum(1 for k, r in rows.items() if (k[0], k[1]) == (ds, j) and _covered(r, kind))
            out.append(Membership(kind=kind, judge=j, dataset=ds, change=change, verdicts=n))  # type: ignore[arg-type]
    return out


def _row_view(view: _View, b: Mapping[str, Any], a: Mapping[str, Any]) -> RowView:
    ds = a["dataset"]
    slots = dict(view.ideas(a))
    names = {s: view.titles.get((ds, i), i) for s, i in slots.items()}
    if view.kind == "pairwise":
        sb = {"idea_0": b.get("score_0"), "idea_1": b.get("score_1")}
        sa = {"idea_0": a.get("score_0"), "idea_1": a.get("score_1")}
    elif view.kind == "pointwise":
        sb, sa = {"idea": b.get("score")}, {"idea": a.get("score")}
    else:
        sb, sa = {}, {}

    def text_digest(texts: Mapping[tuple[str, str], str], idea: str) -> str | None:
        t = texts.get((ds, idea))
        return None if t is None else digest_obj(t)

    digests = {s: (text_digest(view.texts_before, i), text_digest(view.texts_after, i)) for s, i in slots.items()}
    return RowView(kind=view.kind, slots=slots, names=names, scores_before=sb, scores_after=sa,
                   text_diffs=view.text_diffs(b, a), text_digests=digests)


class _Thresholds:
    """Why a (dataset, judge)'s pointwise threshold moved: the causes of the score moves of its other ideas, and
    the judged subset when the two runs scored different ideas."""

    def __init__(self, view: _View, b_rows: dict, a_rows: dict):
        self.view, self.b_rows, self.a_rows = view, b_rows, a_rows
        self.memo: dict[tuple[str, str], list[list[Any]]] = {}

    def atoms(self, ds: str, judge: str) -> list[list[Any]]:
        if (ds, judge) not in self.memo:
            keys_b = sorted(k[2] for k, r in self.b_rows.items() if k[:2] == (ds, judge) and r.get("score") is not None)
            keys_a = sorted(k[2] for k, r in self.a_rows.items() if k[:2] == (ds, judge) and r.get("score") is not None)
            out: list[list[Any]] = []
            if keys_b != keys_a:
                out.append(["subset", ds, digest_obj(keys_b), digest_obj(keys_a)])
            for item in sorted(set(keys_b) & set(keys_a)):
                b, a = self.b_rows[(ds, judge, item)], self.a_rows[(ds, judge, item)]
                if b.get("score") == a.get("score"):
                    continue
                rv = _row_view(self.view, b, a)
                sb, sa = read_slots(b).get("idea"), read_slots(a).get("idea")
                tb, ta = rv.text_digests.get("idea", (None, None))
                if tb != ta and None not in (tb, ta):
                    atom: list[Any] = ["text", item, tb, ta]
                elif sb is not None and sa is not None and sb.corpus != sa.corpus and sa.corpus is not None:
                    atom = ["corpus", sb.corpus, sa.corpus]
                elif sb is not None and sa is not None and sb.embedder != sa.embedder and sa.embedder is not None:
                    atom = ["embedder", sb.embedder, sa.embedder]
                else:
                    continue
                if atom not in out:
                    out.append(atom)
            self.memo[(ds, judge)] = out or [["threshold", ds, judge]]
        return self.memo[(ds, judge)]


def _label(atom: list[Any], ds: str, view: _View, corpus: Mapping[tuple[str, str], CorpusChange], docs: list[DocMove]) -> str:
    kind = atom[0]
    if kind == "text":
        return f"text edited: {view.titles.get((ds, atom[1]), atom[1])}"
    if kind == "corpus":
        found = corpus.get((atom[1], atom[2]))
        return found.label() if found else f"corpus changed ({str(atom[1])[:12]} → {str(atom[2])[:12]})"
    if kind == "embedder":
        return f"embedder changed: {atom[1]} → {atom[2]}"
    if kind == "subset":
        return f"{atom[1]}: the runs judged different ideas (judge.limit), so the median pointwise threshold moved"
    if kind == "threshold":
        return f"{atom[1]}: the pointwise threshold of {atom[2]} moved"
    if kind == "docs":
        keys = {tuple(k) for k in atom[2]}  # search agents' keys carry the query (_explain._atoms)
        names = sorted({f'"{d.title}"' + (f' (search "{d.query}")' if d.query else "") for d in docs
                        if (d.doc_id, d.digest or "", *([d.query] if d.query else [])) in keys and d.movement == atom[1]})
        return f"{atom[1]}: " + "; ".join(names)
    return "moved: " + (", ".join(atom[1]) or "evidence")


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
    probes: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    subset_before: Mapping[str, Any] | None = None,
    subset_after: Mapping[str, Any] | None = None,
    corpus: list[CorpusChange] | None = None,
    lookup: Lookup | None = None,
) -> AuditResult:
    """Every changed verdict between two tables of one kind (pairwise | pointwise | review), with a cause.

    Causes, first match wins: `dataset` (the key is on one side only), `config` (config_digest
    moved; knobs named from the judges' config JSON), `evidence` (evidence_digest moved; inputs
    named from evidence_parts), `harness` (code digest or call keys moved), `provider` (only the
    provider-reported model id moved), `spurious` (same call keys, inputs and provider model).
    A judge with rows on one side only is one `membership` line, not a change per row; a key missing from a side
    whose judge stage judged a subset (`subset_before`/`subset_after`: the manifest summary's `subset`) is counted
    in `not_judged`, not a change. `configs_*` map judge → config dict (judges.parquet), `titles`/`texts_*`
    (dataset, idea_id) → title/text. `adjudications` is an `AdjudicationIndex` (or None): evidence changes take
    their status from the row bound to their key, verdicts and evidence digests. `families` maps (probe dataset,
    pair id) → attack family and `probes` to {family, template_id, position, attacked_idea_id, slot, injected}:
    an edited attack template moves its probes' idea texts, so their changes are `evidence` naming the family.
    Every change whose evidence moved carries `evidence.decisive` in words (_explain); `corpus`: the corpus
    changes inferred over all tables of the audit (default: from these two), `lookup`: (doc id, digest) → abstract.
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
    membership = _membership(kind, b_rows, a_rows)
    one_sided = {m.judge for m in membership if m.dataset is None}
    one_sided_sets = {(m.dataset, m.judge) for m in membership if m.dataset is not None}
    if corpus is None:
        corpus = infer_corpus_changes(_corpus_rows(kind, view, b_rows, a_rows), lookup)
    by_move = {(c.before or "", c.after or ""): c for c in corpus}
    prefer = {d.doc_id for c in corpus for d in (*c.added, *c.removed, *c.edited)}
    thresholds = _Thresholds(view, b_rows, a_rows)
    subsets = {label: dict(s) for label, s in ((from_run, subset_before), (to_run, subset_after)) if s is not None}
    changes: list[Change] = []
    compared = 0
    quiet_moves = 0
    not_judged = 0

    for key in sorted(set(b_rows) | set(a_rows)):
        ds, judge, item = key
        if judge in one_sided or (ds, judge) in one_sided_sets:
            continue
        b, a = b_rows.get(key), a_rows.get(key)
        if (b is None and subset_before is not None) or (a is None and subset_after is not None):
            not_judged += 1  # the run without it judged a subset: nothing about the item changed
            continue
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
                  "outcome_after": view.outcome(a), "evidence_digests": ev_digests, "family": (families or {}).get((ds, item)),
                  "probe": dict((probes or {})[(ds, item)]) if (ds, item) in (probes or {}) else None}
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
        explained = None
        if b.get("evidence_digest") != a.get("evidence_digest") or kind == "review":
            rv = _row_view(view, b, a)
            explained = explain(rv, b, a, prefer=prefer, lookup=lookup,
                                threshold_atoms=lambda ds=ds, judge=judge: thresholds.atoms(ds, judge),
                                moved_parts=[d.name for d in inputs if d.name not in ("code", "call_keys", "provider_model")])
            evidence = Evidence(docs=explained.docs, text_diffs=rv.text_diffs, decisive=explained.decisive, dropped=explained.dropped)
        if b.get("config_digest") != a.get("config_digest"):
            knobs = config_knobs((configs_before or {}).get(judge), (configs_after or {}).get(judge))
            if not knobs:
                # The judges table did not explain the move (absent or identical): say so rather than guess.
                knobs = [Diff(name="config_digest", before=b.get("config_digest"), after=a.get("config_digest"))]
            changes.append(Change(**common, cause="config", knobs=knobs, inputs=inputs or None, evidence=evidence, status="not-adjudicable"))
            continue
        names = {d.name for d in inputs}
        if names - {"code", "call_keys", "provider_model"}:
            assert explained is not None and evidence is not None
            group = group_id(explained.atoms)
            label = "; ".join(_label(x, ds, view, by_move, explained.docs) for x in explained.atoms)
            adj, unbound = index.lookup(ds, judge, item, str(before_v), str(after_v), ev_digests)
            status = adj.current.decision if adj else "unadjudicated"
            changes.append(Change(**common, cause="evidence", inputs=inputs, evidence=evidence, group=group, group_label=label,
                                  status=status, adjudication=adj, unbound=unbound))
        elif names & {"code", "call_keys"}:
            changes.append(Change(**common, cause="harness", inputs=inputs, evidence=evidence, status="not-adjudicable"))
        elif "provider_model" in names:
            changes.append(Change(**common, cause="provider", inputs=inputs, evidence=evidence, status="not-adjudicable"))
        else:
            changes.append(Change(**common, cause="spurious", inputs=[], status="not-adjudicable"))

    return AuditResult(
        from_run=from_run, to_run=to_run, compared=compared, unchanged_with_changed_digests=quiet_moves, changes=changes,
        membership=membership, datasets=sorted({k[0] for k in (*b_rows, *a_rows)}),
        judges=sorted({k[1] for k in b_rows} | {k[1] for k in a_rows}), not_judged=not_judged, subsets=subsets, corpus=corpus,
    )


def _corpus_rows(kind: str, view: _View, b_rows: dict, a_rows: dict) -> list[tuple[str, Any, Any, dict[str, str]]]:
    """(judge, before row, after row, slot → idea id) of every key, for `infer_corpus_changes`."""
    out = []
    for key in sorted(set(b_rows) | set(a_rows)):
        b, a = b_rows.get(key), a_rows.get(key)
        present = a if a is not None else b
        out.append((key[1], b, a, dict(view.ideas(present)) if kind != "review" else {}))
    return out


def corpus_rows(tables: list[tuple[str, pl.DataFrame | None, pl.DataFrame | None]]) -> list[tuple[str, Any, Any, dict[str, str]]]:
    """`_corpus_rows` over several kinds' tables [(kind, before, after)]: the whole audit's evidence."""
    out = []
    for kind, tb, ta in tables:
        if kind == "review" or tb is None or ta is None:
            continue
        view = _View(kind, {}, {}, {})
        out.extend(_corpus_rows(kind, view, _records(tb, "before", kind), _records(ta, "after", kind)))
    return out
