"""On a warm call cache a judge run makes no API call and writes the same verdicts byte for byte."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from mock_llm import MockLLM

from novelty_audit.artifacts import write_table
from novelty_audit.judges import PAIRWISE_SCHEMA, POINTWISE_SCHEMA, Idea, JudgeParams, PairItem, PointItem, build_judges


def _idea(n: int) -> Idea:
    return Idea(f"i-{n:016x}", f"Title {n}", f"Idea number {n} proposes something.", f"d{n:063x}", "area")


PAIRS = [PairItem("toy", f"p-{k:016x}", _idea(2 * k), _idea(2 * k + 1), _idea(2 * k + k % 2).idea_id) for k in range(4)]
POINTS = [PointItem("toy", _idea(100 + k), "POSITIVE" if k % 2 == 0 else "NEGATIVE") for k in range(3)]


def _run(backend: str, url: str, store: Path, out: Path) -> dict:
    jp = JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False, "judges": {
        "j": {"backend": backend, "args": {"model": "mock", "base_url": url, "api_key_env": "MOCK_API_KEY", "votes": 2}}}})  # fmt: skip
    judge = build_judges(jp, store_root=store).judges[0]
    result = judge.judge(PAIRS, POINTS)
    write_table(out / "verdicts.parquet", pl.DataFrame(result.pairwise, schema=PAIRWISE_SCHEMA))
    write_table(out / "pointwise.parquet", pl.DataFrame(result.pointwise, schema=POINTWISE_SCHEMA))
    return result.facts


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_judge_on_a_warm_cache_makes_no_call_and_writes_identical_verdicts(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test")
    with MockLLM(answer=lambda body, nth: '{"answer": "B"}' if nth % 2 else '{"answer": "A"}') as mock:
        url = mock.base_url if backend == "openai" else mock.root_url
        cold = _run(backend, url, tmp_path / "store", tmp_path / "cold")
        paid = mock.count
        assert paid == cold["calls"] == 4 * 2 * 2 + 3 * 2 > 0
        warm = _run(backend, url, tmp_path / "store", tmp_path / "warm")
        assert mock.count == paid, "the warm run asked the endpoint"
    assert warm["calls"] == 0 and warm["cache_hits"] == paid
    for name in ("verdicts.parquet", "pointwise.parquet"):
        assert (tmp_path / "warm" / name).read_bytes() == (tmp_path / "cold" / name).read_bytes(), name
    assert pl.read_parquet(tmp_path / "warm" / "verdicts.parquet").equals(pl.read_parquet(tmp_path / "cold" / "verdicts.parquet"))
