"""Fixtures for judge tests: a running mock LLM server, small synthetic items, judge builders."""

from __future__ import annotations

from pathlib import Path

import pytest
from mock_llm import MockLLM

from novelty_audit.judges import JudgeParams, build_judges


@pytest.fixture
def mock_llm():
    with MockLLM(latency=0.0) as mock:
        yield mock


@pytest.fixture
def build(tmp_path: Path):
    """Build one judge from a params-style spec, with its caches under tmp_path/store."""

    def _build(backend: str, name: str = "j", *, tasks=("pairwise", "pointwise"), seed: int = 0, budget_usd=None, prices=None, refresh=False, **args):
        jp = JudgeParams.model_validate(
            {
                "tasks": list(tasks),
                "seed": seed,
                "budget_usd": budget_usd,
                "prices": prices or {},
                "progress": False,
                "refresh": refresh,
                "judges": {name: {"backend": backend, "args": args}},
            }
        )
        built = build_judges(jp, store_root=tmp_path / "store")
        return built.judges[0]

    return _build
