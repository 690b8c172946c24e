"""The verdict-change audit: why each verdict changed between two runs, and people's adjudications."""

from ..config import AuditParams
from ._adjudicate import ADJUDICATION_FIELDS, append_adjudication, index_adjudications, load_adjudications
from ._api import AuditReport, adjudicate, audit_project, audit_since_last_run
from ._classify import KEY, classify_changes, config_knobs
from ._model import CAUSES, Adjudication, AdjudicationRecord, AuditResult, Change, Diff
from ._render import audit_markdown
from ._runs import CURRENT, RunSide, audit, audit_sides, current_run_id, current_side, latest_other_run, ledger_side

__all__ = [
    "ADJUDICATION_FIELDS",
    "append_adjudication",
    "index_adjudications",
    "load_adjudications",
    "AuditReport",
    "adjudicate",
    "audit_project",
    "audit_since_last_run",
    "KEY",
    "classify_changes",
    "config_knobs",
    "CAUSES",
    "Adjudication",
    "AdjudicationRecord",
    "AuditResult",
    "Change",
    "Diff",
    "AuditParams",
    "audit_markdown",
    "CURRENT",
    "RunSide",
    "audit",
    "audit_sides",
    "current_run_id",
    "current_side",
    "latest_other_run",
    "ledger_side",
]
