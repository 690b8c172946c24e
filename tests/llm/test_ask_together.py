"""Clients of one endpoint asked together (a sweep's judges): one fan-out, the endpoint's bound on requests in
flight kept, each client's replies its own and in order, a call two clients share sent once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mock_llm import MockLLM

from novelty_audit.config import CallSettings
from novelty_audit.llm import CallCache, Endpoint, LLMClient, Request, ask_together


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test")


def client(url: str, cache: Path, who: str, model: str = "mock", **settings: Any) -> LLMClient:
    return LLMClient(Endpoint("openai", model, url, api_key_env="MOCK_API_KEY"), CallSettings(backoff_s=0.01, **settings),
                     cache=CallCache(cache), who=who)  # fmt: skip


def asked(text: str, n: int) -> list[Request]:
    return [Request(messages=[{"role": "user", "content": f"{text} {i}"}]) for i in range(n)]


def echo(body: dict, nth: int) -> str:
    return body["messages"][-1]["content"].upper()


def test_clients_asked_together_keep_the_smallest_bound_and_each_get_their_own_replies_in_order(tmp_path):
    with MockLLM(latency=0.05, answer=echo) as mock:
        a, b = client(mock.base_url, tmp_path, "judge a", concurrency=5), client(mock.base_url, tmp_path, "judge b", concurrency=3)
        got_a, got_b = ask_together([(a, asked("first", 12)), (b, asked("second", 9))])
        assert mock.count == 21
        assert 1 < mock.max_inflight <= 3, "the endpoint never had more requests in flight than the smallest bound"
    assert [r.text for r in got_a] == [f"FIRST {i}" for i in range(12)]
    assert [r.text for r in got_b] == [f"SECOND {i}" for i in range(9)]
    assert a.stats["calls"] == 12 and b.stats["calls"] == 9, "each client counts its own calls"


def test_a_call_two_clients_share_is_sent_once_and_both_get_its_answer(tmp_path):
    with MockLLM(latency=0.05, answer=echo) as mock:
        a, b = client(mock.base_url, tmp_path, "judge a", concurrency=4), client(mock.base_url, tmp_path, "judge b", concurrency=4)
        got_a, got_b = ask_together([(a, asked("same", 6)), (b, asked("same", 6))])
        assert mock.count == 6
    assert [r.text for r in got_a] == [r.text for r in got_b] == [f"SAME {i}" for i in range(6)]
    assert a.stats["calls"] + b.stats["calls"] == 6


def test_the_same_replies_as_each_client_asked_alone(tmp_path):
    with MockLLM(answer=echo) as mock:
        alone = [client(mock.base_url, tmp_path / "alone", w).ask(asked(w, 5)) for w in ("a", "b")]
        together = ask_together([(client(mock.base_url, tmp_path / "together", w), asked(w, 5)) for w in ("a", "b")])
    assert [[(r.key, r.text) for r in rs] for rs in together] == [[(r.key, r.text) for r in rs] for rs in alone]


def test_clients_of_different_endpoints_are_not_asked_together(tmp_path):
    with MockLLM() as mock, pytest.raises(ValueError, match="same endpoint"):
        ask_together([(client(mock.base_url, tmp_path, "a"), asked("x", 1)), (client(mock.base_url, tmp_path, "b", model="other"), asked("x", 1))])
