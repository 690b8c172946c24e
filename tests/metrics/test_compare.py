"""Comparisons: verdicts aligned by id (never by row order or slot), ties as a third verdict, McNemar."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from novelty_audit.errors import BadInputError
from novelty_audit.metrics import compare_verdicts, mcnemar_exact_p, verdict_map

GOLD = {"p1": "A", "p2": "A", "p3": "A", "p4": "A"}


def test_alignment_is_by_id_whatever_the_row_order():
    before = verdict_map([("p1", "A"), ("p2", "A"), ("p3", "A"), ("p4", "B")], where="before")
    after = verdict_map([("p4", "A"), ("p3", "A"), ("p2", "B"), ("p1", "A")], where="after")
    c = compare_verdicts(before, after, GOLD)
    assert (c.compared, c.flips, c.flip_rate) == (4, 2, 0.5)
    assert c.flipped_ids == ["p2", "p4"]
    assert (c.accuracy_before, c.accuracy_after) == (0.75, 0.75)
    assert c.directions == {"correct->wrong": 1, "wrong->correct": 1}


def test_a_tie_is_a_third_verdict_so_idea_to_tie_is_a_flip():
    c = compare_verdicts({"p1": "A", "p2": "tie"}, {"p1": "tie", "p2": "tie"}, {"p1": "A", "p2": "A"})
    assert c.flips == 1
    assert c.directions == {"correct->tie": 1}


def test_without_gold_directions_name_ideas_ties_and_none():
    c = compare_verdicts({"p1": "A", "p2": "A"}, {"p1": "B", "p2": "none"})
    assert c.directions == {"idea->idea": 1, "idea->none": 1}
    assert c.accuracy_before is None and c.mcnemar_p is None


def test_ids_on_one_side_only_are_reported_not_dropped():
    c = compare_verdicts({"p1": "A", "p2": "A"}, {"p2": "A", "p3": "B"})
    assert c.compared == 1
    assert c.only_before == ["p1"]
    assert c.only_after == ["p3"]


def test_duplicate_ids_are_an_error_naming_the_id():
    with pytest.raises(BadInputError, match="'p1' appears more than once"):
        verdict_map([("p1", "A"), ("p2", "A"), ("p1", "B")], where="before.csv")


def test_exact_mcnemar_on_a_hand_case():
    # 1 pair right only before, 5 right only after: two-sided binomial on 6 discordant pairs
    expected = 2 * binom.cdf(1, 6, 0.5)
    assert expected == pytest.approx(14 / 64)
    assert mcnemar_exact_p(1, 5) == pytest.approx(expected)
    gold = {f"p{i}": "A" for i in range(8)}
    before = {**gold, "p1": "B", "p2": "B", "p3": "B", "p4": "B", "p5": "B"}  # p0 right only before ...
    after = {**gold, "p0": "B"}
    c = compare_verdicts(before, after, gold)
    assert c.mcnemar_p == pytest.approx(expected)


def test_paired_bootstrap_interval_of_the_accuracy_difference_is_seeded():
    gold = {f"p{i}": "A" for i in range(30)}
    before = {k: ("A" if i % 2 else "B") for i, k in enumerate(gold)}
    after = {k: ("A" if i % 5 else "B") for i, k in enumerate(gold)}
    a = compare_verdicts(before, after, gold, resamples=2000, seed=3)
    b = compare_verdicts(before, after, gold, resamples=2000, seed=3)
    assert a.difference_ci == b.difference_ci
    assert a.difference_ci.low < a.accuracy_difference < a.difference_ci.high
