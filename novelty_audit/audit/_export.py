"""`novelty-audit export adjudications`: the decided evidence changes as a reference file for `quality --reference`.

The reference label of a decided change (docs/design/review.md):
- `correct` — the new verdict is right: the label is the verdict after the change;
- `incorrect` — the change should not have happened: the label is the verdict before it;
- `unclear` — the evidence does not settle it: the abstain label (`unknown`, the `quality` default), so the
  reference counts an answer there as unsupported and an abstention as correct.
A decided change whose label would be no verdict (`none`, absent) or is not a single verdict (reviews) has no
reference label: it is left out and listed with the reason. Each row also carries what the decision rests on:
the decision, reason, who and when, the audited runs, the change id and group, the evidence digests, the
evidence (documents in/out, decisive ones, text diffs, as the audit shows them) and the ideas' texts as the
judge saw them (with the earlier text where it changed). JSONL, one object per decided change, sorted by id,
written atomically; the file's sha256 is printed so the set can be frozen by its digest.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..artifacts import Store, atomic_write_bytes, digest_bytes
from ..errors import BadInputError
from ._api import audit_project
from ._model import Change
from ._runs import CURRENT, _ideas, current_side, ledger_side

if TYPE_CHECKING:
    from ..params import Params

__all__ = ["ABSTAIN_LABEL", "AdjudicationExport", "export_adjudications", "reference_label"]

ABSTAIN_LABEL = "unknown"
"""The reference label of an `unclear` decision: `quality`'s default --abstain-label."""
_NO_VERDICT = (None, "none")


