"""Pairwise metrics: how ties and `none` enter each accuracy, coverage, failure counts and order effects."""

from __future__ import annotations

import pytest
from metrics_tables import pair_row, table

from novelty_audit.errors import BadInputError
from novelty_audit.metrics import METRICS, pairwise_view


def value(name: str, df) -> float:
    est = METRICS.get(name).fn(pairwise_view(df))
    return None if est is None else est.value


def test_strict_accuracy_counts_ties_and_none_as_wrong_and_keeps_them_in_the_denominator(hand_table):
    # correct: p1, p5; wrong: p2; tie: p3; none: p4
    assert value("strict_accuracy", hand_table) == pytest.approx(2 / 5)


def test_soft_accuracy_gives_half_credit_to_ties_and_none_stays_wrong(hand_table):
    assert value("soft_accuracy", hand_table) == pytest.approx(2.5 / 5)


def test_accuracy_without_ties_leaves_ties_and_none_out_of_the_denominator(hand_table):
    assert value("accuracy_without_ties", hand_table) == pytest.approx(2 / 3)


def test_tie_rate_and_verdict_rate_are_shares_of_all_pairs(hand_table):
    assert value("tie_rate", hand_table) == pytest.approx(1 / 5)
    assert value("verdict_rate", hand_table) == pytest.approx(4 / 5)  # a tie is a valid verdict; none is not
    assert value("coverage", hand_table) == 1.0  # every pair was asked, even the one without a verdict


def test_failure_counts_are_summed_over_pairs(hand_table):
    assert value("n_pairs", hand_table) == 5
    assert value("n_no_verdict", hand_table) == 1
    assert value("n_invalid", hand_table) == 1
    assert value("n_refusal", hand_table) == 1
    assert value("n_error", hand_table) == 1


def test_order_flip_rate_uses_pairs_with_a_valid_verdict_in_both_orders(hand_table):
    # p1 same, p2 and p3 differ; p4 (none in both) and p5 (reverse not run) are left out
    assert value("n_order_pairs", hand_table) == 3
    assert value("order_flip_rate", hand_table) == pytest.approx(2 / 3)


def test_first_position_rate_counts_votes_for_whichever_idea_was_shown_first(hand_table):
    # forward shows idea_0 first, reverse shows idea_1 first; ties and failed calls are not votes for an idea
    # p1: a,a fwd (2 first) + a rev (0) | p2: b fwd (0) + a rev (0) | p3: a fwd (1) + b rev (1) | p5: b,b fwd (0)
    assert value("first_position_rate", hand_table) == pytest.approx(4 / 9)


def test_undefined_metrics_are_omitted_rather_than_reported_as_zero():
    only_ties = table([pair_row("p1", "tie"), pair_row("p2", "tie")])
    assert value("accuracy_without_ties", only_ties) is None
    assert value("order_flip_rate", only_ties) is None
    assert value("strict_accuracy", only_ties) == 0.0


def test_a_verdict_that_names_neither_idea_is_rejected_naming_the_pair_and_field():
    bad = table([pair_row("p1", "a")]).with_columns(verdict=__import__("polars").lit("slot-A"))
    with pytest.raises(BadInputError, match=r"pair p1, field verdict"):
        pairwise_view(bad)


def test_duplicate_rows_for_one_pair_are_rejected():
    with pytest.raises(BadInputError, match="duplicated"):
        pairwise_view(table([pair_row("p1", "a"), pair_row("p1", "b")]))


def test_every_metric_is_registered_once_with_a_direction_and_a_definition():
    for spec in METRICS:
        assert spec.direction in ("higher", "lower", "target", "none")
        assert spec.description
        assert set(spec.uncertainty) <= {"bootstrap", "wilson"}
    assert METRICS.get("first_position_rate").target == 0.5
