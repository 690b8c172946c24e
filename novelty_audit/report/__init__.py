"""The report: renders metrics.json and the metrics tables into HTML and Markdown (never recomputes)."""

from ..audit import AUDIT_FILES, write_latest_audit  # the latest audit is published beside the report
from ..config import ReportParams
from ._build import CONTROL_BACKENDS, DRIFT_FILES, Report, build_report, write_report
from ._drift import drift_history, write_drift_history
from ._publish import publish_report
from ._sources import METRICS_TABLES, PUBLISHED_FIELDS, ReportSources, load_published_results, load_sources

__all__ = [
    "ReportParams",
    "AUDIT_FILES",
    "CONTROL_BACKENDS",
    "DRIFT_FILES",
    "Report",
    "build_report",
    "write_report",
    "drift_history",
    "write_drift_history",
    "publish_report",
    "write_latest_audit",
    "METRICS_TABLES",
    "PUBLISHED_FIELDS",
    "ReportSources",
    "load_published_results",
    "load_sources",
]
