"""A scripted OpenAI-compatible (and Anthropic Messages) server on 127.0.0.1, for tests and benchmarks only.

It answers `POST /v1/chat/completions`, `POST /v1/completions` and `POST /v1/messages` with a verdict
chosen by `answer` (default: always "A"), after `latency` seconds. Faults are scripted by rules that match
the prompt text:

    mock.add_rule("FAIL500", "500")                    # every matching request → HTTP 500
    mock.add_rule("SLOW", "429", times=1, retry_after=0.05)   # first request per distinct body → 429
    mock.add_rule("JUNK", "malformed")                 # a completion with no readable verdict
    mock.add_rule("NOPE", "refusal")                   # message.refusal set (anthropic: stop_reason refusal)
    mock.add_rule("HANG", "timeout", hang_s=2.0)       # answers after the client has given up
    mock.add_rule("ECHO", "500", message="...")        # a 429/500 whose error message is this text
    mock.add_rule("CUT", "length")                     # the answer cut at max_tokens (finish_reason length)

Malformed HTTP 200 bodies (each must be a retried fault for the client, never a crash):
`truncated` (valid JSON cut in half), `html` (an HTML page), `empty_choices` (anthropic: no `content`),
`no_message` (a choice without its message; anthropic: `content: null`), `wrong_types` (fields of the
wrong JSON type), `bad_body` (`{not json`). `drop` closes the connection without an answer.

`answer(body, nth)` returns the reply text, or a dict to script a tool-calling turn (chat and Messages):

    {"content": "Let me search.", "tool_calls": [{"name": "search", "arguments": {"query": "graph nets"}}]}

answered with `tool_calls` and finish_reason `tool_calls` (Anthropic: `tool_use` blocks, stop_reason `tool_use`).
`arguments` is a dict (sent as JSON) or a string sent as is; a call's `id` defaults to `call_<turn>_<i>`, `turn`
the number of assistant turns already in the conversation, so a replayed conversation carries the same ids.
`tool_results(body)` lists the tool results a request carries (both wire formats), for scripting the next turn.

`stop()` then `start()` again serves on the same port (a restarted server); while stopped, nothing
listens there, so connections are refused.

`GET /v1/models` lists one model (counted in `probes`, not in `requests`; held too while `hold()` is on).

`hold(after=n)` keeps every request after the first n unanswered (the connection open, nothing sent back)
until `release()`; `hold()` without a release is an endpoint that accepts connections and never answers.
Each request records its arrival time (`at`, time.monotonic) and, once answered, `answered_at`.

Every request is recorded (path, headers, JSON body). Run standalone for benchmarks (its own process,
so it does not share the client's interpreter lock):

    python tests/mock_llm.py --port 8765 --latency 0.1
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

import orjson
from aiohttp import web

__all__ = ["LoopbackServer", "MockLLM", "Rule", "free_port", "tool_results"]

FAULTS = (
    "429", "500", "timeout", "malformed", "refusal", "refusal_text", "bad_body",
    "truncated", "html", "empty_choices", "no_message", "wrong_types", "length", "drop",
)  # fmt: skip
MALFORMED_200 = ("truncated", "html", "empty_choices", "no_message", "wrong_types", "bad_body")
"""Faults answered with HTTP 200 and a body no client can read a completion from."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Rule:
    match: str
    fault: str
    times: int | None = None
    """Apply only to the first `times` requests of each distinct request body; None: always."""
    retry_after: float | None = None
    hang_s: float = 5.0
    message: str | None = None
    """The error message of a 429/500 (None: a fixed one)."""
    seen: Counter = field(default_factory=Counter)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)
    """Arrival time (time.monotonic of the test's process)."""
    answered_at: float | None = None
    """When the answer was handed to the server (None: not answered, e.g. held or dropped)."""


_RECORDED = web.RequestKey("recorded", Recorded)


def _prompt_text(body: dict[str, Any]) -> str:
    parts = [body.get("system") or "", body.get("prompt") or ""]
    for m in body.get("messages", []):
        c = m.get("content")
        parts.append(c if isinstance(c, str) else orjson.dumps(c).decode())
    return "\n".join(parts)


def _apply_stop(content: str, stop: str | list[str] | None) -> str:
    """The scripted text cut before the first stop sequence, as an OpenAI-compatible server (llama.cpp, vLLM)
    does with a request's `stop`: the model's whole continuation can be scripted and the recipe tested."""
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    cuts = [content.find(s) for s in stops if s and s in content]
    return content[: min(cuts)] if cuts else content


