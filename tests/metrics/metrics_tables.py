"""Builders for small verdict tables (imported by the tests as `metrics_tables`) in the judge stage's schema (docs/design/tables.md)."""

from __future__ import annotations

from typing import Any

import polars as pl

from novelty_audit.judges import PAIRWISE_SCHEMA, POINTWISE_SCHEMA

# The subset of the judge stage's columns the metrics read: the same names and types as the real tables.
PAIR_COLUMNS = {k: PAIRWISE_SCHEMA[k] for k in (
    "dataset", "judge", "pair_id", "idea_0", "idea_1", "gold_idea_id", "verdict", "verdict_forward",
    "verdict_reverse", "votes_forward", "votes_reverse", "n_valid", "n_invalid", "n_refusal", "n_error",
    "n_truncated", "error_reasons",
)}
POINT_COLUMNS = {k: POINTWISE_SCHEMA[k] for k in ("dataset", "judge", "idea_id", "gold_label", "predicted", "score")}


def pair_row(pair: str, verdict: str, *, gold: str = "a", judge: str = "j", dataset: str = "ds", **extra: Any) -> dict:
    """One verdict row for pair `pair` between ideas `<pair>a` and `<pair>b`; verdicts given as a/b/tie/none."""
    a, b = f"{pair}a", f"{pair}b"

    def idea(v: str | None) -> str | None:
        return {"a": a, "b": b}.get(v, v) if v is not None else None

    row = {
        "dataset": dataset,
        "judge": judge,
        "pair_id": pair,
        "idea_0": a,
        "idea_1": b,
        "gold_idea_id": idea(gold),
        "verdict": idea(verdict),
        "verdict_forward": idea(extra.pop("forward", verdict)),
        "verdict_reverse": idea(extra.pop("reverse", None)),
        "votes_forward": [idea(v) for v in extra.pop("votes_forward", [])],
        "votes_reverse": [idea(v) for v in extra.pop("votes_reverse", [])] or None,
        "n_valid": extra.pop("n_valid", 1),
        "n_invalid": extra.pop("n_invalid", 0),
        "n_refusal": extra.pop("n_refusal", 0),
        "n_error": extra.pop("n_error", 0),
        "n_truncated": extra.pop("n_truncated", 0),
        "error_reasons": extra.pop("error_reasons", []),
    }
    assert not extra, extra
    return row


def table(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=PAIR_COLUMNS)


def point_table(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=POINT_COLUMNS)

