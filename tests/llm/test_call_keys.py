"""Call-cache keys and entry bytes are pinned: a refactor of the call layer must never move them.

The literals were computed with the engine as it stood before the call layer (`novelty_audit.llm`) existed;
a drift here means every cached answer of every user would be asked (and paid for) again."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from mock_llm import MockLLM

from novelty_audit.judges import CallCache, Idea, JudgeParams, PairItem, PointItem, build_judges, call_key


def _idea(n: int) -> Idea:
    return Idea(f"i-{n:016x}", f"Title {n}", f"Idea number {n} proposes something.", f"d{n:063x}", "area")


PAIRS = [PairItem("toy", f"p-{0:016x}", _idea(0), _idea(1), _idea(0).idea_id)]
POINTS = [PointItem("toy", _idea(100), "POSITIVE")]

JUDGES = {
    "chat": ("openai", {"model": "gpt-4o-mini"}),
    "chat_endpoint": ("openai", {"model": "qwen", "base_url": "http://user:pw@127.0.0.1:8000/v1/", "api_key_env": None,
                                 "sampling": {"temperature": 0.7, "seed": 3, "extra": {"top_k": 40}}}),
    "completions": ("openai", {"model": "base", "base_url": "http://127.0.0.1:8000/v1", "api": "completions", "api_key_env": None}),
    "anthropic": ("anthropic", {"model": "claude-3-5-haiku"}),
    "batch": ("openai", {"model": "gpt-4o-mini", "batch": True}),
    "anthropic_batch": ("anthropic", {"model": "claude-3-5-haiku", "batch": True}),
}  # fmt: skip

CHAT = ("ffc4a92ac7f43577639145c3eabd6dfd06942a1fb6475907652d1fd03807d6a4",
        "f082e66d81d336c3d35b85d6cdb11fc50d4d086897ffe9d25492bdf552fb33cf",
        "c3af15ab59f60b3f91817b3f6a56a581bc76ec123e8b1a587a4bc05458e033a0")
ANTHROPIC = ("3b3f5a6d3c9a1ae0de6718571a08a85562d1f5c7692074c8e7b26043745f6a5a",
             "58bacd2227b86a3bfc1aa4c5eb55d5ceacb101deaad97935fd10495a0a107883",
             "188376c58178a64af95053d4b9fc5e594c1f28cfbca33201a9195c186490ebf2")
PINNED = {
    # (pairwise forward vote 0, pairwise forward vote 2, pointwise vote 1)
    "chat": CHAT,
    "chat_endpoint": ("f6466ebef793e0fe31be6158669cfffc5531f2e608888857f85466613a48a972",
                      "7d64360f17139e2d3d0f40851714af7396a8049c58ed74107fc48bc9f65fb180",
                      "7b3290f62acd675dd8fead67bce387730c2542c8ccc025bdb5d9b2ccacef9f0d"),
    "completions": ("f26d44034beee6e9bb86a676729ec41bb2d7975f2911a19d57fe7b66d97fd64e",
                    "610611fd5cfd580caa31d4df8eb1dca669ae5cebd5d1ed74a03cac86ea1283e7",
                    "fda483b146634b044d276472ff9a7e6fee0f998221eb21dab87ae0946ff227c8"),
    "anthropic": ANTHROPIC,
    "batch": CHAT,  # a batch answers under the interactive key
    "anthropic_batch": ANTHROPIC,
}  # fmt: skip


@pytest.fixture(autouse=True)
def fake_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


@pytest.mark.parametrize("case", sorted(JUDGES))
def test_the_call_key_of_a_fixed_request_never_moves(case, tmp_path: Path):
    backend, args = JUDGES[case]
    jp = JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False, "judges": {"j": {"backend": backend, "args": args}}})
    judge = build_judges(jp, store_root=tmp_path / "store").judges[0]
    calls = judge.plan(PAIRS, POINTS)
    chosen = [c for c in calls if c.task == "pairwise" and c.order == "forward" and c.vote_index in (0, 2)]
    chosen += [c for c in calls if c.task == "pointwise" and c.vote_index == 1]
    assert tuple(judge._prepare(c)[1] for c in chosen) == PINNED[case]


def test_a_judge_run_keys_each_call_as_it_is_keyed_alone_though_its_votes_share_one_rendered_prompt(tmp_path: Path):
    with MockLLM() as mock:
        args = {"model": "mock", "base_url": mock.base_url, "api_key_env": None, "votes": 3}
        jp = JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False, "judges": {"j": {"backend": "openai", "args": args}}})
        judge = build_judges(jp, store_root=tmp_path / "store").judges[0]
        calls = judge.plan(PAIRS, POINTS)
        ran = [r.call_digest for r in judge.run_calls(calls)]
    assert ran == [judge._prepare(c)[1] for c in calls]
    assert len(set(ran)) == len(calls) == 3 * (2 + 1)


def test_the_key_function_itself_never_moves():
    assert call_key(backend="openai", model="m", endpoint=None, sampling={"temperature": 1.0, "max_tokens": 8},
                    prompt_bytes=b"hello", vote_index=0) == "5a89b026973004f5d0fbf0f21ef3f662078a568b05ed7ae5dcda60ee508eaf6b"  # fmt: skip
    # the endpoint is normalized: case, default port, doubled and trailing slashes do not make another server
    assert call_key(backend="anthropic", model="m", endpoint="https://API.example.com:443//v1/", sampling={},
                    prompt_bytes=b"", vote_index=4) == "32890ba6328b8408d1544ebe1fc3e9fe260b8b223fc52db186df2f1d55811706"  # fmt: skip


def test_a_cache_entry_is_written_byte_for_byte_as_before(tmp_path: Path):
    value = {"backend": "openai", "model": "m", "sampling": {"temperature": 1.0, "max_tokens": 8}, "vote_index": 0,
             "messages": [{"role": "user", "content": "hi"}], "response": '{"answer": "A"}', "finish_reason": "stop",
             "outcome": "valid", "choice": 0, "note": None, "usage": {"input_tokens": 3, "output_tokens": 5},
             "provider_model": "m-1", "cost_usd": 0.25, "latency_s": 0.5, "attempts": 1}  # fmt: skip
    cache = CallCache(tmp_path)
    cache.put("ab" * 32, value)
    assert hashlib.sha256(cache.path("ab" * 32).read_bytes()).hexdigest() == "aeb273d93dd1a03061fe3e2570fe62d2a95463bf750c35a95b4097a657ee33a6"
    assert cache.get("ab" * 32) == value
