"""Failed calls in the metrics: truncated answers counted on their own, errors broken down by reason."""

from __future__ import annotations

import polars as pl
import pytest
from metrics_tables import pair_row, table

from novelty_audit import judges
from novelty_audit.judges import _base
from novelty_audit.errors import BadInputError
from novelty_audit.metrics import MetricsParams, compute_metrics
from novelty_audit.metrics import _views

FAST = MetricsParams(bootstrap_resamples=0)


def failing_judge() -> pl.DataFrame:
    return table(
        [
            pair_row("p1", "a", n_error=2, error_reasons=["connection refused", "HTTP 500"]),
            pair_row("p2", "none", n_error=3, error_reasons=["connection refused"] * 3),
            pair_row("p3", "none", n_truncated=2, votes_forward=["truncated", "truncated"]),
            pair_row("p4", "b", gold="b", n_error=1),  # a table without the reason (older run, imported file)
        ]
    )


def test_errors_are_counted_by_reason_and_the_reasons_sum_to_n_error():
    t = compute_metrics(failing_judge(), params=FAST)
    d = t.as_json()["ds"]["j"]
    assert d["n_error"] == 6
    assert d["n_error_by_reason"] == {"HTTP 500": 1, "connection refused": 4, "unspecified": 1}
    assert sum(d["n_error_by_reason"].values()) == d["n_error"]
    assert t.error_reasons.filter(pl.col("reason") == "connection refused")["calls"].to_list() == [4]
    assert set(t.error_reasons["table"]) == {"pairwise"}


def test_truncated_calls_have_their_own_count_and_their_pairs_stay_in_every_denominator():
    d = compute_metrics(failing_judge(), params=FAST).as_json()["ds"]["j"]
    assert (d["n_truncated"], d["n_invalid"]) == (2, 0)
    assert d["n_pairs"] == 4 and d["strict_accuracy"] == 0.5 and d["verdict_rate"] == 0.5
    assert d["coverage"] == 1.0  # every pair was asked: failed calls are covered, never uncovered


def test_more_reasons_than_failed_calls_is_an_error_naming_the_pair():
    bad = table([pair_row("p1", "a", n_error=1, error_reasons=["timeout", "timeout"])])
    with pytest.raises(BadInputError, match="pair p1, field error_reasons"):
        compute_metrics(bad, params=FAST)


def test_pointwise_failed_calls_are_counted_by_outcome_and_reason():
    points = pl.DataFrame(
        [
            {"dataset": "ds", "judge": "j", "idea_id": "i1", "gold_label": "POSITIVE", "predicted": "POSITIVE",
             "n_invalid": 1, "n_refusal": 0, "n_error": 1, "n_truncated": 0, "error_reasons": ["timeout"]},
            {"dataset": "ds", "judge": "j", "idea_id": "i2", "gold_label": "NEGATIVE", "predicted": "none",
             "n_invalid": 0, "n_refusal": 1, "n_error": 0, "n_truncated": 2, "error_reasons": []},
        ],
        schema={k: judges.POINTWISE_SCHEMA[k] for k in (
            "dataset", "judge", "idea_id", "gold_label", "predicted", "n_invalid", "n_refusal", "n_error", "n_truncated", "error_reasons")},
    )
    d = compute_metrics(table([pair_row("p1", "a")]), points, params=FAST).as_json()["ds"]["j"]
    got = {k: d[f"pointwise_n_{k}"] for k in ("invalid", "refusal", "error", "truncated")}
    assert got == {"invalid": 1, "refusal": 1, "error": 1, "truncated": 2}
    assert d["pointwise_n_error_by_reason"] == {"timeout": 1} and d["n_error_by_reason"] == {}


def test_latency_is_a_run_fact_and_no_metric():
    d = compute_metrics(table([pair_row("p1", "a")]), params=FAST).as_json()["ds"]["j"]
    assert not [k for k in d if "latency" in k]


def test_the_metrics_name_an_unrecorded_reason_as_the_judges_do():
    assert _views.UNSPECIFIED_REASON == _base.UNSPECIFIED_REASON