@dataclass(frozen=True)
class AdjudicationExport:
    """What `export_adjudications` wrote."""

    path: str
    rows: int
    sha256: str
    from_run: str
    to_run: str
    judges: list[str]
    open: int
    """Evidence changes of the audit (within --judge/--dataset) nobody has decided: not exported."""
    excluded: list[dict[str, str]] = field(default_factory=list)
    """Decided changes without a reference label: {id, judge, decision, why}."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        out = [f"wrote {self.rows} decided change(s) to {self.path} (sha256 {self.sha256[:12]}; audit {self.from_run} → "
               f"{self.to_run}; judges: {', '.join(self.judges) or 'none'})",
               f"use it as `novelty-audit quality PRED --reference {self.path} --report-mismatches` "
               "(it covers the decided changes only)"]
        if self.open:
            out.append(f"{self.open} evidence change(s) not decided yet (not exported)")
        for e in self.excluded:
            out.append(f"left out {e['id']} ({e['judge']}, {e['decision']}): {e['why']}")
        return out


def reference_label(ch: Change, decision: str) -> tuple[str | None, str]:
    """(the reference verdict a decision gives the change's item, or None; why not, when None)."""
    if ch.kind == "review":
        return None, "a review change has no single verdict (label counts)"
    if decision == "unclear":
        return ABSTAIN_LABEL, ""
    label = ch.after if decision == "correct" else ch.before
    if label in _NO_VERDICT:
        side = "after" if decision == "correct" else "before"
        return None, f"{decision} leaves the verdict {side} the change, which is no verdict ({label or 'absent'})"
    return label, ""


def _side(store: Store, label: str, artifacts: str | Path):
    return current_side(artifacts) if label == CURRENT else ledger_side(store, label)


def _ideas_of(ch: Change, texts_before: dict, texts_after: dict) -> list[dict[str, Any]]:
    out = []
    for idea_id, title in zip(ch.ideas, ch.titles):
        after, before = texts_after.get((ch.dataset, idea_id)), texts_before.get((ch.dataset, idea_id))
        entry: dict[str, Any] = {"id": idea_id, "title": title, "text": after if after is not None else before}
        if before is not None and after is not None and before != after:
            entry["text_before"] = before
        out.append(entry)
    return out


def export_adjudications(
    params: str | Path | Params,
    out: str | Path,
    *,
    judge: str | None = None,
    dataset: str | None = None,
    from_run: str | None = None,
    to_run: str | None = None,
    fmt: str | None = None,
) -> AdjudicationExport:
    """Write the decided evidence changes of the audit `from_run` → `to_run` (default: the runs `audit` compares)
    as JSONL rows `{id, verdict, ...evidence}` that `quality --reference` reads. id = `<dataset>/<item>`, or the
    item id with `dataset` (the ids `export verdicts` writes). Two decided changes of one id (two judges) are an
    error unless `judge` picks one."""
    from ..pipeline import load_checked_params

    p = load_checked_params(params) if isinstance(params, (str, Path)) else params
    out = Path(out)
    if fmt not in (None, "jsonl"):
        raise BadInputError(f"--format {fmt}: adjudications are exported as JSONL only (nested evidence does not fit a CSV cell)")
    if out.suffix.lower() not in (".jsonl", ".ndjson"):
        raise BadInputError(f"--out {out}: adjudications are exported as JSONL (nested evidence does not fit a CSV cell)",
                            hint="name the file *.jsonl")
    result = audit_project(p, from_run, to_run).result
    if judge is not None and judge not in result.judges:
        raise BadInputError(f"--judge {judge}: not in the audit {result.from_run} → {result.to_run}",
                            hint=f"judges: {', '.join(result.judges) or 'none'}")
    if dataset is not None and dataset not in result.datasets:
        raise BadInputError(f"--dataset {dataset}: not in the audit {result.from_run} → {result.to_run}",
                            hint=f"datasets: {', '.join(result.datasets) or 'none'}")
    chosen = [c for c in result.changes if c.cause == "evidence" and judge in (None, c.judge) and dataset in (None, c.dataset)]
    decided = [c for c in chosen if c.adjudication is not None]
    store = Store(p.store.root)
    _, texts_before = _ideas(store, _side(store, result.from_run, p.store.artifacts))
    _, texts_after = _ideas(store, _side(store, result.to_run, p.store.artifacts))
    rows: dict[str, dict[str, Any]] = {}
    excluded = []
    for ch in decided:
        adj = ch.adjudication
        assert adj is not None
        rid = ch.pair if dataset is not None else f"{ch.dataset}/{ch.pair}"
        label, why = reference_label(ch, adj.current.decision)
        if label is None:
            excluded.append({"id": rid, "judge": ch.judge, "decision": adj.current.decision, "why": why})
            continue
        if rid in rows:
            raise BadInputError(
                f"id {rid} is decided for judges {rows[rid]['judge']} and {ch.judge}: a reference file holds one label per id",
                hint="export one judge at a time: --judge NAME",
            )
        row: dict[str, Any] = {
            "id": rid, "verdict": label, "dataset": ch.dataset, "judge": ch.judge, "kind": ch.kind, "item": ch.pair,
            "from": ch.before, "to": ch.after, "gold": ch.gold,
            "decision": adj.current.decision, "reason": adj.current.reason, "who": adj.current.who, "when": adj.current.when,
            "adjudication_row": adj.current.row, "change": ch.id, "group": ch.group,
            "audit": {"from": result.from_run, "to": result.to_run},
            "evidence_digests": {"before": ch.evidence_digests[0], "after": ch.evidence_digests[1]},
            "evidence": ch.evidence.public() if ch.evidence is not None else None,
            "ideas": _ideas_of(ch, texts_before, texts_after),
        }
        if ch.kind == "pairwise" and len(ch.ideas) == 2:
            row["idea_0"], row["idea_1"] = ch.ideas
        rows[rid] = row
    data = b"".join(orjson.dumps(rows[k], option=orjson.OPT_SORT_KEYS) + b"\n" for k in sorted(rows))
    if not data:
        raise BadInputError(
            f"no decided evidence change with a reference label in the audit {result.from_run} → {result.to_run}"
            + (f" ({len(excluded)} decided without one)" if excluded else ""),
            hint="decide changes first (novelty-audit review, or novelty-audit adjudicate), "
                 "or pick the audited runs with --from-run/--to-run",
        )
    atomic_write_bytes(out, data)
    return AdjudicationExport(
        path=str(out), rows=len(rows), sha256=digest_bytes(data), from_run=result.from_run, to_run=result.to_run,
        judges=sorted({r["judge"] for r in rows.values()}), open=len(chosen) - len(decided), excluded=excluded,
    )
