"""Candidate-set metrics: how often a judge prefers an idea-generation system's ideas to human ones.

A candidate dataset NAME pairs each candidate with a D+ human idea of its area, NAME-vs-low with a D- one, and a
head-to-head dataset A-vs-B pairs set A with set B; in each the pair's `gold_idea_id` names the candidate (A's idea)
— the idea whose wins are counted, not a correct answer, so these datasets get no accuracy. Per judge:

- `candidate_win_rate`: pairs whose verdict is the candidate / all pairs (a tie or no verdict is not a win);
  `candidate_win_rate_low` the same on NAME-vs-low; each with a Wilson interval;
- `tie_rate`: ties / all pairs, on its own (never folded into a win rate); `coverage`: pairs with a verdict / all.

Across a sweep (its base and its variants, each a judge): the spread of the win rate (min–max over the
configurations) and the label-free disagreement between configurations (the share of common pairs whose verdicts
differ, mean and max over every two configurations; null where two share no pair).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import polars as pl

from ._estimates import WILSON_METHOD, wilson_interval

__all__ = ["CANDIDATE_KINDS", "CANDIDATE_DEFINITIONS", "candidate_metrics", "candidate_metrics_json"]

CANDIDATE_KINDS = ("candidates", "candidates-low", "head-to-head")
LOW_SUFFIX = "-vs-low"
TIE, NONE = "tie", "none"

CANDIDATE_DEFINITIONS = [
    {"name": "candidate_win_rate", "table": "candidates", "direction": "none", "uncertainty": WILSON_METHOD,
     "description": "pairs whose verdict is the candidate idea / all pairs of the set against same-area D+ human ideas "
                    "(head-to-head: set A's wins over set B); ties and no-verdicts are not wins"},
    {"name": "candidate_win_rate_low", "table": "candidates", "direction": "none", "uncertainty": WILSON_METHOD,
     "description": "the same against same-area D- human ideas (dataset NAME-vs-low): the floor"},
    {"name": "tie_rate", "table": "candidates", "direction": "none", "uncertainty": WILSON_METHOD,
     "description": "ties / all pairs of the set, reported on its own"},
    {"name": "coverage", "table": "candidates", "direction": "higher", "uncertainty": "none",
     "description": "pairs with a verdict (a win either way or a tie) / all pairs"},
]  # fmt: skip


def _rate(k: int, n: int, confidence: float, prefix: str) -> dict[str, Any]:
    if n == 0:
        return {}
    lo, hi = wilson_interval(k, n, confidence)
    return {prefix: k / n, f"{prefix}_wilson_low": lo, f"{prefix}_wilson_high": hi}


def _per_judge(df: pl.DataFrame, confidence: float, low: pl.DataFrame | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for (judge,), g in sorted(df.group_by("judge"), key=lambda t: t[0][0]):
        n = g.height
        wins = int((g["verdict"] == g["gold_idea_id"]).sum())
        ties = int((g["verdict"] == TIE).sum())
        none = int(g["verdict"].is_null().sum() + (g["verdict"] == NONE).sum())
        row: dict[str, Any] = {"n_pairs": n, "wins": wins, "ties": ties, "no_verdict": none, "coverage": (n - none) / n}
        row |= _rate(wins, n, confidence, "candidate_win_rate") | _rate(ties, n, confidence, "tie_rate")
        if low is not None:
            gl = low.filter(pl.col("judge") == judge)
            if gl.height:
                wl = int((gl["verdict"] == gl["gold_idea_id"]).sum())
                row |= {"n_pairs_low": gl.height, "wins_low": wl} | _rate(wl, gl.height, confidence, "candidate_win_rate_low")
        out[judge] = row
    return out


def _disagreement(df: pl.DataFrame, judges: list[str]) -> dict[str, Any]:
    """Share of common pairs whose verdicts differ, over every two of `judges` (label-free: no gold needed)."""
    by = {j: dict(zip(g["pair_id"].to_list(), g["verdict"].to_list(), strict=True)) for j in judges
          for g in [df.filter(pl.col("judge") == j)]}  # fmt: skip
    rates = []
    for a, b in combinations(judges, 2):
        common = by[a].keys() & by[b].keys()
        if common:
            rates.append(sum(by[a][p] != by[b][p] for p in common) / len(common))
    if not rates:
        return {"disagreement_mean": None, "disagreement_max": None, "compared_pairs_of_configurations": 0}
    return {"disagreement_mean": sum(rates) / len(rates), "disagreement_max": max(rates), "compared_pairs_of_configurations": len(rates)}


def _sweeps(df: pl.DataFrame, per_judge: Mapping[str, dict[str, Any]], sweeps: Mapping[str, list[str]]) -> dict[str, dict[str, Any]]:
    out = {}
    for sweep, members in sorted(sweeps.items()):
        present = [j for j in members if j in per_judge]
        if not present:
            continue
        wins = [per_judge[j]["candidate_win_rate"] for j in present if "candidate_win_rate" in per_judge[j]]
        ties = [per_judge[j]["tie_rate"] for j in present if "tie_rate" in per_judge[j]]
        out[sweep] = {
            "configurations": present,
            "candidate_win_rate_min": min(wins) if wins else None,
            "candidate_win_rate_max": max(wins) if wins else None,
            "tie_rate_min": min(ties) if ties else None,
            "tie_rate_max": max(ties) if ties else None,
            **_disagreement(df, present),
        }
    return out


def candidate_metrics(
    verdicts: pl.DataFrame, kinds: Mapping[str, str], *, confidence: float, sweeps: Mapping[str, list[str]] | None = None,
    controls: set[str] | frozenset[str] = frozenset(),
) -> dict[str, dict[str, Any]]:
    """{dataset: {"kind", "judges": {judge: figures}, "sweeps": {sweep: spread and disagreement}, "all_judges": the
    same over every judge not in `controls`}} for each candidate / head-to-head dataset in `kinds` that was judged.
    The NAME-vs-low figures sit beside NAME's (`candidate_win_rate_low`) and under their own dataset too."""
    out: dict[str, dict[str, Any]] = {}
    judged = set(verdicts["dataset"].unique().to_list()) if verdicts.height else set()
    real = sorted(j for j in verdicts["judge"].unique().to_list() if j not in set(controls))
    for ds, kind in sorted(kinds.items()):
        if ds not in judged:
            continue
        df = verdicts.filter(pl.col("dataset") == ds)
        low_name = ds + LOW_SUFFIX if kind == "candidates" else None
        low = verdicts.filter(pl.col("dataset") == low_name) if low_name in judged else None
        per_judge = _per_judge(df, confidence, low)
        entry: dict[str, Any] = {"kind": kind, "judges": per_judge, "sweeps": _sweeps(df, per_judge, sweeps or {}),
                                 "all_judges": _sweeps(df, per_judge, {"all": real}).get("all")}
        if low_name:
            entry["low_dataset"] = low_name if low is not None else None
        out[ds] = entry
    return out


def candidate_metrics_json(figures: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The per-judge numbers in metrics.json's shape ({dataset: {judge: {metric: value}}}), numbers only."""
    return {ds: {j: {k: v for k, v in row.items() if isinstance(v, (int, float))} for j, row in e["judges"].items()}
            for ds, e in figures.items()}  # fmt: skip
