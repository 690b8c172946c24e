"""A synthetic runs ledger in a temp store (see tests/synthetic_runs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_runs import Ledger


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path)
