"""Metrics: every metric is computed here and nowhere else.

A metric is one function from a (dataset, judge) slice of a verdict table to a typed `Estimate`,
registered once in `METRICS` with its direction and uncertainty method (`_definitions.py`).
Comparisons between judges, runs or files align verdicts by id (`compare_verdicts`).
"""

from ._compare import KINDS, AlignedVerdicts, Comparison, align_verdicts, compare_aligned, compare_verdicts, mcnemar_exact_p, verdict_map
from ._candidates import CANDIDATE_DEFINITIONS, CANDIDATE_KINDS, candidate_metrics, candidate_metrics_json
from ._compute import BY_REASON, MetricsTables, compute_metrics, metrics_json, prompt_groups
from ._estimates import (
    WILSON_METHOD,
    AUROCEstimate,
    Count,
    Total,
    Estimate,
    Interval,
    LinearEstimate,
    Ratio,
    bca_interval,
    bootstrap_weights,
    holm_adjusted,
    percentile_interval,
    percentile_intervals,
    Resampler,
    seeded_rng,
    wilson_interval,
)
from ._probe import PROBE_DEFINITIONS, PROBE_PAIR_SCHEMA, ProbeMetrics, probe_metrics
from ._headline import HEADLINE_KEYS, headline_rows, publish_headline
from ._files import ExportResult, FlipsReport, QualityReport, export_gold, export_verdicts, flips_report, quality_report, read_verdict_file
from ..config import MetricsParams
from ._registry import METRICS, MetricSpec, metric
from ._sweeps import SPREAD_KNOBS, sweeps_json
from ._tables import LATEX_FITS, TABLE_FORMATS, TABLE_KINDS, PaperTable, fmt_value, paper_table, render_table, table_columns
from ._views import PairwiseView, PointwiseView, pairwise_view, pointwise_view

__all__ = [
    "CANDIDATE_DEFINITIONS",
    "CANDIDATE_KINDS",
    "LATEX_FITS",
    "candidate_metrics",
    "candidate_metrics_json",
    "HEADLINE_KEYS",
    "headline_rows",
    "publish_headline",
    "TABLE_FORMATS",
    "TABLE_KINDS",
    "PaperTable",
    "fmt_value",
    "paper_table",
    "render_table",
    "table_columns",
    "SPREAD_KNOBS",
    "sweeps_json",
    "KINDS",
    "AlignedVerdicts",
    "align_verdicts",
    "compare_aligned",
    "Comparison",
    "compare_verdicts",
    "mcnemar_exact_p",
    "verdict_map",
    "BY_REASON",
    "MetricsTables",
    "compute_metrics",
    "metrics_json",
    "prompt_groups",
    "WILSON_METHOD",
    "AUROCEstimate",
    "Count",
    "Total",
    "Estimate",
    "Interval",
    "LinearEstimate",
    "Ratio",
    "bca_interval",
    "bootstrap_weights",
    "holm_adjusted",
    "percentile_interval",
    "percentile_intervals",
    "Resampler",
    "seeded_rng",
    "wilson_interval",
    "PROBE_DEFINITIONS",
    "PROBE_PAIR_SCHEMA",
    "ProbeMetrics",
    "probe_metrics",
    "ExportResult",
    "export_gold",
    "export_verdicts",
    "FlipsReport",
    "QualityReport",
    "flips_report",
    "quality_report",
    "read_verdict_file",
    "MetricsParams",
    "METRICS",
    "MetricSpec",
    "metric",
    "PairwiseView",
    "PointwiseView",
    "pairwise_view",
    "pointwise_view",
]
