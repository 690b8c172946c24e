"""params.yaml `report:` — what the report shows and where it is published.

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.report; living outside
that package keeps every stage's code digest (all import params.py) free of the report code.
"""

from __future__ import annotations

from pydantic import Field

from ._base import Frozen
from ._signals import PinnedFile

__all__ = ["ReportParams"]


class ReportParams(Frozen):
    publish_dir: str = "reports"
    """Where report.html, report.md, plots/ and the (unhashed) latest audit are copied for people and DVC."""
    nearest_pairs: int = Field(default=3, ge=0)
    """Pairs per distance judge and dataset for which the nearest prior-work titles are listed."""
    nearest_titles: int = Field(default=3, ge=1)
    """Nearest prior-work titles shown per idea (the distance judge's evidence titles)."""
    saturation_tie_rate: float = Field(default=0.2, ge=0, le=1)
    """A judge (not a control) that ties on at least this share of a dataset's pairs is flagged as saturated."""
    drift_history: int = Field(default=10, ge=0)
    """Drift-watch checks per judge listed in reports/drift.md (the latest ones; 0 = none)."""
    published: PinnedFile | None = None
    """Published reference results (data/published/reference-results.yaml) and their sha256; read with
    novelty_audit.published.load_published and shown as "published, not rerun". null: none shown."""
