"""What the report reads: the metrics stage's outputs, the judge tables and the idea titles.

Everything here is a hashed input of the report stage. Metric values come from metrics.json
and the metrics tables only; the report formats them and never recomputes one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ..artifacts import read_json
from ..errors import ManifestMismatchError

__all__ = ["ReportSources", "load_sources", "METRICS_TABLES"]

METRICS_TABLES = ("metrics", "comparisons", "flip_matrix", "prompt_sensitivity")
"""Metrics-stage tables the report renders, read from `<metrics dir>/<name>.parquet` when present."""


@dataclass(frozen=True)
class ReportSources:
    metrics: dict[str, dict[str, dict[str, Any]]]
    """metrics.json: {dataset: {judge: {metric: value, metric_ci_low, metric_ci_high, metric_wilson_low, …}}}."""
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    """Metrics tables by name (see METRICS_TABLES); absent ones are named as absent in the report."""
    judges: pl.DataFrame | None = None
    """judges.parquet: judge, backend, config_digest, config."""
    verdicts: pl.DataFrame | None = None
    """verdicts.parquet, for the evidence titles of distance judges and per-verdict cost."""
    titles: dict[tuple[str, str], str] = field(default_factory=dict)
    """(dataset, idea_id) → title, from the pin stage."""


def _maybe(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.exists() else None


def load_sources(metrics_dir: Path, judge_dir: Path | None = None, pin_dir: Path | None = None) -> ReportSources:
    """Read the report's inputs from the upstream stage output directories."""
    metrics_dir = Path(metrics_dir)
    mj = metrics_dir / "metrics.json"
    if not mj.exists():
        raise ManifestMismatchError(f"{mj}: not found; the report renders the metrics stage's metrics.json",
                                    hint="run the metrics stage first (dvc repro metrics)")
    tables = {name: df for name in METRICS_TABLES if (df := _maybe(metrics_dir / f"{name}.parquet")) is not None}
    titles: dict[tuple[str, str], str] = {}
    if pin_dir is not None and Path(pin_dir).exists():
        for p in sorted(Path(pin_dir).glob("*/ideas.parquet")):
            for r in pl.read_parquet(p, columns=["dataset", "idea_id", "title"]).iter_rows(named=True):
                titles[(r["dataset"], r["idea_id"])] = r["title"]
    return ReportSources(
        metrics=read_json(mj),
        tables=tables,
        judges=_maybe(Path(judge_dir) / "judges.parquet") if judge_dir else None,
        verdicts=_maybe(Path(judge_dir) / "verdicts.parquet") if judge_dir else None,
        titles=titles,
    )
