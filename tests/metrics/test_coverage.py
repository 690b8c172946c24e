"""Coverage: a judge asked about only some pairs (an imported sample) is read as strict accuracy over every
pair *and* as accuracy on the pairs it covered; a dataset it never saw gets no entry at all."""

from __future__ import annotations

import polars as pl
import pytest
from metrics_tables import pair_row, table

from novelty_audit.config import MetricsParams
from novelty_audit.metrics import compute_metrics

FAST = MetricsParams(bootstrap_resamples=200, seed=1)


def uncovered(pair: str, judge: str, dataset: str = "ds") -> dict:
    """A pair the judge was never asked about: verdict none, zero calls of any outcome."""
    return pair_row(pair, "none", judge=judge, dataset=dataset, forward=None, n_valid=0)


def partial_judge() -> pl.DataFrame:
    """Ten pairs; `sample` covers four (three right, one wrong); `full` answers all ten, six right."""
    rows = [pair_row(f"p{k}", "a", judge="full") for k in range(6)]
    rows += [pair_row(f"p{k}", "b", judge="full") for k in range(6, 10)]
    rows += [pair_row("p0", "a", judge="sample"), pair_row("p1", "a", judge="sample"),
             pair_row("p2", "a", judge="sample"), pair_row("p3", "b", judge="sample")]
    rows += [uncovered(f"p{k}", "sample") for k in range(4, 10)]
    return table(rows)


def test_partial_judge_gets_coverage_and_accuracy_on_covered_beside_strict_accuracy():
    d = compute_metrics(partial_judge(), params=FAST).as_json()["ds"]["sample"]
    assert (d["n_pairs"], d["covered"]) == (10, 4)
    assert d["coverage"] == pytest.approx(0.4)
    assert d["accuracy_on_covered"] == pytest.approx(3 / 4)
    assert d["strict_accuracy"] == pytest.approx(3 / 10)  # uncovered pairs stay wrong in the strict reading
    for key in ("accuracy_on_covered", "coverage"):
        assert d[f"{key}_ci_low"] <= d[key] <= d[f"{key}_ci_high"]
        assert d[f"{key}_wilson_low"] < d[key] < d[f"{key}_wilson_high"]


def test_a_judge_that_was_asked_everything_covers_everything_even_its_failed_pairs():
    rows = [pair_row("p0", "a", judge="j"), pair_row("p1", "none", judge="j", n_valid=0, n_refusal=3)]
    d = compute_metrics(table(rows), params=FAST).as_json()["ds"]["j"]
    assert (d["covered"], d["coverage"], d["accuracy_on_covered"], d["verdict_rate"]) == (2, 1.0, 0.5, 0.5)


def test_a_judge_covering_none_of_a_dataset_has_no_entry_there():
    rows = [pair_row("p0", "a", judge="sample", dataset="seen"), pair_row("p0", "a", judge="full", dataset="seen")]
    rows += [uncovered("q0", "sample", "unseen"), uncovered("q1", "sample", "unseen")]
    rows += [pair_row("q0", "a", judge="full", dataset="unseen"), pair_row("q1", "b", judge="full", dataset="unseen")]
    t = compute_metrics(table(rows), params=FAST)
    doc = t.as_json()
    assert set(doc["seen"]) == {"full", "sample"}
    assert set(doc["unseen"]) == {"full"}
    assert t.comparisons.filter(pl.col("dataset") == "unseen").is_empty()
    assert t.pairs.filter((pl.col("dataset") == "unseen") & (pl.col("judge") == "sample")).is_empty()


def test_comparisons_with_a_partial_judge_use_only_the_pairs_it_covered():
    t = compute_metrics(partial_judge(), params=FAST)
    (c,) = t.comparisons.to_dicts()
    assert c["compared"] == 4  # not 10: an uncovered pair has no verdict that could flip
    assert c["flips"] == 1  # p3: sample says b, full says a
    pairs = t.pairs.filter(pl.col("judge") == "sample")
    assert pairs.height == 10 and pairs["covered"].sum() == 4


def test_tables_without_call_counts_count_every_row_as_covered():
    df = table([pair_row("p0", "a"), pair_row("p1", "none")]).drop("n_valid", "n_invalid", "n_refusal", "n_error", "n_truncated")
    d = compute_metrics(df, params=FAST).as_json()["ds"]["j"]
    assert (d["covered"], d["coverage"], d["accuracy_on_covered"]) == (2, 1.0, 0.5)


def test_the_flip_matrix_compares_a_partial_judge_with_itself_over_the_pairs_it_covered():
    fm = compute_metrics(partial_judge(), params=FAST).flip_matrix
    diag = {r["judge_a"]: r["compared"] for r in fm.iter_rows(named=True) if r["judge_a"] == r["judge_b"]}
    assert diag == {"full": 10, "sample": 4}  # not 10 for `sample`: six pairs it was never asked about
