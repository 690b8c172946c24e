"""Entry points that read params.yaml: the CLI's `audit`/`adjudicate`, the review page and the report's latest audit."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..artifacts import Store, atomic_write_bytes, write_json
from ..errors import BadInputError, ManifestMismatchError, NoveltyAuditError
from ._adjudicate import append_adjudications, check_field
from ._decisions import DECISIONS_KEY, with_decisions
from ._model import CAUSES, DECISIONS, STATUSES, AuditFilters, AuditResult, Change
from ._render import audit_markdown
from ._runs import audit, audit_sides, current_side, latest_other_run, ledger_side, window
from ._runs import list_runs as _list_runs
from ._tally import decisions_per_judge

if TYPE_CHECKING:  # params.py imports this package for AuditParams: import it lazily
    from ..params import Params

__all__ = ["audit_project", "audit_since_last_run", "AuditReport", "adjudicate", "adjudicate_group", "list_runs",
           "apply_filters", "refresh_latest_audit", "write_latest_audit", "AUDIT_FILES"]

AUDIT_FILES = ("audit.md", "audit.json")
"""The latest audit's files in `report.publish_dir`: written beside the report by the report stage, rewritten by
every decision; outside the report's manifest (they depend on the runs ledger and the adjudication file)."""


class AuditReport(NamedTuple):
    """An audit and its Markdown rendering."""

    result: AuditResult
    markdown: str


def _params(params: str | Path | Params) -> Params:
    from ..pipeline import load_checked_params

    return load_checked_params(params) if isinstance(params, (str, Path)) else params


def apply_filters(result: AuditResult, filters: AuditFilters | None) -> AuditResult:
    """The result with only the changes the filters keep (summary and groups follow; `hidden` counts the rest)."""
    if filters is None or not filters.active():
        return result
    f = filters.active()
    if "cause" in f and f["cause"] not in CAUSES:
        raise BadInputError(f"--cause {f['cause']}: not one of {', '.join(CAUSES)}")
    if "status" in f and f["status"] not in STATUSES:
        raise BadInputError(f"--status {f['status']}: not one of {', '.join(STATUSES)}")
    kept = [c for c in result.changes if filters.keep(c)]
    return result.model_copy(update={"changes": kept, "filters": f, "hidden": len(result.changes) - len(kept)})


def _select(p: Params, from_run: str | None, to_run: str | None, since: str | None, at: str | None) -> AuditResult:
    store = Store(p.store.root)
    if since is not None or at is not None:
        if from_run is not None or to_run is not None:
            raise NoveltyAuditError("--since/--at choose both runs: do not combine them with --from/--to")
        from_run, to_run = window(store, since=since, at=at)
    return audit(store, from_run, to_run, adjudications=p.audit.adjudications, artifacts=p.store.artifacts)


def audit_project(
    params: str | Path | Params = "params.yaml",
    from_run: str | None = None,
    to_run: str | None = None,
    *,
    filters: AuditFilters | None = None,
    since: str | None = None,
    at: str | None = None,
) -> AuditReport:
    """`novelty-audit audit`: audit two runs of this project's ledger (default: the last two distinct runs),
    with its adjudication file. RUN: run id (prefix), git revision, ISO date/time, `7d`-style age, or `current`;
    `since`/`at` pick both runs from a time window (see `window`)."""
    p = _params(params)
    result = apply_filters(_select(p, from_run, to_run, since, at), filters)
    return AuditReport(result, audit_markdown(result))


def list_runs(params: str | Path | Params = "params.yaml") -> list[dict[str, Any]]:
    """The runs ledger, latest first: [{run_id, time, git_revision, revisions, seen, stages, describe}]."""
    return _list_runs(Store(_params(params).store.root))


