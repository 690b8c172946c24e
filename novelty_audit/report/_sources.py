"""What the report reads: the metrics stage's outputs, the judge tables, the pinned ideas and the published
reference results.

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

__all__ = ["ReportSources", "load_sources", "load_published_results", "published_rows", "METRICS_TABLES", "PUBLISHED_FIELDS"]

METRICS_TABLES = ("metrics", "comparisons", "flip_matrix", "prompt_sensitivity")
"""Metrics-stage tables the report renders, read from `<metrics dir>/<name>.parquet` when present."""

PUBLISHED_FIELDS = ("source", "url", "dataset", "judge", "metric", "value", "low", "high", "approximate", "prompt", "note")
"""Fields of one published reference result (novelty_audit.published.PublishedResult): a share of 1 as `value`, or a
published range `low`–`high`."""


@dataclass(frozen=True)
class ReportSources:
    metrics: dict[str, dict[str, dict[str, Any]]]
    """metrics.json: {dataset: {judge: {metric: value, metric_ci_low, metric_ci_high, metric_wilson_low, …}}}."""
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    """Metrics tables by name (see METRICS_TABLES); absent ones are named as absent in the report."""
    judges: pl.DataFrame | None = None
    """judges.parquet: judge, backend, config_digest, config."""
    verdicts: pl.DataFrame | None = None
    """verdicts.parquet, for the evidence of distance judges and per-verdict cost."""
    titles: dict[tuple[str, str], str] = field(default_factory=dict)
    """(dataset, idea_id) → title, from the pin stage."""
    generated: frozenset[tuple[str, str]] = frozenset()
    """(dataset, idea_id) of generated ideas (pin `source == "generated"`), labelled as generated in the report."""
    published: tuple[dict[str, Any], ...] = ()
    """Published reference results (PUBLISHED_FIELDS), shown beside measured rows, never merged into them."""
    reviews: pl.DataFrame | None = None
    """artifacts/judge/reviews.parquet (NovBench generators), passed to the NovBench section when present."""
    novbench_published: tuple[dict[str, Any], ...] = ()
    """The NovBench study's published rows (novelty_audit.novbench.published_rows), for the NovBench section."""
    novbench_notes: dict[str, Any] | None = None
    """artifacts/metrics/novbench.json: why a NovBench metric is null, which relevance substitute was used."""
    sweeps: dict[str, Any] = field(default_factory=dict)
    """artifacts/metrics/sweeps.json: each judge.sweeps variant against its base (`{}` without sweeps)."""
    candidates: dict[str, Any] = field(default_factory=dict)
    """artifacts/metrics/candidates.json: candidate sets' win rates (`{}` without candidate sets)."""


def _maybe(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.exists() else None


def published_rows(results: list[Any]) -> tuple[dict[str, Any], ...]:
    """Published results (pydantic models or mappings) as plain dicts of PUBLISHED_FIELDS, in file order."""
    out = []
    for r in results:
        d = r.model_dump() if hasattr(r, "model_dump") else dict(r)
        out.append({k: d.get(k) for k in PUBLISHED_FIELDS})
    return tuple(out)


def load_published_results(params: Any) -> tuple[Path | None, tuple[dict[str, Any], ...]]:
    """The published reference file named by params.yaml `report.published` ({path, sha256}), checked against its pin
    by novelty_audit.published.load_published; (None, ()) when none is configured."""
    spec = getattr(params.report, "published", None)
    if spec is None:
        return None, ()
    from ..published import load_published

    path = spec["path"] if isinstance(spec, dict) else spec.path
    sha256 = spec["sha256"] if isinstance(spec, dict) else spec.sha256
    return Path(path), published_rows(load_published(path, sha256))


def load_sources(
    metrics_dir: Path,
    judge_dir: Path | None = None,
    pin_dir: Path | None = None,
    *,
    published: list[Any] | tuple[Any, ...] = (),
    novbench_published: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (),
) -> ReportSources:
    """Read the report's inputs from the upstream stage output directories (`published`: already loaded and checked)."""
    metrics_dir = Path(metrics_dir)
    mj = metrics_dir / "metrics.json"
    if not mj.exists():
        raise ManifestMismatchError(f"{mj}: not found; the report renders the metrics stage's metrics.json",
                                    hint="run the metrics stage first (dvc repro metrics)")
    tables = {name: df for name in METRICS_TABLES if (df := _maybe(metrics_dir / f"{name}.parquet")) is not None}
    titles: dict[tuple[str, str], str] = {}
    generated: set[tuple[str, str]] = set()
    if pin_dir is not None and Path(pin_dir).exists():
        for p in sorted(Path(pin_dir).glob("*/ideas.parquet")):
            df = pl.read_parquet(p)
            has_source = "source" in df.columns
            for r in df.iter_rows(named=True):
                titles[(r["dataset"], r["idea_id"])] = r["title"]
                if has_source and r["source"] == "generated":
                    generated.add((r["dataset"], r["idea_id"]))
    return ReportSources(
        metrics=read_json(mj),
        tables=tables,
        judges=_maybe(Path(judge_dir) / "judges.parquet") if judge_dir else None,
        verdicts=_maybe(Path(judge_dir) / "verdicts.parquet") if judge_dir else None,
        titles=titles,
        generated=frozenset(generated),
        published=published_rows(list(published)),
        reviews=_maybe(Path(judge_dir) / "reviews.parquet") if judge_dir else None,
        novbench_published=tuple(dict(r) for r in novbench_published),
        novbench_notes=read_json(metrics_dir / "novbench.json") if (metrics_dir / "novbench.json").exists() else None,
        sweeps=read_json(metrics_dir / "sweeps.json") if (metrics_dir / "sweeps.json").exists() else {},
        candidates=read_json(metrics_dir / "candidates.json") if (metrics_dir / "candidates.json").exists() else {},
    )
