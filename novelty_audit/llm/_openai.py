"""`openai`: any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LiteLLM), chat or completions."""

from __future__ import annotations

from typing import Any

import orjson

from ._faults import Answer, CallFault, RetryableError, ToolCall, expect, json_body, usage_tokens
from ._provider import BatchStatus, Provider
from ._types import Request

__all__ = ["OpenAIProvider", "read_openai_answer"]


def read_openai_answer(data: dict[str, Any], *, completions: bool = False) -> Answer:
    """The answer in a chat-completions (or completions) response body; a body without a readable first
    choice is a malformed response (RetryableError)."""
    choices = expect(data, "choices", list)
    if not choices:
        raise RetryableError("malformed response", "response field 'choices' is an empty list")
    choice = choices[0]
    finish = expect(choice, "finish_reason", str, optional=True)
    calls: tuple[ToolCall, ...] = ()
    if completions:
        text, refusal = expect(choice, "text", str), None
    else:
        msg = expect(choice, "message", dict)
        refusal = expect(msg, "refusal", str, optional=True)
        calls = _tool_calls(msg)
        text = expect(msg, "content", str, optional=refusal is not None or finish == "content_filter" or bool(calls))
    usage = data.get("usage")
    return Answer(
        text=text if text is not None else refusal,
        refused=bool(refusal) or finish == "content_filter",
        finish_reason=finish,
        input_tokens=usage_tokens(usage, "prompt_tokens"),
        output_tokens=usage_tokens(usage, "completion_tokens"),
        provider_model=data.get("model") if isinstance(data.get("model"), str) else None,
        tool_calls=calls,
    )


def _tool_calls(msg: dict[str, Any]) -> tuple[ToolCall, ...]:
    raw = expect(msg, "tool_calls", list, optional=True) or []
    out = []
    for c in raw:
        fn = expect(c, "function", dict)
        out.append(ToolCall(id=expect(c, "id", str), name=expect(fn, "name", str), arguments=expect(fn, "arguments", str)))
    return tuple(out)


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages in the chat-completions format: an assistant turn's tool calls as `function` entries."""
    if not any("tool_calls" in m or "thinking" in m for m in messages):
        return messages  # sent exactly as given (the common case: no tools)
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if k != "thinking"}  # another provider's reasoning blocks: not chat fields
        if m.get("tool_calls"):
            calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in m["tool_calls"]]
            m = {**m, "tool_calls": calls, "content": m.get("content") or None}
        out.append(m)
    return out


class OpenAIProvider(Provider):
    """Chat completions (or plain completions) through the `openai` SDK with its own retries off (ours
    honour Retry-After). The raw body is read here, so a malformed 200 is a retried fault, not a crash."""

    name = "openai"
    sdk_module = "openai"  # a core dependency, imported only when an OpenAI endpoint is used
    client_class = "AsyncOpenAI"
    default_base_url = "https://api.openai.com/v1"
    apis = ("chat", "completions")

    def body(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """(typed request fields, extra body fields) of one call: the interactive and the batch path send the same."""
        s = request.sampling
        body: dict[str, Any] = {"model": self.endpoint.model, "max_tokens": s.max_tokens}
        extra = dict(s.extra)
        completions = request.prompt is not None
        if completions:
            body["prompt"] = request.prompt
        else:
            body["messages"] = _wire_messages(list(request.messages or ()))
        for name in ("temperature", "top_p", "seed", "reasoning_effort"):
            if getattr(s, name) is not None:
                if completions and name == "reasoning_effort":
                    extra[name] = s.reasoning_effort  # not in the completions signature; servers that know it read it
                else:
                    body[name] = getattr(s, name)
        if s.reasoning_effort is not None and not completions:
            # OpenAI's reasoning models refuse `max_tokens`; `max_completion_tokens` is the same cap (thinking
            # included) and vLLM and LiteLLM read it too. Only the field name moves: the call key is the sampling.
            body["max_completion_tokens"] = body.pop("max_tokens")
        if request.tools:
            body["tools"] = [{"type": "function", "function": t.as_dict()} for t in request.tools]
        return body, extra

    async def send(self, client: Any, request: Request) -> Answer:
        import httpx

        body, extra = self.body(request)
        completions = request.prompt is not None
        # The SDK's `post` (its way to any endpoint) sends the body as built here: `create` first walks every
        # message through its typed-dict transform, a no-op for these plain fields that was a fifth of a
        # paper-scale run's CPU. Headers, timeouts and errors are the client's either way.
        path = "/completions" if completions else "/chat/completions"
        http = await self.call(client.post(path, cast_to=httpx.Response, body={**body, **extra}))
        return read_openai_answer(json_body(http), completions=completions)

    # -- Batch API: one JSONL file of requests, /v1/batches, an output file and an error file ----------
    def _batch_url(self) -> str:
        return "/v1/completions" if self.endpoint.api == "completions" else "/v1/chat/completions"

    async def batch_submit(self, client: Any, items: list[tuple[str, Request]]) -> str:
        lines = []
        for key, request in items:
            body, extra = self.body(request)
            lines.append(orjson.dumps({"custom_id": key, "method": "POST", "url": self._batch_url(), "body": {**body, **extra}}))
        upload = await self.call(client.files.create(file=("novelty-audit-batch.jsonl", b"\n".join(lines) + b"\n"), purpose="batch"))
        batch = await self.call(
            client.batches.create(input_file_id=upload.id, endpoint=self._batch_url(), completion_window="24h", metadata={"source": "novelty-audit"})
        )
        return batch.id

    async def batch_status(self, client: Any, batch_id: str) -> BatchStatus:
        batch = await self.call(client.batches.retrieve(batch_id))
        return BatchStatus(done=batch.status in ("completed", "failed", "expired", "cancelled"), state=batch.status)

    async def batch_results(self, client: Any, batch_id: str) -> dict[str, Answer | CallFault]:
        batch = await self.call(client.batches.retrieve(batch_id))
        out: dict[str, Answer | CallFault] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self.call(client.files.content(file_id))
            for raw in content.content.splitlines():
                if raw.strip():
                    key, got = self._batch_line(raw)
                    if key is not None:
                        out[key] = got
        return out

    def _batch_line(self, raw: bytes) -> tuple[str | None, Answer | CallFault]:
        """One line of an output or error file: the call's answer, or why the provider failed it."""
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None, RetryableError("malformed response", "batch result line is not JSON")
        key = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(key, str):
            return None, RetryableError("malformed response", "batch result line without custom_id")
        error = line.get("error")
        if isinstance(error, dict):
            # Redact, then cut: a key the provider echoed across the cut would otherwise leave its head behind.
            return key, RetryableError(f"batch: {error.get('code') or 'error'}", self.redact(str(error.get("message") or error))[:300])
        response = line.get("response")
        status = response.get("status_code") if isinstance(response, dict) else None
        if status != 200:
            body = response.get("body") if isinstance(response, dict) else None
            message = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
            return key, RetryableError(f"batch: HTTP {status}", self.redact(str(message or body))[:300])
        try:
            return key, read_openai_answer(response.get("body"), completions=self.endpoint.api == "completions")
        except CallFault as fault:
            return key, fault
