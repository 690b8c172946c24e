"""Typed metric results and their uncertainty.

A metric returns an `Estimate`: its point value plus enough per-item structure to recompute it under
bootstrap weights. Resampling is expressed as a weight matrix `W` (resamples × items, multinomial
counts), so one `W` per (dataset, table) is shared by every judge and metric: the bootstrap is paired
across judges, and linear estimates resample with one matrix product instead of a Python loop.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..artifacts import digest_obj

__all__ = [
    "Estimate",
    "Count",
    "Total",
    "Ratio",
    "LinearEstimate",
    "AUROCEstimate",
    "Interval",
    "WILSON_METHOD",
    "bootstrap_weights",
    "Resampler",
    "seeded_rng",
    "percentile_interval",
    "percentile_intervals",
    "wilson_interval",
    "bca_interval",
    "holm_adjusted",
]

WILSON_METHOD = "wilson (statsmodels proportion_confint)"


def seeded_rng(seed: int, *stream: str) -> np.random.Generator:
    """A Generator for one named stream (e.g. dataset, table) of a seed: independent of call order."""
    key = int(digest_obj(list(stream))[:8], 16)
    return np.random.default_rng(np.random.SeedSequence([seed, key]))


def bootstrap_weights(n_items: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Multinomial resample counts, shape (resamples, n_items): row b says how often each item is drawn.

    float32 on purpose: counts and every per-item part (0, ½, 1, vote counts) are small multiples of ½,
    so float32 sums are exact while the matrix products move half the bytes.
    """
    idx = rng.integers(0, n_items, size=(resamples, n_items))
    offsets = (np.arange(resamples) * n_items)[:, None]
    counts = np.bincount((idx + offsets).ravel(), minlength=resamples * n_items)
    return counts.reshape(resamples, n_items).astype(np.float32)


