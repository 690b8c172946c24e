"""Fixtures of the metrics tests: hand-made verdict tables."""

from __future__ import annotations

import polars as pl
import pytest
from metrics_tables import pair_row, table


@pytest.fixture
def hand_table() -> pl.DataFrame:
    """Five pairs, one of each outcome: correct, wrong, tie, none, correct (judged in one order only)."""
    return table(
        [
            pair_row("p1", "a", forward="a", reverse="a", votes_forward=["a", "a"], votes_reverse=["a"]),
            pair_row("p2", "b", forward="b", reverse="a", votes_forward=["b"], votes_reverse=["a"], n_error=1),
            pair_row("p3", "tie", forward="a", reverse="b", votes_forward=["a"], votes_reverse=["b"]),
            pair_row("p4", "none", gold="b", forward="none", reverse="none", votes_forward=["invalid"],
                     votes_reverse=["refusal"], n_invalid=1, n_refusal=1),
            pair_row("p5", "b", gold="b", forward="b", votes_forward=["b", "b"]),
        ]
    )