def tool_results(body: dict[str, Any]) -> list[str]:
    """The contents of the tool results in a chat (`role: tool`) or Messages (`tool_result` block) request, in order."""
    out: list[str] = []
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            out.append(m.get("content") or "")
        elif isinstance(m.get("content"), list):
            out.extend(str(b.get("content") or "") for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
    return out


def _scripted_calls(body: dict[str, Any], script: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls of a scripted turn, each with an id (deterministic: see the module docstring) and its
    arguments as the JSON string the chat API sends."""
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    calls = []
    for i, c in enumerate(script.get("tool_calls") or []):
        args = c.get("arguments", {})
        calls.append({"id": c.get("id") or f"call_{turn}_{i}", "name": c["name"],
                      "arguments": args if isinstance(args, str) else orjson.dumps(args).decode()})  # fmt: skip
    return calls


def default_answer(body: dict[str, Any], nth: int) -> str:
    """Pairwise: pick A. Pointwise: say yes."""
    text = _prompt_text(body)
    if '"answer": "yes"' in text or "<yes or no>" in text:  # the pointwise verdict form (v1 example, v2 placeholder)
        return 'The idea is a plain combination.\n{"answer": "yes"}'
    return 'Idea A introduces a new evaluation resource.\n{"answer": "A"}'


class LoopbackServer:
    """An aiohttp application (`_app()`) served on 127.0.0.1:`port` by a thread of this process: the tests'
    mock servers. `stop()` frees the port (connections are then refused); `start()` serves again."""

    port: int
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _runner: web.AppRunner | None = None

    def _app(self) -> web.Application:
        raise NotImplementedError

    def start(self) -> Self:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._runner = web.AppRunner(self._app(), shutdown_timeout=0.1, handle_signals=False, access_log=None)
            loop.run_until_complete(self._runner.setup())
            # reuse_address: a restarted mock takes its old port back at once (no TIME_WAIT wait)
            site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024, reuse_address=True)
            loop.run_until_complete(site.start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name=type(self).__name__, daemon=True)
        self._thread.start()
        if not ready.wait(60):  # a busy 2-core machine can take seconds to start a thread's loop
            raise RuntimeError(f"{type(self).__name__} did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
            if self._thread.is_alive():
                raise RuntimeError(f"{type(self).__name__} did not stop")
        self._loop = self._thread = self._runner = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class MockLLM(LoopbackServer):
    """Start with `with MockLLM(latency=0.01) as mock:`; `mock.base_url` is the OpenAI-style /v1 root."""

    def __init__(
        self, latency: float = 0.0, answer: Callable[[dict[str, Any], int], str | dict[str, Any]] = default_answer, port: int | None = None
    ):
        self.latency = latency
        self.answer = answer
        self.port = port or free_port()
        self.rules: list[Rule] = []
        self.requests: list[Recorded] = []
        self.body_seen: Counter = Counter()
        self.inflight = 0
        self.max_inflight = 0
        """Most requests the server held at once (checks a client's concurrency bound)."""
        self.reported_model: str | None = None
        """The model id responses report (provider-side snapshot); None: `mock-<requested model>`."""
        self.probes = 0
        """GET /v1/models requests (not in `requests`: they cost nothing)."""
        self._lock = threading.Lock()
        self._hold_after: int | None = None
        self._holding = 0
        self._released = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def count(self) -> int:
        return len(self.requests)

    def add_rule(
        self, match: str, fault: str, *, times: int | None = None, retry_after: float | None = None, hang_s: float = 5.0, message: str | None = None
    ) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {FAULTS}")
        self.rules.append(Rule(match, fault, times, retry_after, hang_s, message))

    def hold(self, after: int = 0) -> None:
        """Leave every request after the first `after` (counted from the start or the last reset) unanswered
        until `release()`: the connection stays open and nothing comes back, as from a hung server."""
        self._released.clear()
        self._hold_after = after

    def release(self) -> None:
        """Answer the held requests (and the ones that come later)."""
        self._released.set()

    @property
    def held(self) -> int:
        """Requests waiting for `release()` now."""
        with self._lock:
            return self._holding

    def stop(self) -> None:
        self._released.set()  # held requests end with the server, not as tasks destroyed while pending
        super().stop()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.body_seen.clear()
            self.rules.clear()
            self.max_inflight = 0
            self._hold_after = None

    # -- server -----------------------------------------------------------------------------------
    def _fault_for(self, text: str, key: bytes) -> Rule | None:
        with self._lock:
            for rule in self.rules:
                if rule.match in text:
                    if rule.times is None:
                        return rule
                    if rule.seen[key] < rule.times:
                        rule.seen[key] += 1
                        return rule
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            response = await self._respond(request)
            recorded = request.get(_RECORDED)
            if recorded is not None and request.transport is not None and not request.transport.is_closing():
                recorded.answered_at = time.monotonic()
            return response
        finally:
            with self._lock:
                self.inflight -= 1

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = orjson.loads(raw)
        anthropic = request.path.endswith("/messages")
        completions = request.path.endswith("/v1/completions")
        with self._lock:
            recorded = Recorded(request.path, {k.lower(): v for k, v in request.headers.items()}, body)
            self.requests.append(recorded)
            key = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
            nth = self.body_seen[key]
            self.body_seen[key] += 1
            held = self._hold_after is not None and len(self.requests) > self._hold_after and not self._released.is_set()
            self._holding += held
        request[_RECORDED] = recorded
        if held:
            try:
                while not self._released.is_set():
                    await asyncio.sleep(0.01)
            finally:
                with self._lock:
                    self._holding -= 1
        text = _prompt_text(body)
        rule = self._fault_for(text, key)
        if self.latency:
            await asyncio.sleep(self.latency)
        fault = rule.fault if rule else None
        if fault == "429":
            headers = {"retry-after": str(rule.retry_after)} if rule.retry_after is not None else {}
            return web.json_response({"error": {"message": rule.message or "rate limited", "type": "rate_limit_error"}}, status=429, headers=headers)
        if fault == "500":
            return web.json_response({"error": {"message": rule.message or "server exploded", "type": "server_error"}}, status=500)
        if fault == "timeout":
            await asyncio.sleep(rule.hang_s)
        if fault == "bad_body":
            return web.Response(body=b"{not json", content_type="application/json")
        if fault == "html":
            return web.Response(text="<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html")
        if fault == "drop":
            assert request.transport is not None
            request.transport.abort()  # the client sees the connection close without an answer
            return web.Response()
        refused = fault == "refusal"
        calls: list[dict[str, Any]] = []
        if fault == "malformed":
            content = 'I think A is better. {"answer": A,, '
        elif fault == "length":
            content = "Idea A proposes a new evaluation resource, while Idea B combines familiar"
        elif fault == "refusal_text":
            content = "I cannot help with evaluating these ideas."
        elif refused:
            content = None
        else:
            scripted = self.answer(body, nth)
            if isinstance(scripted, dict):  # a tool-calling turn
                if completions:
                    return web.json_response({"error": {"message": "tool calls need the chat API", "type": "invalid_request_error"}}, status=400)
                calls = _scripted_calls(body, scripted)
                scripted = scripted.get("content")
            content = None if scripted is None else _apply_stop(scripted, None if anthropic else body.get("stop"))
        model = self.reported_model or f"mock-{body.get('model')}"
        n_in = max(1, len(text) // 4)
        n_out = max(1, (len(content or "") + sum(len(c["arguments"]) for c in calls)) // 4)
        finish = "length" if fault == "length" else "tool_calls" if calls else "stop"
        if anthropic:
            blocks = [] if content is None else [{"type": "text", "text": content}]
            if (body.get("thinking") or {}).get("type") == "enabled":  # extended thinking leads the answer, signed
                blocks.insert(0, {"type": "thinking", "thinking": "Weighing the ideas.", "signature": f"sig-{len(self.requests)}"})
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": orjson.loads(c["arguments"])} for c in calls]
            stop = "refusal" if refused else "max_tokens" if fault == "length" else "tool_use" if calls else "end_turn"
            out: dict[str, Any] = {
                "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": n_in, "output_tokens": n_out},
            }  # fmt: skip
            if fault == "empty_choices":
                del out["content"]
            elif fault == "no_message":
                out["content"] = None
            elif fault == "wrong_types":
                out["content"] = content
        elif completions:
            out = {
                "id": f"cmpl-{len(self.requests)}", "object": "text_completion", "created": 0, "model": model,
                "choices": [{"index": 0, "text": content, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
            }  # fmt: skip
        else:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
            if refused:
                message["refusal"] = "I can't help with that request."
            out = {
                "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
            }  # fmt: skip
        if not anthropic:
            if fault == "empty_choices":
                out["choices"] = []
            elif fault == "no_message":
                out["choices"] = [{"index": 0, "finish_reason": "stop"}]
            elif fault == "wrong_types":
                out["choices"] = [{"index": 0, "message": {"role": "assistant", "content": 42}, "text": 42, "finish_reason": 7}]
        if fault == "truncated":
            data = orjson.dumps(out)
            return web.Response(body=data[: len(data) // 2], content_type="application/json")
        return web.json_response(out)

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/v1/completions", self._handle)
        app.router.add_post("/v1/messages", self._handle)
        app.router.add_get("/v1/models", self._models)
        return app

    async def _models(self, request: web.Request) -> web.StreamResponse:
        """The model list (free; the call layer's probe of a silent endpoint): held like any request while
        `hold()` is on, never recorded among the paid requests; counted in `probes`."""
        with self._lock:
            self.probes += 1
            held = self._hold_after is not None and not self._released.is_set()
        while held and not self._released.is_set():
            await asyncio.sleep(0.01)
        return web.json_response({"object": "list", "data": [{"id": "mock", "object": "model"}]})



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--latency", type=float, default=0.1)
    a = ap.parse_args()
    mock = MockLLM(latency=a.latency, port=a.port)
    web.run_app(mock._app(), host="127.0.0.1", port=a.port, print=None, backlog=1024, access_log=None)


if __name__ == "__main__":
    main()