class Resampler:
    """Bootstrap weights of one (dataset, table), shared by every judge and metric on it.

    Column subsets are memoised because every judge's AUROC takes the same positive/negative columns.
    """

    def __init__(self, weights: np.ndarray):
        self.weights = weights
        self._columns: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def resamples(self) -> int:
        return int(self.weights.shape[0])

    def columns(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The weight columns `idx` (contiguous) and their row sums (float64)."""
        key = np.asarray(idx, dtype=np.int64).tobytes()
        if key not in self._columns:
            cols = np.ascontiguousarray(self.weights[:, idx])
            self._columns[key] = (cols, cols.sum(axis=1, dtype=np.float64))
        return self._columns[key]


@dataclass(frozen=True)
class Interval:
    """A confidence interval and the method that produced it."""

    low: float
    high: float
    method: str


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(finite, [tail, 1.0 - tail])
    return (float(lo), float(hi))


def percentile_intervals(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds (numpy's default linear interpolation) of each row of `samples` (statistics × resamples).

    Rows are statistics so each one's resamples are contiguous; `samples` is partitioned in place (the
    callers own it) because a copy of it costs as much as the selection. Resamples where a ratio's
    denominator was zero (NaN) are left out, row by row.
    """
    k, b = samples.shape
    lo = np.full(k, np.nan)
    hi = np.full(k, np.nan)
    if k == 0 or b == 0:
        return lo, hi
    tail = (1.0 - confidence) / 2.0
    finite = np.isfinite(samples).all(axis=1)
    rows = samples if finite.all() else samples[finite]
    if rows.shape[0]:
        h = (b - 1) * np.array([tail, 1.0 - tail])
        at = np.floor(h).astype(np.int64)
        nxt = np.minimum(at + 1, b - 1)
        rows.partition(sorted({*at.tolist(), *nxt.tolist()}), axis=1)
        q = rows[:, at] + (h - at) * (rows[:, nxt] - rows[:, at])
        lo[finite], hi[finite] = q[:, 0], q[:, 1]
    for j in np.flatnonzero(~finite):
        lo[j], hi[j] = percentile_interval(samples[j], confidence)
    return lo, hi


def wilson_interval(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    from statsmodels.stats.proportion import proportion_confint

    if trials == 0:
        return (math.nan, math.nan)
    lo, hi = proportion_confint(successes, trials, alpha=1.0 - confidence, method="wilson")
    return (float(lo), float(hi))


def holm_adjusted(pvalues: list[float]) -> np.ndarray:
    """Holm step-down adjusted p-values: what statsmodels' `multipletests(p, method="holm")[1]` returns, number for
    number (same sort, same products, same running maximum, capped at 1). That function ends with a full
    `gc.collect()`: 0.8 s per call on a loaded machine with a paper-scale run in memory, once per dataset and sweep."""
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p)
    adjusted = np.maximum.accumulate(p[order] * np.arange(p.size, 0, -1))
    adjusted[adjusted > 1] = 1
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


def bca_interval(values: np.ndarray, resamples: int, confidence: float, rng: np.random.Generator) -> tuple[float, float]:
    """BCa interval of a mean via scipy.stats.bootstrap; constant data has the degenerate interval [v, v]."""
    from scipy.stats import bootstrap

    if values.size == 0:
        return (math.nan, math.nan)
    if np.all(values == values[0]):
        # scipy returns NaN with a warning here; every resample of constant data has the same mean.
        return (float(values[0]), float(values[0]))
    res = bootstrap(
        (values,), np.mean, n_resamples=resamples, confidence_level=confidence, method="BCa", vectorized=True, rng=rng
    )
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


class Estimate(ABC):
    """A metric's value and how to recompute it under bootstrap weights."""

    @property
    @abstractmethod
    def value(self) -> float: ...

    def resample(self, resampler: Resampler) -> np.ndarray | None:
        """The statistic under each resample (float64, one per row of the weights); None without a bootstrap."""
        return None

    def wilson(self, confidence: float) -> tuple[float, float] | None:
        """Wilson bounds when the estimate is a proportion of independent items; else None."""
        return None

    def bca_sample(self) -> np.ndarray | None:
        """The per-item values whose mean is the estimate, when BCa over them fits; else None."""
        return None


@dataclass(frozen=True)
class Count(Estimate):
    """A count (no uncertainty)."""

    n: int

    @property
    def value(self) -> float:
        return float(self.n)


@dataclass(frozen=True)
class Total(Estimate):
    """A sum of per-item amounts such as cost (no uncertainty)."""

    total: float

    @property
    def value(self) -> float:
        return float(self.total)


@dataclass(frozen=True, eq=False)
class LinearEstimate(Estimate):
    """A statistic of column sums of per-item parts: value = combine(parts.sum(0)); resampled as combine(W @ parts).

    `combine` maps an array whose last axis is the parts to the statistic (so it works for the point value
    and for all resamples at once).
    """

    parts: np.ndarray
    combine: Callable[[np.ndarray], np.ndarray]

    @property
    def value(self) -> float:
        with np.errstate(invalid="ignore", divide="ignore"):
            return float(self.combine(self.parts.sum(axis=0)))

    def resample(self, resampler: Resampler) -> np.ndarray:
        sums = (resampler.weights @ self.parts.astype(np.float32)).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(self.combine(sums), dtype=np.float64)


def _ratio(sums: np.ndarray) -> np.ndarray:
    return sums[..., 0] / sums[..., 1]


class Ratio(LinearEstimate):
    """sum(num) / sum(den) over items; a proportion when num and den are 0/1 with num ≤ den."""

    def __init__(self, num: np.ndarray, den: np.ndarray):
        num = np.asarray(num, dtype=np.float64)
        den = np.asarray(den, dtype=np.float64)
        object.__setattr__(self, "parts", np.column_stack([num, den]))
        object.__setattr__(self, "combine", _ratio)

    @property
    def num(self) -> np.ndarray:
        return self.parts[:, 0]

    @property
    def den(self) -> np.ndarray:
        return self.parts[:, 1]

    def _binary(self) -> bool:
        n, d = self.num, self.den
        return bool(np.all((n == 0) | (n == 1)) and np.all((d == 0) | (d == 1)) and np.all(n <= d))

    def wilson(self, confidence: float) -> tuple[float, float] | None:
        if not self._binary():
            return None
        return wilson_interval(int(self.num.sum()), int(self.den.sum()), confidence)

    def bca_sample(self) -> np.ndarray | None:
        if not np.all((self.den == 0) | (self.den == 1)):
            return None
        return self.num[self.den == 1]


@dataclass(frozen=True, eq=False)
class AUROCEstimate(Estimate):
    """Area under the ROC curve of `scores` for `positive` items; ties count ½ (Mann–Whitney).

    Items with a NaN score (not scored, or not covered) are left out. The point value is sklearn's
    roc_auc_score; resamples use the weighted Mann–Whitney form as a bilinear product of the positive
    and negative weights, so all resamples cost one matrix product.
    """

    positive: np.ndarray
    scores: np.ndarray

    @property
    def _scored(self) -> np.ndarray:
        return np.isfinite(self.scores)

    @property
    def value(self) -> float:
        from sklearn.metrics import roc_auc_score

        m = self._scored
        pos = self.positive[m].astype(bool)
        if pos.all() or (~pos).all():
            return math.nan
        return float(roc_auc_score(pos, self.scores[m]))

    def resample(self, resampler: Resampler) -> np.ndarray:
        # num_b = Σ_{i pos, j neg} w_bi · K_ij · w_bj with K = 1[s_i > s_j] + ½·1[s_i = s_j]: one matrix
        # product per judge over its scored items.
        scored = self._scored
        pos_idx = np.flatnonzero(scored & (self.positive == 1))
        neg_idx = np.flatnonzero(scored & (self.positive != 1))
        sp, sn = self.scores[pos_idx], self.scores[neg_idx]
        k = (sp[:, None] > sn[None, :]).astype(np.float32) + np.float32(0.5) * (sp[:, None] == sn[None, :])
        (w_pos, pos_sum), (w_neg, neg_sum) = resampler.columns(pos_idx), resampler.columns(neg_idx)
        num = np.einsum("ij,ij->i", w_pos @ k, w_neg, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return num / (pos_sum * neg_sum)


