"""The call layer's face: one request in, an answer or a classified failure out; turns with tool calls,
each cached by the digest of everything that decides it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from mock_llm import LoopbackServer, MockLLM, free_port

from novelty_audit.artifacts import canonical_bytes
from novelty_audit.config import CallSettings
from novelty_audit.errors import ConfigError, StorageError
from novelty_audit.llm import CallCache, Endpoint, LLMClient, Request, Sampling, Tool, call_key, tool_result

HELLO = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]
SEARCH = Tool("search", "Search prior work", {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test")


def client(url: str, cache: Path, provider: str = "openai", **settings: Any) -> LLMClient:
    return LLMClient(Endpoint(provider, "mock", url, api_key_env="MOCK_API_KEY"),  # type: ignore[arg-type]
                     CallSettings(backoff_s=0.01, **settings), cache=CallCache(cache), who="test")  # fmt: skip


def test_a_request_is_answered_once_and_then_replayed_from_the_cache(tmp_path):
    with MockLLM(answer=lambda body, nth: "hello") as mock:
        request = Request(messages=HELLO, sampling=Sampling(temperature=0.0, max_tokens=16), label="greeting")
        [first] = client(mock.base_url, tmp_path).ask([request])
        [again] = client(mock.base_url, tmp_path).ask([request])
        assert mock.count == 1
    assert first.ok and first.text == "hello" and not first.cached and first.failure is None
    assert again.cached and again.text == "hello" and again.key == first.key
    # the key is the one the judges always used: backend, model, endpoint, sampling, prompt bytes, replicate
    assert first.key == call_key(backend="openai", model="mock", endpoint=mock.base_url, sampling=request.sampling.model_dump(mode="json"),
                                 prompt_bytes=canonical_bytes(HELLO), vote_index=0)  # fmt: skip


def test_replicates_are_distinct_calls_and_equal_requests_are_asked_once(tmp_path):
    with MockLLM() as mock:
        requests = [Request(messages=HELLO, replicate=r) for r in (0, 1, 0)]
        replies = client(mock.base_url, tmp_path).ask(requests)
        assert mock.count == 2
    assert replies[0].key == replies[2].key != replies[1].key


def test_a_failed_call_is_a_classified_failure_that_is_never_cached(tmp_path):
    with MockLLM() as mock:
        mock.add_rule("Say hello", "500")
        [reply] = client(mock.base_url, tmp_path, max_retries=1).ask([Request(messages=HELLO)])
        assert mock.count == 2  # the first attempt and one retry
        [again] = client(mock.base_url, tmp_path, max_retries=0).ask([Request(messages=HELLO)])
        assert mock.count == 3, "a failure is asked again by the next run"
    assert not reply.ok and reply.failure.reason == "HTTP 500" and reply.failure.attempts == 2
    assert "server exploded" in reply.failure.detail and not again.cached


def test_a_call_stays_claimed_until_its_answer_is_on_disk(tmp_path, monkeypatch):
    # Entries are written by a writer thread after the call has moved on; a process waiting on the claim
    # must not get it before the answer it waits for can be read.
    seen_while_writing: list[bool] = []
    put = CallCache.put

    def checking_put(self: CallCache, key: str, value: dict[str, Any], **kw: Any) -> None:
        seen_while_writing.append(CallCache(self.root).try_claim(key) is None)
        put(self, key, value, **kw)

    monkeypatch.setattr(CallCache, "put", checking_put)
    with MockLLM() as mock:
        replies = client(mock.base_url, tmp_path).ask([Request(messages=HELLO, replicate=r) for r in range(3)])
    assert seen_while_writing == [True, True, True], "each claim was held while its entry was written"
    for reply in replies:
        assert CallCache(tmp_path).get(reply.key) is not None, "written before ask returned"
        claim = CallCache(tmp_path).try_claim(reply.key)
        assert claim is not None, "and released after"
        claim.release()


def test_an_answer_the_cache_cannot_keep_is_still_returned_and_asked_again_next_run(tmp_path, monkeypatch, capfd):
    def failing_disk(self: CallCache, key: str, value: dict[str, Any], **kw: Any) -> None:
        raise OSError(5, "Input/output error")

    with MockLLM(answer=lambda body, nth: "hello") as mock:
        with monkeypatch.context() as m:
            m.setattr(CallCache, "put", failing_disk)
            [reply] = client(mock.base_url, tmp_path).ask([Request(messages=HELLO)])
        assert reply.ok and reply.text == "hello" and not reply.cached
        assert "1 answers could not be kept in the call cache (OSError (1))" in capfd.readouterr().err
        [again] = client(mock.base_url, tmp_path).ask([Request(messages=HELLO)])
        assert mock.count == 2 and not again.cached and again.text == "hello"


def test_a_full_disk_stops_sending_and_the_ask_raises_one_error_naming_the_path(tmp_path, monkeypatch):
    def full_disk(self: CallCache, key: str, value: dict[str, Any], **kw: Any) -> None:
        raise OSError(28, "No space left on device", str(self.path(key)))

    requests = [Request(messages=[{"role": "user", "content": f"hello {i}"}]) for i in range(40)]
    with MockLLM(latency=0.05) as mock, monkeypatch.context() as m:
        m.setattr(CallCache, "put", full_disk)
        with pytest.raises(StorageError, match=f"no space left on the device writing {tmp_path}"):
            client(mock.base_url, tmp_path, concurrency=2).ask(requests)
        assert mock.count < 10, f"{mock.count} requests: an answer that cannot be kept is not paid for again and again"


def test_a_user_error_stops_the_ask_instead_of_failing_each_call(tmp_path, monkeypatch):
    monkeypatch.delenv("MOCK_API_KEY")
    with MockLLM() as mock, pytest.raises(ConfigError, match="MOCK_API_KEY is not set"):
        client(mock.base_url, tmp_path).ask([Request(messages=HELLO)])
    assert mock.count == 0


def test_tools_enter_the_key_and_a_request_without_tools_keeps_its_key(tmp_path):
    llm = client("http://127.0.0.1:9/v1", tmp_path)
    plain, tooled = Request(messages=HELLO), Request(messages=HELLO, tools=(SEARCH,))
    assert llm.key(plain) != llm.key(tooled)
    assert llm.key(Request(messages=HELLO, label="other", tag=object())) == llm.key(plain), "label and tag are not in the key"


class ToolLLM(LoopbackServer):
    """A scripted agent endpoint: until a tool result is in the conversation it calls `search`; then it answers
    with the result it was given. Speaks OpenAI chat completions and Anthropic Messages."""

    def __init__(self) -> None:
        self.port = free_port()
        self.bodies: list[dict[str, Any]] = []

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        return app

    async def _openai(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        self.bodies.append(body)
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        usage = {"prompt_tokens": 10, "completion_tokens": 5}
        if results:
            msg = {"role": "assistant", "content": f"novel: {results[-1]}"}
            return web.json_response({"model": "mock", "choices": [{"message": msg, "finish_reason": "stop"}], "usage": usage})
        call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"query": "graph"}'}}
        msg = {"role": "assistant", "content": None, "tool_calls": [call]}
        return web.json_response({"model": "mock", "choices": [{"message": msg, "finish_reason": "tool_calls"}], "usage": usage})

    async def _anthropic(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        self.bodies.append(body)
        results = [b["content"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]
        usage = {"input_tokens": 10, "output_tokens": 5}
        if results:
            return web.json_response({"model": "mock", "content": [{"type": "text", "text": f"novel: {results[-1]}"}], "stop_reason": "end_turn", "usage": usage})
        blocks = [{"type": "text", "text": "Let me search."}, {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "graph"}}]
        return web.json_response({"model": "mock", "content": blocks, "stop_reason": "tool_use", "usage": usage})


async def _agent(llm: LLMClient) -> tuple[str | None, list[dict[str, Any]], int]:
    """A two-round tool loop as an agent would write it: ask, run the tools asked for, ask again."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Is a graph network for molecules novel?"}]
    cached = 0
    for _ in range(4):
        [reply] = await llm.ask_async([Request(messages=list(messages), tools=(SEARCH,), sampling=Sampling(temperature=0.0))])
        assert reply.ok, reply.failure
        cached += reply.cached
        messages.append(reply.turn())
        if not reply.tool_calls:
            return reply.text, messages, cached
        for call in reply.tool_calls:
            query = orjson.loads(call.arguments)["query"]
            messages.append(tool_result(call.id, f"2 papers on {query}"))
    raise AssertionError("the agent never answered")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_tool_calling_conversation_is_asked_turn_by_turn_and_replayed_from_the_cache(provider, tmp_path):
    with ToolLLM() as server:
        url = f"http://127.0.0.1:{server.port}" + ("/v1" if provider == "openai" else "")
        text, messages, cached = asyncio.run(_agent(client(url, tmp_path, provider)))
        assert len(server.bodies) == 2 and cached == 0
        replay, replayed_messages, cached_again = asyncio.run(_agent(client(url, tmp_path, provider)))
        assert len(server.bodies) == 2, "the second run asked the endpoint"
    assert text == replay == "novel: 2 papers on graph"
    assert cached_again == 2 and replayed_messages == messages
    call = messages[1]["tool_calls"][0]
    assert call["name"] == "search" and orjson.loads(call["arguments"]) == {"query": "graph"}
    second = server.bodies[1]
    if provider == "openai":
        assert second["tools"][0]["function"]["name"] == "search"
        assert second["messages"][1]["tool_calls"][0]["function"]["name"] == "search"
        assert second["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "2 papers on graph"}
    else:
        assert second["tools"][0]["input_schema"] == SEARCH.parameters
        assert second["messages"][1]["content"][1] == {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "graph"}}
        assert second["messages"][2] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "2 papers on graph"}]}
