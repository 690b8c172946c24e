"""The pair sets the pools stage builds, as datasets the judge stage judges (same tables as a pinned split).

Each dataset is `datasets/<name>/{ideas,pairs,pointwise,exclusions}.parquet` plus an entry of `datasets.json`
(its kind, where its ideas come from, counts). Ids are content-derived as in a pinned split: an idea's id from its
normalized title (a paper's from its paper id), a pair's from its two idea ids, and the pairs table carries both
text digests. Kinds:

- `gold`: D+ against D- or generated ideas (the D+ idea is the gold): the constructed pools and re-pairings;
- `candidates` / `candidates-low`: a candidate set against D+ / D- human ideas of its area (gold_idea_id names the
  candidate: the idea whose wins the candidate metrics count; there is no correct answer, so no accuracy);
- `head-to-head`: set A against set B within areas (gold_idea_id names A's idea).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..artifacts import digest_bytes
from ..config import GENERATED_PAIRS, HUMAN_PAIRS, LOW_SUFFIX, PoolsParams, repair_name
from ..datasets import EXCLUSION_SCHEMA, IDEA_SCHEMA, PAIR_SCHEMA, POINT_SCHEMA, normalize_text
from ..errors import ConfigError
from ..signals import check_file_pin
from ._candidates import read_candidates
from ._pair import pair_within_areas

__all__ = ["PoolDataset", "build_datasets", "DATASET_TABLES", "candidate_areas", "human_ideas_for_candidates"]

DATASET_TABLES = {"ideas": ["idea_id"], "pairs": ["pair_id"], "pointwise": ["idea_id"], "exclusions": None}


@dataclass(frozen=True)
class PoolDataset:
    """One judgeable dataset: pin-format tables and its `datasets.json` entry."""

    name: str
    ideas: pl.DataFrame
    pairs: pl.DataFrame
    pointwise: pl.DataFrame
    exclusions: pl.DataFrame
    info: dict[str, Any]


def _idea_rows(df: pl.DataFrame) -> dict[str, dict[str, Any]]:
    return {r["idea_id"]: r for r in df.select(list(IDEA_SCHEMA)).iter_rows(named=True)}


def pool_ideas(pool: pl.DataFrame, generated: pl.DataFrame) -> pl.DataFrame:
    """The review-built D+ / D- pools and the generated pool as pin-format ideas (labels: D+ POSITIVE, else NEGATIVE)."""
    rows = [
        {"idea_id": r["paper_id"], "text": r["text"], "title": r["title"], "area": r["area"], "source": "human",
         "rating": r["mean_rating"], "contribution": r["mean_contribution"], "label": "POSITIVE" if r["pool"] == "D+" else "NEGATIVE"}
        for r in pool.iter_rows(named=True)
    ] + [
        {"idea_id": r["idea_id"], "text": r["text"], "title": r["title"], "area": r["area"], "source": "generated",
         "rating": None, "contribution": None, "label": "NEGATIVE"}
        for r in generated.iter_rows(named=True)
    ]  # fmt: skip
    for r in rows:
        r.update({"dataset": None, "text_digest": digest_bytes(normalize_text(r["text"] or "").encode("utf-8")),
                  "positive_signals": [], "negative_signals": []})  # fmt: skip
    return pl.DataFrame(rows, schema=IDEA_SCHEMA)


def _dataset(name: str, kind: str, pairs: pl.DataFrame, unpaired: pl.DataFrame, ideas: dict[str, dict[str, Any]],
             exclusions: pl.DataFrame, info: dict[str, Any]) -> PoolDataset:
    """Pin-format tables of one pairing (`pair_within_areas` output: gold = its first side)."""
    used = sorted({i for col in ("idea_0", "idea_1") for i in pairs[col].to_list()})
    idea_df = pl.DataFrame([{**ideas[i], "dataset": name} for i in used], schema=IDEA_SCHEMA)
    digest = {i: ideas[i]["text_digest"] for i in used}
    pair_df = pl.DataFrame(
        [{"dataset": name, "pair_id": r["pair_id"], "source_key": None, "context": r["context"], "idea_0": r["idea_0"],
          "idea_1": r["idea_1"], "gold_idea_id": r["gold_idea_id"], "gold_slot": r["gold_slot"],
          "idea_0_digest": digest[r["idea_0"]], "idea_1_digest": digest[r["idea_1"]]} for r in pairs.iter_rows(named=True)],
        schema=PAIR_SCHEMA,
    )  # fmt: skip
    # Pointwise items only where a label is known (gold datasets): a candidate has no label to be right about.
    points = [{"dataset": name, "idea_id": i, "position": 0, "label": ideas[i]["label"]} for i in used] if kind == "gold" else []
    excl = pl.concat([
        exclusions.with_columns(pl.lit(name).alias("dataset")),
        pl.DataFrame([{"dataset": name, "file": "-", "item": r["idea_id"], "field": "area", "reason": r["reason"]}
                      for r in unpaired.iter_rows(named=True)], schema=EXCLUSION_SCHEMA),
    ])  # fmt: skip
    info = {**info, "kind": kind, "pairs": pair_df.height, "ideas": idea_df.height, "excluded": excl.height,
            "reused_opponents": int(pairs["negative_reused"].sum() or 0)}  # fmt: skip
    return PoolDataset(name, idea_df.sort("idea_id"), pair_df.sort("pair_id"),
                       pl.DataFrame(points, schema=POINT_SCHEMA).sort("idea_id"), excl.sort("item", "field"), info)  # fmt: skip


def _by_label(ideas: pl.DataFrame, label: str) -> list[tuple[str, str]]:
    return [(r["idea_id"], r["area"]) for r in ideas.filter(pl.col("label") == label).iter_rows(named=True)]


def human_ideas_for_candidates(pp: PoolsParams, pool_idea_df: pl.DataFrame, benchmark_ideas: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The human D+ (POSITIVE) and D- (NEGATIVE) ideas candidates meet (`pools.candidate_humans`)."""
    src = pp.candidate_humans
    if src.source == "reviews":
        return pool_idea_df.filter(pl.col("source") == "human")
    if src.dataset not in benchmark_ideas:
        raise ConfigError(f"pools.candidate_humans.dataset: '{src.dataset}' is not among the pin stage's outputs {sorted(benchmark_ideas)}")
    return benchmark_ideas[src.dataset].filter(pl.col("source") == "human")


