"""The report: renders metrics.json and the metrics tables into HTML and Markdown (never recomputes)."""

from ..config import ReportParams
from ._build import AUDIT_FILES, Report, build_report, write_report
from ._publish import publish_report, write_latest_audit
from ._sources import METRICS_TABLES, ReportSources, load_sources

__all__ = [
    "ReportParams",
    "AUDIT_FILES",
    "Report",
    "build_report",
    "write_report",
    "publish_report",
    "write_latest_audit",
    "METRICS_TABLES",
    "ReportSources",
    "load_sources",
]
