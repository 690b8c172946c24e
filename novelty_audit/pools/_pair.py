"""Seeded pairing within an area: each D+ idea with one negative, negatives reused when they run out.

Per area, a `random.Random` seeded from digest(seed, area) shuffles the D+ list and the negative
list (each sorted by id first, so input row order never matters), then D+ idea i meets negative
i mod n, and one draw per pair puts the gold idea in slot 0 or 1. Seeding per area keeps an
area's pairs unchanged when papers of another area come or go.
"""

from __future__ import annotations

import random
from typing import Any

import polars as pl

from ..artifacts import digest_obj, short_id

__all__ = ["PAIR_SCHEMA", "UNPAIRED_SCHEMA", "area_rng", "pair_within_areas"]

PAIR_SCHEMA = {
    "dataset": pl.String,
    "pair_id": pl.String,
    "context": pl.String,
    "idea_0": pl.String,
    "idea_1": pl.String,
    "gold_idea_id": pl.String,
    "gold_slot": pl.Int8,
    "negative_id": pl.String,
    "negative_reused": pl.Boolean,
}
UNPAIRED_SCHEMA = {"dataset": pl.String, "idea_id": pl.String, "area": pl.String, "reason": pl.String}


def area_rng(seed: int, area: str) -> random.Random:
    """The explicit generator of one area: derived from the params seed and the area name only."""
    return random.Random(int(digest_obj({"seed": seed, "area": area})[:16], 16))


def pair_within_areas(
    positives: list[tuple[str, str]], negatives: list[tuple[str, str]], *, seed: int, dataset: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Pair (idea_id, area) positives with negatives of the same area. Returns (pairs, unpaired positives)."""
    by_area_pos: dict[str, list[str]] = {}
    by_area_neg: dict[str, list[str]] = {}
    for iid, area in positives:
        by_area_pos.setdefault(area, []).append(iid)
    for iid, area in negatives:
        by_area_neg.setdefault(area, []).append(iid)
    pairs: list[dict[str, Any]] = []
    unpaired: list[dict[str, Any]] = []
    for area in sorted(by_area_pos):
        pos = sorted(set(by_area_pos[area]))
        neg = sorted(set(by_area_neg.get(area, [])))
        if not neg:
            unpaired.extend({"dataset": dataset, "idea_id": p, "area": area, "reason": "no negative in this area"} for p in pos)
            continue
        rng = area_rng(seed, area)
        rng.shuffle(pos)
        rng.shuffle(neg)
        for i, p in enumerate(pos):
            n = neg[i % len(neg)]
            gold_slot = rng.randrange(2)
            slots = (p, n) if gold_slot == 0 else (n, p)
            pairs.append(
                {
                    "dataset": dataset,
                    "pair_id": short_id("p-", *sorted((p, n))),
                    "context": area,
                    "idea_0": slots[0],
                    "idea_1": slots[1],
                    "gold_idea_id": p,
                    "gold_slot": gold_slot,
                    "negative_id": n,
                    "negative_reused": i >= len(neg),
                }
            )
    return (
        pl.DataFrame(pairs, schema=PAIR_SCHEMA).sort("pair_id"),
        pl.DataFrame(unpaired, schema=UNPAIRED_SCHEMA).sort("idea_id"),
    )
