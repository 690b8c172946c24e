"""D+ / D- selection: per-area rating percentiles, the threshold and signal rules, every exclusion recorded.

Rule names (the `rule` column of exclusions.parquet), in the order they are checked:
- both pools: `area-missing`, `area-dropped`, `title-blocklist`, `rating-missing`, `contribution-missing`;
- per pool: `decision`, `rating-threshold`, `contribution-threshold`, `rating-percentile`,
  `signal-present` (too few reviews with a signal of the pool's polarity), `signal-opposite`
  (a review with the opposite polarity), `signal-majority` (not more than the configured share of
  reviews purely of the pool's polarity).
A paper outside both pools gets one row per failed rule per pool; `first` marks the first
failure in the order above.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ..config import PoolRules, PoolsParams
from ..errors import ConfigError

__all__ = [
    "EVIDENCE_SCHEMA",
    "POOL_EXCLUSION_SCHEMA",
    "PERCENTILE_SCHEMA",
    "paper_evidence",
    "area_percentiles",
    "select_pools",
    "norm_key",
]

EVIDENCE_SCHEMA = {
    "paper_id": pl.String,
    "title": pl.String,
    "area": pl.String,
    "decision_class": pl.String,
    "mean_rating": pl.Float64,
    "mean_contribution": pl.Float64,
    "n_reviews": pl.Int32,
    "reviews_positive": pl.Int32,
    "reviews_negative": pl.Int32,
    "reviews_pure_positive": pl.Int32,
    "reviews_pure_negative": pl.Int32,
}
POOL_EXCLUSION_SCHEMA = {
    "paper_id": pl.String,
    "title": pl.String,
    "area": pl.String,
    "pool": pl.String,
    "rule": pl.String,
    "value": pl.String,
    "threshold": pl.String,
    "first": pl.Boolean,
}
PERCENTILE_SCHEMA = {"area": pl.String, "n_papers": pl.Int32, "bottom": pl.Float64, "top": pl.Float64}


def norm_key(text: str) -> str:
    """Area names and blocklisted titles are compared case-insensitively, whitespace collapsed."""
    return " ".join(text.lower().split())


def paper_evidence(papers: pl.DataFrame, snippets: pl.DataFrame, reviews: pl.DataFrame, extractor: str) -> pl.DataFrame:
    """Per paper: scores, decision and how many reviews carry positive / negative / purely one-sided signals."""
    mine = snippets.filter(pl.col("extractor") == extractor)
    per_review = (
        reviews.select("review_id", "paper_id")
        .join(
            mine.group_by("review_id").agg(
                (pl.col("polarity") == "positive").any().alias("pos"), (pl.col("polarity") == "negative").any().alias("neg")
            ),
            on="review_id",
            how="left",
        )
        .with_columns(pl.col("pos").fill_null(False), pl.col("neg").fill_null(False))
    )
    counts = per_review.group_by("paper_id").agg(
        pl.col("pos").sum().cast(pl.Int32).alias("reviews_positive"),
        pl.col("neg").sum().cast(pl.Int32).alias("reviews_negative"),
        (pl.col("pos") & ~pl.col("neg")).sum().cast(pl.Int32).alias("reviews_pure_positive"),
        (pl.col("neg") & ~pl.col("pos")).sum().cast(pl.Int32).alias("reviews_pure_negative"),
    )
    out = papers.select("paper_id", "title", "area", "decision_class", "mean_rating", "mean_contribution", "n_reviews").join(
        counts, on="paper_id", how="left"
    )
    return out.with_columns(pl.col(c).fill_null(0) for c in ("reviews_positive", "reviews_negative", "reviews_pure_positive", "reviews_pure_negative")).select(
        list(EVIDENCE_SCHEMA)
    ).cast(EVIDENCE_SCHEMA).sort("paper_id")


def area_percentiles(evidence: pl.DataFrame, pp: PoolsParams) -> dict[str, tuple[int, float, float]]:
    """area → (papers with a rating, bottom percentile, top percentile) of mean rating.

    Computed over every paper of the area that has a rating (dropped areas excluded, the title
    blocklist not applied: the percentile describes the venue's population of the area)."""
    dropped = {norm_key(a) for a in pp.drop_areas}
    out: dict[str, tuple[int, float, float]] = {}
    rated = evidence.filter(pl.col("area").is_not_null() & pl.col("mean_rating").is_not_null())
    for area in sorted(set(rated["area"].to_list())):
        if norm_key(area) in dropped:
            continue
        vals = np.asarray(rated.filter(pl.col("area") == area)["mean_rating"].to_list(), dtype=float)
        lo, hi = np.percentile(vals, [pp.percentile.bottom, pp.percentile.top], method=pp.percentile.method)
        out[area] = (len(vals), float(lo), float(hi))
    return out


def _fmt(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def _pool_failures(row: dict[str, Any], rules: PoolRules, *, high: bool, pct: tuple[int, float, float]) -> list[tuple[str, str, str]]:
    fails: list[tuple[str, str, str]] = []
    ge = (lambda a, b: a >= b) if high else (lambda a, b: a <= b)
    op = ">=" if high else "<="
    if row["decision_class"] not in rules.decisions:
        fails.append(("decision", row["decision_class"], f"in {rules.decisions}"))
    if not ge(row["mean_rating"], rules.rating):
        fails.append(("rating-threshold", _fmt(row["mean_rating"]), f"{op} {rules.rating}"))
    if not ge(row["mean_contribution"], rules.contribution):
        fails.append(("contribution-threshold", _fmt(row["mean_contribution"]), f"{op} {rules.contribution}"))
    bound = pct[2] if high else pct[1]
    if not ge(row["mean_rating"], bound):
        fails.append(("rating-percentile", _fmt(row["mean_rating"]), f"{op} {_fmt(bound)} (area percentile)"))
    same, opposite, pure = (
        ("reviews_positive", "reviews_negative", "reviews_pure_positive")
        if high
        else ("reviews_negative", "reviews_positive", "reviews_pure_negative")
    )
    if row[same] < rules.min_reviews_with_signal:
        fails.append(("signal-present", str(row[same]), f">= {rules.min_reviews_with_signal} reviews"))
    if row[opposite] > rules.max_reviews_with_opposite:
        fails.append(("signal-opposite", str(row[opposite]), f"<= {rules.max_reviews_with_opposite} reviews"))
    share = row[pure] / row["n_reviews"] if row["n_reviews"] else 0.0
    if not share > rules.pure_share_above:
        fails.append(("signal-majority", _fmt(share), f"> {rules.pure_share_above}"))
    return fails


def select_pools(
    evidence: pl.DataFrame, pp: PoolsParams, blocked_titles: Sequence[str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(pool members with pool 'D+' | 'D-', exclusions with the rules that excluded each paper, per-area percentiles).

    `blocked_titles`: the resolved blocklist (`blocked_titles(pp.title_blocklist)`, file + extras); default:
    the extra titles only."""
    pct = area_percentiles(evidence, pp)
    dropped = {norm_key(a) for a in pp.drop_areas}
    blocked = {norm_key(t) for t in (pp.title_blocklist.titles if blocked_titles is None else blocked_titles)}
    members: list[dict[str, Any]] = []
    excl: list[dict[str, Any]] = []

    def exclude(row: dict[str, Any], pool: str, fails: list[tuple[str, str, str]]) -> None:
        for i, (rule, value, threshold) in enumerate(fails):
            excl.append({"paper_id": row["paper_id"], "title": row["title"], "area": row["area"], "pool": pool,
                         "rule": rule, "value": value, "threshold": threshold, "first": i == 0})

    for row in evidence.sort("paper_id").iter_rows(named=True):
        common: list[tuple[str, str, str]] = []
        if row["area"] is None:
            common.append(("area-missing", "null", "an ICLR primary area"))
        elif norm_key(row["area"]) in dropped:
            common.append(("area-dropped", row["area"], "not in pools.drop_areas"))
        if norm_key(row["title"]) in blocked:
            common.append(("title-blocklist", row["title"], "not in pools.title_blocklist"))
        if row["mean_rating"] is None:
            common.append(("rating-missing", "null", "a mean rating"))
        if row["mean_contribution"] is None:
            common.append(("contribution-missing", "null", "a mean contribution score"))
        if common:
            exclude(row, "both", common)
            continue
        area_pct = pct[row["area"]]
        hi = _pool_failures(row, pp.positive, high=True, pct=area_pct)
        lo = _pool_failures(row, pp.negative, high=False, pct=area_pct)
        if not hi and not lo:
            raise ConfigError(
                f"pools: paper {row['paper_id']} ({row['title']!r}) qualifies for both D+ and D-",
                hint="pools.positive and pools.negative must not overlap (decisions or thresholds)",
            )
        if not hi:
            members.append({**row, "pool": "D+"})
        elif not lo:
            members.append({**row, "pool": "D-"})
        else:
            exclude(row, "D+", hi)
            exclude(row, "D-", lo)
    pools = pl.DataFrame(members, schema={**EVIDENCE_SCHEMA, "pool": pl.String}) if members else pl.DataFrame(
        schema={**EVIDENCE_SCHEMA, "pool": pl.String}
    )
    percentiles = pl.DataFrame(
        [{"area": a, "n_papers": n, "bottom": lo, "top": hi} for a, (n, lo, hi) in sorted(pct.items())], schema=PERCENTILE_SCHEMA
    )
    return pools, pl.DataFrame(excl, schema=POOL_EXCLUSION_SCHEMA), percentiles
