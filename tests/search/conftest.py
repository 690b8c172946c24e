"""Search objects pointed at the loopback Semantic Scholar and arXiv mocks (fixtures `s2`, `arxiv`: tests/conftest.py), with fast retries."""

from __future__ import annotations

from pathlib import Path

import pytest

from novelty_audit.search import Search, SearchArgs, make_search


@pytest.fixture
def searcher(tmp_path: Path):
    """`searcher(mock, **args) -> Search` over the mock's API, cached under tmp_path/cache; closed at the end."""
    from pydantic import TypeAdapter

    made: list[Search] = []

    def make(mock, *, refresh: bool = False, **kw) -> Search:
        source = "arxiv" if type(mock).__name__ == "MockArxiv" else "semantic-scholar"
        fast = {"requests_per_second": 1000, "backoff_s": 0.001, "max_backoff_s": 0.01, "timeout_s": 10}
        args = TypeAdapter(SearchArgs).validate_python({"source": source, "base_url": mock.base_url, **fast, **kw})
        made.append(make_search(args, tmp_path / "cache", refresh=refresh))
        return made[-1]

    yield make
    for s in made:
        s.close()