def candidate_areas(pp: PoolsParams, benchmark_ideas: dict[str, pl.DataFrame], review_areas: list[str]) -> list[str]:
    """The areas a candidate may name: those of the pinned split's ideas, or of the reviewed papers."""
    if pp.candidate_humans.source == "reviews":
        return sorted(set(review_areas))
    return sorted(set(benchmark_ideas[pp.candidate_humans.dataset]["area"].to_list()))


def _candidate_sets(pp: PoolsParams, humans: pl.DataFrame, areas: list[str], root: Path) -> dict[str, tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]]:
    out = {}
    titles = set(humans["title"].to_list())
    for name, cs in sorted(pp.candidates.items()):
        path = check_file_pin(f"pools.candidates.{name}", cs, root, accept_hint=f"novelty-audit candidates add {cs.path} --name {name}")
        got = read_candidates(path, areas=areas, max_words=cs.max_words, human_titles=titles, on_bad_row=cs.on_bad_row)
        systems = sorted({s for s in got.systems.values() if s})
        out[name] = (got.ideas, got.exclusions, {"file": cs.path, "sha256": cs.sha256, "candidates": got.ideas.height, "systems": systems})
    return out


def build_datasets(pp: PoolsParams, *, pool_idea_df: pl.DataFrame, human_pairs: tuple[pl.DataFrame, pl.DataFrame],
                   generated_pairs: tuple[pl.DataFrame, pl.DataFrame] | None, benchmark_ideas: dict[str, pl.DataFrame],
                   review_areas: list[str], root: Path = Path(".")) -> list[PoolDataset]:
    """Every dataset of `pp.dataset_names()`, in that order. `review_areas`: the areas of the papers the review
    pools were selected from (a candidate's area must be one of them when its humans come from reviews)."""
    none = pl.DataFrame(schema=EXCLUSION_SCHEMA)
    pooled = _idea_rows(pool_idea_df)
    out = [_dataset(HUMAN_PAIRS, "gold", *human_pairs, pooled, none, {"ideas_from": "reviews: D+ against D-", "seed": pp.seed})]
    if generated_pairs is not None:
        out.append(_dataset(GENERATED_PAIRS, "gold", *generated_pairs, pooled, none,
                            {"ideas_from": f"reviews: D+ against generated ({pp.generated.source})", "seed": pp.seed}))  # fmt: skip
    if pp.candidates:
        humans = human_ideas_for_candidates(pp, pool_idea_df, benchmark_ideas)
        src = "reviews" if pp.candidate_humans.source == "reviews" else f"pin:{pp.candidate_humans.dataset}"
        sets = _candidate_sets(pp, humans, candidate_areas(pp, benchmark_ideas, review_areas), root)
        plus, minus = _by_label(humans, "POSITIVE"), _by_label(humans, "NEGATIVE")
        for name, (cands, excl, info) in sets.items():
            ideas = {**_idea_rows(humans), **_idea_rows(cands)}
            mine = [(r["idea_id"], r["area"]) for r in cands.iter_rows(named=True)]
            for ds, opponents, against in ((name, plus, "D+"), (name + LOW_SUFFIX, minus, "D-")):
                pairs, unpaired = pair_within_areas(mine, opponents, seed=pp.seed, dataset=ds)
                unpaired = unpaired.with_columns(pl.lit(f"no {against} human idea in this area").alias("reason"))
                kind = "candidates" if against == "D+" else "candidates-low"
                out.append(_dataset(ds, kind, pairs, unpaired, ideas, excl, {**info, "set": name, "against": f"{against} ({src})", "seed": pp.seed}))
        for a, b in pp.head_to_head:
            ideas = {**_idea_rows(sets[a][0]), **_idea_rows(sets[b][0])}
            side = lambda n: [(r["idea_id"], r["area"]) for r in sets[n][0].iter_rows(named=True)]  # noqa: E731
            pairs, unpaired = pair_within_areas(side(a), side(b), seed=pp.seed, dataset=f"{a}-vs-{b}")
            unpaired = unpaired.with_columns(pl.lit(f"no idea of set {b} in this area").alias("reason"))
            out.append(_dataset(f"{a}-vs-{b}", "head-to-head", pairs, unpaired, ideas, none, {"set": a, "against": f"set {b}", "seed": pp.seed}))
    if pp.repair.seeds:
        ds = pp.repair.dataset
        if ds not in benchmark_ideas:
            raise ConfigError(f"pools.repair.dataset: '{ds}' is not among the pin stage's outputs {sorted(benchmark_ideas)}")
        split = benchmark_ideas[ds]
        ideas = _idea_rows(split)
        for seed in pp.repair.seeds:
            pairs, unpaired = pair_within_areas(_by_label(split, "POSITIVE"), _by_label(split, "NEGATIVE"), seed=seed, dataset=repair_name(ds, seed))
            out.append(_dataset(repair_name(ds, seed), "gold", pairs, unpaired, ideas, none, {"ideas_from": f"pin:{ds} re-paired", "seed": seed}))
    return out
