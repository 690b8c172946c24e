"""Candidate win rates are counts over all pairs (a tie or no verdict is not a win), with the floor set beside, and
across a sweep the spread of the win rate and the label-free disagreement between its configurations."""

from __future__ import annotations

import polars as pl
import pytest

from novelty_audit.metrics import candidate_metrics


def _rows(ds: str, judge: str, verdicts: list[str | None]) -> list[dict]:
    return [{"dataset": ds, "judge": judge, "pair_id": f"p{i}", "gold_idea_id": f"c{i}", "verdict": v} for i, v in enumerate(verdicts)]


V = pl.DataFrame(
    _rows("s", "j", ["c0", "c1", "tie", "h3", None]) + _rows("s", "s/k=2", ["c0", "h1", "h2", "h3", "c4"])
    + _rows("s", "ctrl", ["tie"] * 5) + _rows("s-vs-low", "j", ["c0", "c1", "c2", "h3", "c4"]),
    schema={"dataset": pl.String, "judge": pl.String, "pair_id": pl.String, "gold_idea_id": pl.String, "verdict": pl.String},
)  # fmt: skip


def test_win_rate_tie_rate_and_coverage_are_counts_over_all_pairs() -> None:
    f = candidate_metrics(V, {"s": "candidates", "s-vs-low": "candidates-low"}, confidence=0.95)["s"]["judges"]["j"]
    assert (f["wins"], f["ties"], f["no_verdict"], f["n_pairs"]) == (2, 1, 1, 5)
    assert f["candidate_win_rate"] == pytest.approx(0.4) and f["tie_rate"] == pytest.approx(0.2) and f["coverage"] == pytest.approx(0.8)
    assert f["candidate_win_rate_low"] == pytest.approx(0.8) and f["n_pairs_low"] == 5
    assert 0 < f["candidate_win_rate_wilson_low"] < 0.4 < f["candidate_win_rate_wilson_high"] < 1


def test_a_sweep_reports_the_spread_and_the_disagreement_between_its_configurations() -> None:
    got = candidate_metrics(V, {"s": "candidates"}, confidence=0.95, sweeps={"k": ["j", "s/k=2"]}, controls={"ctrl"})["s"]
    sweep = got["sweeps"]["k"]
    assert (sweep["candidate_win_rate_min"], sweep["candidate_win_rate_max"]) == (pytest.approx(0.4), pytest.approx(0.4))
    assert sweep["disagreement_mean"] == pytest.approx(3 / 5)  # p1, p2, p4 differ; p4 none vs c4 counts as differing
    assert got["all_judges"]["configurations"] == ["j", "s/k=2"]  # controls left out of the spread


def test_configurations_with_no_common_pair_have_no_disagreement_not_zero() -> None:
    lone = pl.concat([V.filter(pl.col("judge") == "j"), V.filter(pl.col("judge") == "s/k=2").with_columns(pl.col("pair_id") + "x")])
    sweep = candidate_metrics(lone, {"s": "candidates"}, confidence=0.95, sweeps={"k": ["j", "s/k=2"]})["s"]["sweeps"]["k"]
    assert sweep["disagreement_mean"] is None and sweep["compared_pairs_of_configurations"] == 0


def test_export_table_candidates_lists_each_set_and_judge_and_the_metrics_table_leaves_them_out() -> None:
    from novelty_audit.metrics import candidate_metrics_json, fmt_value, paper_table, render_table

    figures = candidate_metrics(V, {"s": "candidates", "s-vs-low": "candidates-low"}, confidence=0.95)
    t = paper_table("candidates", figures, run_id="r1", pins={"s": "ab" * 32}, intervals=True)
    assert [(r.group, r.label) for r in t.rows] == [("s", "ctrl"), ("s", "j"), ("s", "s/k=2")]
    assert [c.name for c in t.columns][:2] == ["n_pairs", "candidate_win_rate"]
    assert fmt_value(t.rows[1].records["candidate_win_rate"], "candidate_win_rate", True) == "0.400 [0.118, 0.769]"
    assert "s (ababababab" in t.caption
    assert render_table(t, "latex").count("\\\\") >= 4 and render_table(t, "csv").splitlines()[0].startswith("set,judge,n_pairs")
    with pytest.raises(Exception, match="nothing to tabulate"):
        paper_table("metrics", candidate_metrics_json(figures), run_id=None, pins={})
