"""params.yaml `audit:` — where people's adjudications of evidence changes live.

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.audit; living outside
that package keeps every stage's code digest (all import params.py) free of the audit code.
"""

from __future__ import annotations

from ._base import Frozen

__all__ = ["AuditParams"]


class AuditParams(Frozen):
    adjudications: str = "data/adjudications.csv"
    """Append-only adjudication file (.csv or .yaml): dataset, judge, pair, from, to, decision, reason, who, when."""
