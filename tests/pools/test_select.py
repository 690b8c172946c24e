"""Each selection rule, on a small hand-made set of papers: who is in D+ / D-, and why the rest are out."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from novelty_audit.config import TitleBlocklist
from novelty_audit.errors import ConfigError
from novelty_audit.pools import EVIDENCE_SCHEMA, PoolRules, PoolsParams, area_percentiles, select_pools

AREA = "reinforcement learning"
OTHER = "other topics in machine learning (i.e., none of the above)"


def paper(pid: str, *, area=AREA, decision="accepted", rating=7.0, contribution=3.5, n=3, pos=3, neg=0, pure_pos=None, pure_neg=None, title=None):
    return {
        "paper_id": pid, "title": title or f"Paper {pid}", "area": area, "decision_class": decision,
        "mean_rating": rating, "mean_contribution": contribution, "n_reviews": n,
        "reviews_positive": pos, "reviews_negative": neg,
        "reviews_pure_positive": pos if pure_pos is None else pure_pos,
        "reviews_pure_negative": neg if pure_neg is None else pure_neg,
    }  # fmt: skip


def good_pos(pid: str, **kw):
    return paper(pid, **kw)


def good_neg(pid: str, **kw):
    base = dict(decision="rejected", rating=2.0, contribution=1.5, pos=0, neg=3)
    return paper(pid, **{**base, **kw})


# A loose percentile so that the threshold rules, not the percentile, decide unless a test says otherwise.
LOOSE = PoolsParams(percentile={"top": 0, "bottom": 100})


def run(rows, pp: PoolsParams = LOOSE):
    ev = pl.DataFrame(rows, schema=EVIDENCE_SCHEMA)
    return select_pools(ev, pp)


def reasons(excl: pl.DataFrame, pid: str, pool: str) -> list[str]:
    return excl.filter((pl.col("paper_id") == pid) & (pl.col("pool") == pool))["rule"].to_list()


def test_papers_meeting_every_rule_enter_their_pool() -> None:
    pools, excl, _ = run([good_pos("a"), good_neg("b"), good_neg("c", decision="withdrawn")])
    assert dict(zip(pools["paper_id"], pools["pool"])) == {"a": "D+", "b": "D-", "c": "D-"}
    assert excl.height == 0


@pytest.mark.parametrize(
    ("row", "rule"),
    [
        (good_pos("x", decision="rejected"), "decision"),
        (good_pos("x", rating=5.99), "rating-threshold"),
        (good_pos("x", contribution=2.99), "contribution-threshold"),
        (good_pos("x", pos=0, pure_pos=0), "signal-present"),
        (good_pos("x", neg=1, pure_pos=2), "signal-opposite"),
        (good_pos("x", pos=1, pure_pos=1, n=2), "signal-majority"),  # exactly half is not more than half
    ],
)
def test_each_d_plus_rule_excludes_and_is_recorded(row, rule: str) -> None:
    pools, excl, _ = run([row])
    assert pools.height == 0
    assert reasons(excl, "x", "D+")[0] == rule
    assert excl.filter((pl.col("pool") == "D+") & pl.col("first"))["rule"].to_list() == [rule]


@pytest.mark.parametrize(
    ("row", "rule"),
    [
        (good_neg("x", decision="accepted"), "decision"),
        (good_neg("x", decision="unknown"), "decision"),
        (good_neg("x", rating=3.51), "rating-threshold"),
        (good_neg("x", contribution=2.01), "contribution-threshold"),
        (good_neg("x", neg=0, pure_neg=0), "signal-present"),
        (good_neg("x", pos=1, pure_neg=2), "signal-opposite"),
        (good_neg("x", neg=1, pure_neg=1, n=3), "signal-majority"),
    ],
)
def test_each_d_minus_rule_excludes_and_is_recorded(row, rule: str) -> None:
    pools, excl, _ = run([row])
    assert pools.height == 0
    assert reasons(excl, "x", "D-")[0] == rule


def test_boundaries_are_inclusive() -> None:
    pools, _, _ = run([good_pos("a", rating=6.0, contribution=3.0), good_neg("b", rating=3.5, contribution=2.0)])
    assert sorted(pools["pool"].to_list()) == ["D+", "D-"]


@pytest.mark.parametrize(
    ("row", "rule", "pp"),
    [
        (good_pos("x", area=OTHER), "area-dropped", LOOSE),
        (good_pos("x", area=None), "area-missing", LOOSE),
        (good_pos("x", title="A Blocked  Title"), "title-blocklist", LOOSE.model_copy(update={"title_blocklist": TitleBlocklist(titles=["a blocked title"])})),
        (good_pos("x", rating=None), "rating-missing", LOOSE),
        (good_neg("x", contribution=None), "contribution-missing", LOOSE),
    ],
)
def test_global_rules_exclude_from_both_pools(row, rule: str, pp: PoolsParams) -> None:
    pools, excl, _ = run([row], pp)
    assert pools.height == 0
    assert reasons(excl, "x", "both") == [rule]


def test_percentiles_are_numpy_linear_inclusive_per_area() -> None:
    ratings = [2.0, 2.5, 3.0, 6.0, 6.5, 8.0]
    rows = [good_pos(f"p{i}", rating=r) if r >= 6 else good_neg(f"p{i}", rating=r) for i, r in enumerate(ratings)]
    rows.append(good_pos("g1", area="generative models", rating=7.0))
    pp = PoolsParams()
    pct = area_percentiles(pl.DataFrame(rows, schema=EVIDENCE_SCHEMA), pp)
    lo, hi = np.percentile(ratings, [10, 90], method="linear")
    assert pct[AREA] == (6, float(lo), float(hi))
    assert pct["generative models"] == (1, 7.0, 7.0)  # a single paper is its own top and bottom
    pools, excl, _ = run(rows, pp)
    assert set(pools.filter(pl.col("pool") == "D+")["paper_id"]) == {"p5", "g1"}  # 8.0 >= P90 = 7.25
    assert set(pools.filter(pl.col("pool") == "D-")["paper_id"]) == {"p0"}  # 2.0 <= P10 = 2.25
    assert reasons(excl, "p4", "D+")[0] == "rating-percentile"


def test_percentiles_ignore_dropped_areas_but_count_blocklisted_titles() -> None:
    rows = [good_pos("a", area=OTHER), good_pos("b", rating=9.0, title="Blocked"), good_pos("c", rating=7.0)]
    pp = PoolsParams(title_blocklist=["blocked"])
    pct = area_percentiles(pl.DataFrame(rows, schema=EVIDENCE_SCHEMA), pp)
    assert set(pct) == {AREA} and pct[AREA][0] == 2


def test_overlapping_pool_rules_are_a_config_error() -> None:
    pp = LOOSE.model_copy(update={"negative": PoolRules(decisions=["accepted"], rating=10, contribution=10, min_reviews_with_signal=0, max_reviews_with_opposite=9, pure_share_above=-1)})
    with pytest.raises(ConfigError):
        run([good_pos("a")], pp)