def audit_since_last_run(params: Params) -> AuditReport | None:
    """The latest ledger run of other content → the current stage outputs; None when there is nothing to compare.

    Whether the current outputs are already recorded does not matter (see `latest_other_run`), so running the
    report again — by `dvc repro`, a flow, or both — writes the same audit.
    """
    store = Store(params.store.root)
    current = current_side(params.store.artifacts)
    if "judge" not in current.manifests:
        return None
    other = latest_other_run(store, params.store.artifacts)
    if other is None:
        return None
    previous = ledger_side(store, other.run_id)
    if "judge" not in previous.manifests:
        return None
    result = audit_sides(store, previous, current, adjudications=params.audit.adjudications)
    return AuditReport(result, audit_markdown(result))


def _row(ch: Change, decision: str, reason: str, who: str, when: str, group: str | None) -> dict[str, str]:
    return {"dataset": ch.dataset, "judge": ch.judge, "pair": ch.pair, "from": str(ch.before), "to": str(ch.after),
            "decision": decision, "reason": reason, "who": who, "when": when, "evidence_before": ch.evidence_digests[0] or "",
            "evidence_after": ch.evidence_digests[1] or "", "group": group or ""}


def _check_decision(decision: str, who: str, reason: str) -> tuple[str, str]:
    """(reason, who) as they will be stored; checked before the (slow) audit so bad input fails at once."""
    if decision not in DECISIONS:
        raise BadInputError(f"decision '{decision}' is not one of {', '.join(DECISIONS)}",
                            hint="--decision on the command line; on the review page a button or the key c, x or u "
                                 "(Enter alone never picks one)")
    if not who.strip():
        raise BadInputError("--who is empty: say who decided")
    return check_field("reason", reason), check_field("who", who.strip())


def adjudicate(
    params: str | Path | Params,
    *,
    dataset: str,
    judge: str,
    pair: str,
    from_verdict: str,
    to_verdict: str,
    decision: str,
    reason: str,
    who: str,
    group: str | None = None,
    from_run: str | None = None,
    to_run: str | None = None,
    since: str | None = None,
    at: str | None = None,
    when: str | None = None,
) -> list[dict[str, str]]:
    """`novelty-audit adjudicate`: append one decision, bound to the change's evidence digests.

    The change must exist in the audit of the same runs `audit` would compare (default: the last two distinct
    runs): dataset, judge and pair known, from → to its verdicts, cause `evidence`; otherwise a
    BadInputError (CLI exit 2) and nothing is written. `group`: an optional group id recorded with the row (it
    must be the change's group). Refreshes reports/audit.* when present. Returns the appended rows."""
    reason, who = _check_decision(decision, who, reason)
    p = _params(params)
    result = _select(p, from_run, to_run, since, at)
    where = f"in the audit {result.from_run} → {result.to_run}"
    of_judge = [c for c in result.changes if c.dataset == dataset and c.judge == judge]
    if dataset not in result.datasets:
        raise BadInputError(f"dataset '{dataset}' is not in the audited runs {result.from_run} → {result.to_run}",
                            hint=f"datasets: {', '.join(result.datasets) or 'none'}")
    if judge not in result.judges:
        raise BadInputError(f"judge '{judge}' is not in the audited runs {result.from_run} → {result.to_run}",
                            hint=f"judges: {', '.join(result.judges) or 'none'}")
    if not any(c.dataset == dataset for c in result.changes):
        raise BadInputError(f"dataset '{dataset}': no change of this dataset {where}", hint="see `novelty-audit audit`")
    if not of_judge:
        raise BadInputError(f"judge '{judge}': no change of this judge on dataset {dataset} {where}", hint="see `novelty-audit audit`")
    of_pair = [c for c in of_judge if c.pair == pair]
    if not of_pair:
        raise BadInputError(f"pair '{pair}': no change of judge {judge} on dataset {dataset} has this pair {where}",
                            hint="see `novelty-audit audit --judge " + judge + "`")
    matching = [c for c in of_pair if str(c.before) == from_verdict and str(c.after) == to_verdict]
    if not matching:
        found = ", ".join(f"{c.before} → {c.after}" for c in of_pair)
        raise BadInputError(f"{dataset}/{judge}/{pair}: the change {where} is {found}, not {from_verdict} → {to_verdict}")
    ch = matching[0]
    if ch.cause != "evidence":
        raise BadInputError(f"{dataset}/{judge}/{pair}: cause {ch.cause}; only evidence changes are adjudicable")
    if group is not None and group != ch.group:
        raise BadInputError(f"{dataset}/{judge}/{pair}: belongs to group {ch.group}, not {group}")
    rows = [_row(ch, decision, reason, who, when or _today(), ch.group if group else None)]
    append_adjudications(p.audit.adjudications, rows)
    refresh_latest_audit(p)
    return rows


