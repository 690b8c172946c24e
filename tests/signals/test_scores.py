"""Extractor scores: detection counts, polarity accuracy and the documented recovery matching."""

from __future__ import annotations

import polars as pl

from novelty_audit.signals import RecoveryParams, detection_scores, match_signal, polarity_scores, recovery_scores


def test_detection_counts_any_polarity_as_detected() -> None:
    verdict = {"a": "positive", "b": "negative", "c": None, "x": "positive", "y": None}
    s = detection_scores(["a", "b", "c"], ["x", "y"], verdict.get)
    assert (s["tp"], s["fn"], s["fp"], s["tn"]) == (2, 1, 1, 1)
    assert s["precision"] == 2 / 3 and s["recall"] == 2 / 3 and abs(s["f1"] - 2 / 3) < 1e-12


def test_polarity_separates_wrong_from_missed() -> None:
    verdict = {"p1": "positive", "p2": None, "n1": "positive", "n2": "negative"}
    s = polarity_scores([("p1", "positive"), ("p2", "positive"), ("n1", "negative"), ("n2", "negative")], verdict.get)
    assert (s["correct"], s["wrong"], s["missed"]) == (2, 1, 1)
    assert s["accuracy"] == 0.5 and s["accuracy_on_detected"] == 2 / 3
    assert s["positive"]["missed"] == 1 and s["negative"]["wrong"] == 1


def test_matching_is_exact_containment_or_similarity() -> None:
    rp = RecoveryParams(min_similarity=0.8, min_words=2)
    assert match_signal("Limited novelty.", "**Limited  novelty.**", rp) == "exact"
    two = "Limited novelty in mechanism. The main algorithmic move is to initialize the prompt."
    assert match_signal(two, "Limited novelty in mechanism.", rp) == "containment"
    assert match_signal("Limited novelty, very similar to ensembling methods.", "Limited novelty, very similar to ensembling method", rp) == "containment"
    assert match_signal("The approach is novel and well motivated.", "The approach is novel and well-motivated!", rp) == "similarity"
    assert match_signal("novelty.", "The novelty is limited.", rp) is None  # one word is too short to contain
    assert match_signal("The approach is novel.", "The compute cost is not reported.", rp) is None


def test_recovery_reports_recovered_and_added_per_paper() -> None:
    papers = pl.DataFrame({"paper_id": ["i-1"], "title": ["T"]})
    snippets = pl.DataFrame(
        {
            "snippet_id": ["s1", "s2", "s3"],
            "paper_id": ["i-1"] * 3,
            "extractor": ["rules-1"] * 3,
            "text": ["Limited novelty in mechanism.", "The idea is novel.", "This is incremental."],
            "polarity": ["negative", "positive", "negative"],
        }
    )
    recorded = {"i-1": [("Limited novelty in mechanism. The main move is X.", "negative"), ("The idea is novel.", "negative"), ("Not found anywhere here.", "negative")]}
    scores, rows = recovery_scores(papers, snippets, recorded, "rules-1", RecoveryParams())
    assert (scores["recorded"], scores["recovered"], scores["recovered_same_polarity"], scores["added"]) == (3, 2, 1, 1)
    assert scores["per_paper"]["i-1"] == {"title": "T", "recorded": 3, "recovered": 2, "recovered_same_polarity": 1, "added": 1}
    added = rows.filter(pl.col("kind") == "added")
    assert added["text"].to_list() == ["This is incremental."]
