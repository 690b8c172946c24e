"""params.yaml `report:` — what the report shows and where it is published.

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.report; living outside
that package keeps every stage's code digest (all import params.py) free of the report code.
"""

from __future__ import annotations

from pydantic import Field

from ._base import Frozen

__all__ = ["ReportParams"]


class ReportParams(Frozen):
    publish_dir: str = "reports"
    """Where report.html, report.md, plots/ and the (unhashed) latest audit are copied for people and DVC."""
    nearest_pairs: int = Field(default=3, ge=0)
    """Pairs per distance judge and dataset for which the nearest prior-work titles are listed."""
    nearest_titles: int = Field(default=3, ge=1)
    """Nearest prior-work titles shown per idea (the distance judge's evidence titles)."""
