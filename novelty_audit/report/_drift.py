"""The drift watch's history per judge (reports/drift.md, drift.json), written next to the report, outside it.

The drift ledger (`<store.root>/<flows.drift_dir>/runs.jsonl`) is a run fact: it grows with every drift check and
differs between clones. Like the latest audit, its summary is therefore published beside the report on every report
run and never enters the report's identity (docs/design/report.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..artifacts import Store, atomic_write_bytes, write_json
from ..errors import NoveltyAuditError
from ..markdown import md_text
from ._build import DRIFT_FILES

if TYPE_CHECKING:
    from ..params import Params

__all__ = ["drift_history", "write_drift_history"]

_CAUSES = ("spurious", "provider", "config", "evidence", "harness", "dataset")
_NOT_JUDGES = frozenset({"skipped_judges", "subset", "exclusions"})


def drift_history(params: Params) -> dict[str, Any]:
    """{ledger, checks: [{from, to, time, compared, changed: {judge: {cause: n}}}], judges: {judge: [check index…]}}.

    Consecutive runs of the drift ledger, in ledger order (the latest `report.drift_history` checks), each audited
    with the same classification as `novelty-audit audit`.
    """
    from ..audit import audit_sides, ledger_side

    # Where the drift watch keeps its store (novelty_audit.orchestration.drift_paths; not imported, so the report's
    # code digest does not take in the judge backends the orchestration package imports).
    root = Path(params.store.root) / params.flows.drift_dir
    ledger = root / "runs.jsonl"
    out: dict[str, Any] = {"ledger": str(ledger), "checks": [], "errors": []}
    if params.report.drift_history == 0 or not ledger.exists():
        return out
    store = Store(root)
    runs = store.runs()[-(params.report.drift_history + 1):]
    for before, after in zip(runs, runs[1:]):
        check: dict[str, Any] = {"from": before.run_id, "to": after.run_id, "time": after.time}
        try:
            after_side = ledger_side(store, after.run_id)
            result = audit_sides(store, ledger_side(store, before.run_id), after_side, adjudications=params.audit.adjudications)
        except NoveltyAuditError as exc:  # e.g. a pruned drift store: say so for this check and go on
            check["error"] = exc.message
            out["checks"].append(check)
            continue
        changed: dict[str, dict[str, int]] = {}
        for c in result.changes:
            per = changed.setdefault(c.judge, {k: 0 for k in _CAUSES})
            per[c.cause] = per.get(c.cause, 0) + 1
        # The judge manifest's summary has one entry per judge it ran (plus a few bookkeeping keys).
        summary = after_side.manifests["judge"].summary if "judge" in after_side.manifests else {}
        watched = sorted((set(summary) - _NOT_JUDGES) | set(changed))
        check.update(compared=result.compared, judges=watched, changed=dict(sorted(changed.items())))
        out["checks"].append(check)
    return out


def _anchor(judge: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", judge)


def _markdown(history: dict[str, Any], judges: list[str]) -> str:
    lines = ["# Judge drift history", ""]
    checks = history["checks"]
    if not checks:
        lines += [f"No two drift-watch runs in {md_text(history['ledger'])} yet: nothing to compare. The drift watch "
                  "(`flows.drift_watch`) re-asks the enabled API judges on a canary subset with the call cache bypassed.", ""]
    else:
        lines += [f"{len(checks)} drift check(s) from {md_text(history['ledger'])}: verdicts that changed between consecutive "
                  "drift runs, by cause (spurious = same inputs and provider model, different verdict).", ""]
    for j in judges:
        lines += [f'<a id="{_anchor(j)}"></a>', f"## {md_text(j)}", ""]
        mine = [c for c in checks if "error" in c or j in c.get("judges", [])]
        if not mine:
            lines += ["Not re-asked by any drift check listed here.", ""]
            continue
        lines += ["| check (to run) | time | verdicts compared (all judges) | changed | by cause |", "|---|---|---:|---:|---|"]
        for c in mine:
            if "error" in c:
                lines.append(f"| {md_text(c['to'][:12])} | {md_text(c['time'])} | — | — | not computed: {md_text(c['error'])} |")
                continue
            counts = c["changed"].get(j, {})
            n = sum(counts.values())
            causes = ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "none"
            lines.append(f"| {md_text(c['to'][:12])} | {md_text(c['time'])} | {c['compared']} | {n} | {md_text(causes)} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_drift_history(params: Params, publish_dir: Path, judges: list[str]) -> Path:
    """drift.md (one section per judge, anchored by name as the report's judge cards link it) and drift.json."""
    publish_dir = Path(publish_dir)
    history = drift_history(params)
    md_name, json_name = DRIFT_FILES
    atomic_write_bytes(publish_dir / md_name, _markdown(history, sorted(judges)).encode("utf-8"))
    write_json(publish_dir / json_name, history)
    return publish_dir / md_name
