"""sweeps_json on hand-made verdict tables: pairing on items both judged, Holm across a sweep, spreads in a grid."""

from __future__ import annotations

import polars as pl
import pytest

from novelty_audit.config import MetricsParams, SweepVariant
from novelty_audit.metrics import sweeps_json

PARAMS = MetricsParams(bootstrap_resamples=200)


def table(verdicts: dict[str, list[str | None]]) -> pl.DataFrame:
    """judge → verdict per pair p0, p1, …: 'a' (the gold idea), 'b', 'tie' or None (no row for that pair)."""
    rows = []
    for judge, vs in verdicts.items():
        for i, v in enumerate(vs):
            if v is None:
                continue
            idea = {"a": f"a{i}", "b": f"b{i}", "tie": "tie"}[v]
            rows.append({"dataset": "d", "judge": judge, "pair_id": f"p{i}", "idea_0": f"a{i}", "idea_1": f"b{i}",
                         "gold_idea_id": f"a{i}", "verdict": idea, "verdict_forward": idea, "verdict_reverse": idea})
    return pl.DataFrame(rows)


def variant(knobs: dict) -> SweepVariant:
    return SweepVariant(sweep="s", base="base", knobs=knobs)


def test_a_variant_is_compared_with_its_base_only_on_items_both_judged():
    v = table({"base": ["a", "a", "b", "tie", "a"], "s/prompt=x": ["a", "b", "b", "a", None]})
    out = sweeps_json(v, {"s/prompt=x": variant({"prompt": "x"})}, PARAMS)["d"]["s"]["s/prompt=x"]
    assert out["n_items"] == 4
    assert out["strict_accuracy_base"] == pytest.approx(2 / 4) and out["strict_accuracy"] == pytest.approx(2 / 4)
    assert out["disagreement_rate"] == pytest.approx(2 / 4)  # p1 and p3 differ; p4 is not shared
    assert out["tie_rate_base"] == pytest.approx(1 / 4) and out["delta_tie_rate"] == pytest.approx(-1 / 4)
    assert out["mcnemar_p"] == pytest.approx(1.0)  # one discordant pair each way


def test_holm_adjusts_across_the_sweeps_variants_and_a_variant_without_verdicts_has_no_items():
    v = table({"base": ["b"] * 8, "s/votes=1": ["a"] * 8, "s/votes=5": ["a"] * 7 + ["b"]})
    info = {"s/votes=1": variant({"votes": 1}), "s/votes=5": variant({"votes": 5}), "s/votes=9": variant({"votes": 9})}
    out = sweeps_json(v, info, PARAMS)["d"]["s"]
    p1, p5 = out["s/votes=1"]["mcnemar_p"], out["s/votes=5"]["mcnemar_p"]
    assert p1 == pytest.approx(2 * 0.5**8) and p5 == pytest.approx(2 * 0.5**7)
    assert out["s/votes=1"]["mcnemar_p_holm"] == pytest.approx(2 * p1)
    assert out["s/votes=5"]["mcnemar_p_holm"] == pytest.approx(max(2 * p1, p5))
    assert out["s/votes=9"] == {"base": "base", "compared_on": {"variant": "d", "base": "d"}, "paired": True, "n_items": 0}


def test_grid_spread_holds_the_other_knobs_fixed_and_takes_the_largest():
    v = table({
        "base": ["a", "a", "a", "a"],
        "s/model=m1,prompt=x": ["a", "a", "a", "a"], "s/model=m2,prompt=x": ["b", "b", "a", "a"],  # model spread 0.5
        "s/model=m1,prompt=y": ["a", "b", "a", "a"], "s/model=m2,prompt=y": ["b", "b", "b", "a"],  # model spread 0.5
    })  # prompt spread: m1 0.25, m2 0.25
    info = {vid: variant(dict(kv.split("=") for kv in vid.split("/")[1].split(","))) for vid in v["judge"].unique().to_list() if "/" in vid}
    s = sweeps_json(v, info, PARAMS)["d"]["s"]["_sweep"]
    assert s["model_spread"] == pytest.approx(0.5) and s["prompt_spread"] == pytest.approx(0.25)
    assert s["model_spread_n_variants"] == 2 and s["prompt_spread_n_items"] == 4


def test_the_disagreement_matrix_pairs_every_two_judges_of_a_sweep_on_the_items_both_judged():
    v = table({"base": ["a", "a", "b", "tie"], "s/prompt=x": ["a", "b", "b", "a"], "s/prompt=y": ["b", "b", None, "tie"]})
    info = {"s/prompt=x": variant({"prompt": "x"}), "s/prompt=y": variant({"prompt": "y"})}
    out = sweeps_json(v, info, PARAMS)["d"]["s"]
    m, n = out["_sweep"]["disagreement_matrix"], out["_sweep"]["disagreement_matrix_n_items"]
    assert sorted(m) == ["base", "s/prompt=x", "s/prompt=y"] and all(a not in m[a] for a in m)  # no diagonal
    assert m["base"]["s/prompt=x"] == m["s/prompt=x"]["base"] == out["s/prompt=x"]["disagreement_rate"] == pytest.approx(2 / 4)
    assert m["s/prompt=x"]["s/prompt=y"] == pytest.approx(2 / 3) and n["s/prompt=y"]["s/prompt=x"] == 3  # p2 not shared
    assert m["base"]["s/prompt=y"] == pytest.approx(2 / 3)


def test_with_several_bases_each_variant_is_compared_with_its_own_base():
    v = table({"a": ["a", "a", "a", "a"], "b": ["b", "b", "b", "b"],
               "s/a/votes=1": ["a", "a", "a", "b"], "s/b/votes=1": ["b", "b", "a", "a"]})
    info = {"s/a/votes=1": SweepVariant(sweep="s", base="a", knobs={"votes": 1}),
            "s/b/votes=1": SweepVariant(sweep="s", base="b", knobs={"votes": 1})}
    out = sweeps_json(v, info, PARAMS)["d"]["s"]
    assert out["s/a/votes=1"]["base"] == "a" and out["s/a/votes=1"]["disagreement_rate"] == pytest.approx(1 / 4)
    assert out["s/b/votes=1"]["base"] == "b" and out["s/b/votes=1"]["disagreement_rate"] == pytest.approx(2 / 4)
    assert out["s/b/votes=1"]["strict_accuracy_base"] == 0 and out["s/a/votes=1"]["strict_accuracy_base"] == 1
    assert {"a", "b"} <= set(out["_sweep"]["disagreement_matrix"])  # every base of the sweep is in the matrix
