"""Fixtures shared by the agent judges' tests: loopback mocks of Semantic Scholar and arXiv, and the `search:`
args pointing at them with fast retries. The scripted LLM (`mock_llm`) and `build` come from tests/judges/conftest.py."""

from __future__ import annotations

from typing import Any

import pytest
from mock_arxiv import MockArxiv
from mock_s2 import MockS2

FAST = {"requests_per_second": 1000, "backoff_s": 0.001, "max_backoff_s": 0.01, "timeout_s": 10, "max_retries": 2}
"""Search knobs for tests: no rate-limit waits, short backoffs, two retries."""


@pytest.fixture
def s2():
    with MockS2() as mock:
        yield mock


@pytest.fixture
def arxiv():
    with MockArxiv() as mock:
        yield mock


def search_args(mock: Any, **kw: Any) -> dict[str, Any]:
    """The `search:` args of a judge pointed at `mock` (MockS2 or MockArxiv), with FAST knobs; `kw` overrides."""
    source = "arxiv" if type(mock).__name__ == "MockArxiv" else "semantic-scholar"
    return {"source": source, "base_url": mock.base_url, **FAST, **kw}


@pytest.fixture
def search_for():
    """`search_for(mock, **kw) -> dict`: see `search_args`."""
    return search_args
