"""Uncertainty: Wilson bounds, and bootstrap intervals that are reproducible by seed and blind to row order."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from metrics_tables import pair_row, table

from novelty_audit.metrics import (
    MetricsParams,
    Ratio,
    Resampler,
    bootstrap_weights,
    compute_metrics,
    holm_adjusted,
    seeded_rng,
    wilson_interval,
)


def test_wilson_interval_matches_the_textbook_value_for_8_of_10():
    lo, hi = wilson_interval(8, 10, 0.95)
    assert lo == pytest.approx(0.4902, abs=1e-4)
    assert hi == pytest.approx(0.9433, abs=1e-4)


def test_wilson_interval_follows_the_closed_form():
    k, n, z = 37, 154, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(k, n, 0.95) == pytest.approx((centre - half, centre + half), abs=1e-12)


def test_bootstrap_weights_are_multinomial_counts_of_the_items():
    w = bootstrap_weights(7, 500, seeded_rng(1, "x"))
    assert w.shape == (500, 7)
    assert np.all(w.sum(axis=1) == 7)


def test_a_ratio_resampled_with_unit_weights_gives_its_point_value():
    r = Ratio(np.array([1, 0, 1, 0.0]), np.array([1, 1, 1, 0.0]))
    assert r.value == pytest.approx(2 / 3)
    assert r.resample(Resampler(np.ones((3, 4), dtype=np.float32))) == pytest.approx([2 / 3] * 3)


def _rows(n: int = 40) -> list[dict]:
    def verdict(i: int) -> str:
        return "a" if i % 3 else ("tie" if i % 2 else "b")

    return [pair_row(f"p{i:02d}", verdict(i), votes_forward=[verdict(i), "a"]) for i in range(n)]


def _metrics(df: pl.DataFrame, **kw) -> pl.DataFrame:
    return compute_metrics(df, params=MetricsParams(bootstrap_resamples=2000, **kw)).metrics


def test_bootstrap_intervals_are_reproducible_by_seed():
    a, b = _metrics(table(_rows()), seed=7), _metrics(table(_rows()), seed=7)
    assert a.equals(b)
    c = _metrics(table(_rows()), seed=8)
    assert not a.select("ci_low", "ci_high").equals(c.select("ci_low", "ci_high"))


def test_bootstrap_intervals_do_not_depend_on_row_order():
    rows = _rows()
    forward = _metrics(table(rows))
    shuffled = _metrics(table([rows[i] for i in np.random.default_rng(0).permutation(len(rows))]))
    assert forward.equals(shuffled)


def test_intervals_bracket_the_value_and_name_their_method():
    m = _metrics(table(_rows())).filter(pl.col("metric") == "strict_accuracy").row(0, named=True)
    assert m["ci_low"] <= m["value"] <= m["ci_high"]
    assert m["wilson_low"] <= m["value"] <= m["wilson_high"]
    assert m["ci_method"].startswith("bootstrap percentile (2000 resamples, seed")


def test_bca_is_used_for_means_over_items_and_percentile_for_other_ratios():
    m = _metrics(table(_rows()), bootstrap_method="bca")
    method = dict(zip(m["metric"], m["ci_method"]))
    assert method["strict_accuracy"].startswith("bootstrap BCa (scipy")
    assert method["soft_accuracy"].startswith("bootstrap BCa (scipy")
    # votes per pair are a ratio of two sums, not a mean over pairs
    assert method["first_position_rate"].startswith("bootstrap percentile")
    row = m.filter(pl.col("metric") == "strict_accuracy").row(0, named=True)
    assert row["ci_low"] < row["value"] < row["ci_high"]


def test_zero_resamples_turn_bootstrap_off_but_keep_wilson():
    m = compute_metrics(table(_rows()), params=MetricsParams(bootstrap_resamples=0)).metrics
    row = m.filter(pl.col("metric") == "strict_accuracy").row(0, named=True)
    assert row["ci_low"] is None and row["ci_method"] is None
    assert row["wilson_low"] is not None


def test_batched_percentiles_equal_numpy_quantile_row_by_row_and_skip_nan_resamples():
    from novelty_audit.metrics import percentile_intervals

    x = np.random.default_rng(2).random((6, 1001))
    x[4, 10] = np.nan  # a resample whose denominator was zero
    want = np.array([np.quantile(r[np.isfinite(r)], [0.025, 0.975]) for r in x])
    lo, hi = percentile_intervals(x.copy(), 0.95)
    assert lo == pytest.approx(want[:, 0]) and hi == pytest.approx(want[:, 1])


def test_holm_adjustment_equals_statsmodels_number_for_number():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(7)
    cases = [[0.01, 0.04, 0.03, 0.2], [0.5], [1.0, 1.0, 0.9], [0.02, 0.02, 0.02, 0.001], list(rng.random(40) ** 3)]
    for p in cases:
        assert holm_adjusted(p).tolist() == multipletests(p, method="holm")[1].tolist()
