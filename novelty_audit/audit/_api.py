"""Entry points that read params.yaml: the CLI's `audit` and the report's latest-audit section."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..artifacts import Store
from ._adjudicate import append_adjudication
from ._model import AuditResult
from ._render import audit_markdown
from ._runs import audit, audit_sides, current_side, latest_other_run, ledger_side

if TYPE_CHECKING:  # params.py imports this package for AuditParams: import it lazily
    from ..params import Params

__all__ = ["audit_project", "audit_since_last_run", "AuditReport", "adjudicate"]


class AuditReport(NamedTuple):
    """An audit and its Markdown rendering."""

    result: AuditResult
    markdown: str


def audit_project(params: str | Path | Params = "params.yaml", from_run: str | None = None, to_run: str | None = None) -> AuditReport:
    """`novelty-audit audit`: audit two runs of this project's ledger, with its adjudication file."""
    from ..params import load_params

    p = load_params(params) if isinstance(params, (str, Path)) else params
    result = audit(
        Store(p.store.root), from_run, to_run, adjudications=p.audit.adjudications, artifacts=p.store.artifacts
    )
    return AuditReport(result, audit_markdown(result))


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
    when: str | None = None,
) -> Path:
    """`novelty-audit adjudicate`: append one decision to the adjudication file named in params.yaml.

    `when` defaults to today's UTC date. Earlier rows are never rewritten; the new row supersedes
    any earlier one for the same change.
    """
    from datetime import datetime, timezone

    from ..params import load_params

    p = load_params(params) if isinstance(params, (str, Path)) else params
    row = {"dataset": dataset, "judge": judge, "pair": pair, "from": from_verdict, "to": to_verdict, "decision": decision,
           "reason": reason, "who": who, "when": when or datetime.now(timezone.utc).date().isoformat()}
    return append_adjudication(p.audit.adjudications, row)

