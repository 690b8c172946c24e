"""Check the embedded benchmark's metadata against the published selection rules.

What the benchmark records per idea — mean rating, mean contribution, area, title, and the
positive / negative signal sentences pooled over that paper's reviews — decides these rules:
- D+ (POSITIVE, human): `rating-threshold`, `contribution-threshold`, `signal-present` (at least
  one positive sentence, so at least one review with a positive signal), `signal-opposite` (no
  negative sentence, so no review with a negative one), `area-dropped`, `title-blocklist`;
- D- (NEGATIVE, human): the mirror rules;
- pairs: `pair-within-area` (both ideas belong to the pair's area).
What it does not record is listed as not checkable, never counted as passed:
`rating-percentile` (needs every submission's mean rating in the area, the benchmark holds only
the selected papers), `decision` (not recorded), `signal-majority` (signals are pooled over
reviews: neither the number of reviews nor which review said what is recorded). Generated
negatives have no reviews, so the human D- rules do not apply to them (listed as such).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ..config import PoolsParams
from ._select import norm_key
from ._strip import STRIP_CHECK_VERSION, check_results

__all__ = ["NOT_CHECKABLE", "check_benchmark"]

NOT_CHECKABLE = [
    {"rule": "rating-percentile", "reason": "needs the mean rating of every submission in the area; the benchmark holds only the selected papers"},
    {"rule": "decision", "reason": "the benchmark does not record acceptance decisions"},
    {"rule": "signal-majority", "reason": "signals are pooled over reviews: the number of reviews and which review gave which signal are not recorded"},
]


def _violations(row: dict[str, Any], pp: PoolsParams, blocked: set[str]) -> list[dict[str, Any]]:
    high = row["label"] == "POSITIVE"
    rules = pp.positive if high else pp.negative
    pool = "D+" if high else "D-"
    same, opposite = ("positive_signals", "negative_signals") if high else ("negative_signals", "positive_signals")
    out: list[dict[str, Any]] = []

    def bad(rule: str, value: Any, threshold: str) -> None:
        out.append({"idea_id": row["idea_id"], "title": row["title"], "area": row["area"], "label": row["label"],
                    "pool": pool, "rule": rule, "value": value, "threshold": threshold})

    ok = (lambda a, b: a >= b) if high else (lambda a, b: a <= b)
    op = ">=" if high else "<="
    for rule, col, bound in (("rating-threshold", "rating", rules.rating), ("contribution-threshold", "contribution", rules.contribution)):
        v = row[col]
        if v is None:
            bad(rule, None, f"{op} {bound} (value missing)")
        elif not ok(v, bound):
            bad(rule, v, f"{op} {bound}")
    n_same, n_opp = len(row[same] or []), len(row[opposite] or [])
    if n_same < rules.min_reviews_with_signal:
        bad("signal-present", n_same, f">= {rules.min_reviews_with_signal} {same.split('_')[0]} signal sentence(s)")
    if n_opp > rules.max_reviews_with_opposite:
        bad("signal-opposite", n_opp, f"<= {rules.max_reviews_with_opposite} {opposite.split('_')[0]} signal sentence(s)")
    if row["area"] is not None and norm_key(row["area"]) in {norm_key(a) for a in pp.drop_areas}:
        bad("area-dropped", row["area"], "not in pools.drop_areas")
    if norm_key(row["title"]) in blocked:
        bad("title-blocklist", row["title"], "not in pools.title_blocklist")
    return out


def check_benchmark(
    ideas: pl.DataFrame, pairs: pl.DataFrame, pp: PoolsParams, blocked_titles: Sequence[str] | None = None
) -> dict[str, Any]:
    """The rule check of one pinned split: violations per idea and pair, the unchecked rules, and strip flags.

    `blocked_titles`: the resolved blocklist (file + extras); default: the extra titles only."""
    blocked = {norm_key(t) for t in (pp.title_blocklist.titles if blocked_titles is None else blocked_titles)}
    human = ideas.filter(pl.col("source") == "human").sort("idea_id")
    generated = ideas.filter(pl.col("source") == "generated").sort("idea_id")
    violations: list[dict[str, Any]] = []
    for row in human.iter_rows(named=True):
        violations.extend(_violations(row, pp, blocked))
    area_of = dict(zip(ideas["idea_id"].to_list(), ideas["area"].to_list(), strict=True))
    pair_violations = []
    for p in pairs.sort("pair_id").iter_rows(named=True):
        areas = {area_of.get(p["idea_0"]), area_of.get(p["idea_1"])}
        if areas != {p["context"]}:
            pair_violations.append({"pair_id": p["pair_id"], "rule": "pair-within-area", "context": p["context"], "idea_areas": sorted(a or "" for a in areas)})
    counts: dict[str, int] = {}
    for v in violations:
        key = f"{v['pool']} {v['rule']}"
        counts[key] = counts.get(key, 0) + 1
    flagged = []
    for row in ideas.sort("idea_id").iter_rows(named=True):
        flags = check_results(row["text"])
        if flags:
            flagged.append({"idea_id": row["idea_id"], "title": row["title"], "label": row["label"], "source": row["source"],
                            "flags": [{"check": f.check, "match": f.match} for f in flags]})
    return {
        "ideas": ideas.height,
        "positive_human": human.filter(pl.col("label") == "POSITIVE").height,
        "negative_human": human.filter(pl.col("label") == "NEGATIVE").height,
        "negative_generated": generated.height,
        "checked_rules": {
            "D+": ["rating-threshold", "contribution-threshold", "signal-present", "signal-opposite", "area-dropped", "title-blocklist"],
            "D-": ["rating-threshold", "contribution-threshold", "signal-present", "signal-opposite", "area-dropped", "title-blocklist"],
            "pairs": ["pair-within-area"],
        },
        "not_checkable": NOT_CHECKABLE,
        "not_applicable": (
            [{"rule": "all D- rules", "ideas": generated.height, "reason": "generated negatives have no reviews, ratings or decisions"}]
            if generated.height
            else []
        ),
        "ideas_violating": len({v["idea_id"] for v in violations}),
        "violation_counts": dict(sorted(counts.items())),
        "violations": violations,
        "pair_violations": pair_violations,
        "strip_check": {"version": STRIP_CHECK_VERSION, "flagged_ideas": len(flagged), "flagged": flagged},
    }
