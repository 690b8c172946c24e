"""Fixtures shared by the agent judges' tests: the `search:` args pointing at the loopback Semantic Scholar and
arXiv mocks (fixtures `s2`, `arxiv`: tests/conftest.py) with fast retries. The scripted LLM (`mock_llm`) and `build` come from tests/judges/conftest.py."""

from __future__ import annotations

from typing import Any

import pytest

FAST = {"requests_per_second": 1000, "backoff_s": 0.001, "max_backoff_s": 0.01, "timeout_s": 10, "max_retries": 2}
"""Search knobs for tests: no rate-limit waits, short backoffs, two retries."""


def search_args(mock: Any, **kw: Any) -> dict[str, Any]:
    """The `search:` args of a judge pointed at `mock` (MockS2 or MockArxiv), with FAST knobs; `kw` overrides."""
    source = "arxiv" if type(mock).__name__ == "MockArxiv" else "semantic-scholar"
    return {"source": source, "base_url": mock.base_url, **FAST, **kw}


@pytest.fixture
def search_for():
    """`search_for(mock, **kw) -> dict`: see `search_args`."""
    return search_args
