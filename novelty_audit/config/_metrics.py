"""params.yaml `metrics:` — seeds, interval settings and which judges to compare.

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.metrics; living outside
that package keeps every stage's code digest (all import params.py) free of the metrics code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ._base import Frozen

__all__ = ["MetricsParams"]


class MetricsParams(Frozen):
    """How metrics, their uncertainty and the judge comparisons are computed."""

    seed: int = 20240611
    """Seed of every bootstrap; resamples are drawn per (dataset, table) over ids sorted, so they are paired across judges."""
    bootstrap_resamples: int = Field(10_000, ge=0)
    """Bootstrap resamples per interval; 0 turns bootstrap intervals off (Wilson intervals remain)."""
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    """Coverage of every interval (bootstrap and Wilson)."""
    bootstrap_method: Literal["percentile", "bca"] = "percentile"
    """percentile: vectorised numpy over shared resample weights; bca: scipy.stats.bootstrap BCa where the metric is a
    mean of per-item values over a 0/1 denominator set, percentile elsewhere (the method used is named per row)."""
    compare: Literal["all-pairs", "listed"] = "all-pairs"
    """all-pairs: compare every two judges within a dataset; listed: only `comparisons`."""
    comparisons: list[tuple[str, str]] = Field(default_factory=list)
    """Extra (or, with compare: listed, the only) judge pairs to compare, as [judge_a, judge_b]."""
    prompt_sensitivity: bool = True
    """Group judges that share backend and model but differ in prompt and summarise the spread between prompts."""
    report: str = "reports/metrics"
    """The folder of headline figures for `dvc metrics` (declared in dvc.yaml): one short file per (dataset, judge)
    (novelty_audit/metrics/_headline.py); the full table is artifacts/metrics/metrics.json. sweeps.json is published
    beside the folder (reports/sweeps.json)."""
    novbench_clarity_lm: str | None = None
    """NovBench clarity_fs: the causal LM giving perplexities (`gemma3-270m` = the packaged GGUF model, or a .gguf
    path; needs the gguf extra). null (default: ~3 s per item on 2 busy cores): clarity_fs and clarity are null,
    the reason recorded (docs/design/novbench.md)."""

    @field_validator("comparisons")
    @classmethod
    def _distinct(cls, value: list[tuple[str, str]]) -> list[tuple[str, str]]:
        for a, b in value:
            if a == b:
                raise ValueError(f"comparison [{a}, {b}] compares a judge with itself")
        return value