def adjudicate_group(
    params: str | Path | Params,
    group_id: str,
    *,
    decision: str,
    reason: str,
    who: str,
    from_run: str | None = None,
    to_run: str | None = None,
    since: str | None = None,
    at: str | None = None,
    when: str | None = None,
) -> list[dict[str, str]]:
    """One row per change of the group (same group id and reason), bound to each change's evidence; one write."""
    reason, who = _check_decision(decision, who, reason)
    p = _params(params)
    result = _select(p, from_run, to_run, since, at)
    members = [c for c in result.changes if c.group == group_id]
    if not members:
        known = ", ".join(g.id for g in result.groups[:10]) or "none"
        raise BadInputError(f"group '{group_id}': no such group in the audit {result.from_run} → {result.to_run}",
                            hint=f"groups: {known}")
    stamp = when or _today()
    rows = [_row(c, decision, reason, who, stamp, group_id) for c in members]
    append_adjudications(p.audit.adjudications, rows)
    refresh_latest_audit(p)
    return rows


def _today() -> str:
    """Now, UTC, to the second: the page shows when each decision was made, and the last row of a day wins."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def refresh_latest_audit(params: Params) -> list[Path]:
    """Rewrite reports/audit.md and audit.json (when the report stage has published them) so they show the new
    decisions, and re-record their sha256 so `verify` stays clean."""
    from ..artifacts import record_published

    publish = Path(params.report.publish_dir)
    paths = [publish / n for n in AUDIT_FILES]
    if not any(p.exists() for p in paths):
        return []
    write_latest_audit(params, publish)
    record_published(paths, artifacts_root=params.store.artifacts, stage="report")
    return paths


def write_latest_audit(params: Params, publish_dir: Path) -> Path:
    """audit.md and audit.json: the previous ledger run → the current stage outputs, with the decisions per judge."""
    publish_dir = Path(publish_dir)
    md_name, json_name = AUDIT_FILES
    try:
        report = audit_since_last_run(params)
    except ManifestMismatchError as exc:
        # The previous run's objects were pruned from the store: say so where the audit would be, and go on;
        # the report itself does not depend on the ledger.
        text = f"# Verdict-change audit\n\nThe audit against the previous run could not be computed: {exc.message}\n"
        atomic_write_bytes(publish_dir / md_name, text.encode("utf-8"))
        write_json(publish_dir / json_name, {"error": exc.message})
        return publish_dir / md_name
    if report is None:
        text = ("# Verdict-change audit\n\nNo earlier run with judge verdicts is in the runs ledger yet: "
                "nothing to compare. The next pipeline run is audited against this one.\n")
        atomic_write_bytes(publish_dir / md_name, text.encode("utf-8"))
        write_json(publish_dir / json_name, None)
        return publish_dir / md_name
    tally = decisions_per_judge(report.result)
    atomic_write_bytes(publish_dir / md_name, with_decisions(report.markdown, tally).encode("utf-8"))
    write_json(publish_dir / json_name, {**report.result.to_json(), DECISIONS_KEY: tally})
    return publish_dir / md_name
