"""`anthropic`: Claude models through the `anthropic` SDK (Messages API)."""

from __future__ import annotations

from typing import Any

import orjson

from ._faults import Answer, CallFault, RetryableError, ToolCall, expect, json_body, usage_tokens
from ._provider import BatchStatus, Provider
from ._types import Request

__all__ = ["THINKING_BUDGETS", "AnthropicProvider", "check_anthropic_sampling", "read_anthropic_answer", "thinking"]

THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32000,
    "max": 60000,
}
"""`sampling.reasoning_effort` → the extended-thinking `budget_tokens` sent to Anthropic's Messages API (`none`:
thinking disabled). The API takes budgets from 1024 (`minimal`) up to below `max_tokens`, which counts the thinking
too; each level doubles or quadruples the one below (docs/judges.md has the table)."""


def thinking(effort: str | None) -> dict[str, Any] | None:
    """The Messages API `thinking` field for a reasoning effort; None: not sent (no effort set)."""
    if effort is None:
        return None
    if effort == "none":
        return {"type": "disabled"}
    return {"type": "enabled", "budget_tokens": THINKING_BUDGETS[effort]}


def check_anthropic_sampling(sampling: Any) -> None:
    """ValueError when Anthropic cannot honour `sampling` (a `Sampling`) as written: with extended thinking on,
    `max_tokens` must exceed the thinking budget, temperature must stay 1 and top_p at least 0.95 (the API's rules
    for thinking), so a run is refused when params load instead of failing on its first call."""
    spec = thinking(sampling.reasoning_effort)
    if spec is None or spec["type"] != "enabled":
        return
    budget, effort = spec["budget_tokens"], sampling.reasoning_effort
    if sampling.max_tokens <= budget:
        raise ValueError(
            f"sampling.max_tokens {sampling.max_tokens} must exceed the extended-thinking budget of reasoning_effort "
            f"'{effort}' ({budget} tokens; the thinking counts toward max_tokens): set max_tokens to at least "
            f"{budget + 512}, room for the answer included"
        )
    if sampling.temperature not in (None, 1.0):
        raise ValueError(f"sampling.temperature {sampling.temperature}: Anthropic's extended thinking (reasoning_effort "
                         f"'{effort}') takes no temperature but 1; set temperature: 1 or null, or drop reasoning_effort")
    if sampling.top_p is not None and sampling.top_p < 0.95:
        raise ValueError(f"sampling.top_p {sampling.top_p}: Anthropic's extended thinking takes top_p from 0.95 to 1")


def read_anthropic_answer(data: dict[str, Any]) -> Answer:
    """The answer in a Messages API response body; a body without a content list is malformed (retried)."""
    blocks = expect(data, "content", list)
    texts = []
    calls = []
    thoughts = []
    for block in blocks:
        if not isinstance(block, dict):
            raise RetryableError("malformed response", f"a content block is {type(block).__name__}, expected object")
        if block.get("type") in ("thinking", "redacted_thinking"):
            thoughts.append(block)  # never part of the answer text; kept to be handed back after a tool call
        elif block.get("type") == "text":
            texts.append(expect(block, "text", str))
        elif block.get("type") == "tool_use":
            args = orjson.dumps(expect(block, "input", dict), option=orjson.OPT_SORT_KEYS).decode()
            calls.append(ToolCall(id=expect(block, "id", str), name=expect(block, "name", str), arguments=args))
    stop = expect(data, "stop_reason", str, optional=True)
    usage = data.get("usage")
    return Answer(
        text="".join(texts),
        refused=stop == "refusal",
        finish_reason=stop,
        input_tokens=usage_tokens(usage, "input_tokens"),
        output_tokens=usage_tokens(usage, "output_tokens"),
        provider_model=data.get("model") if isinstance(data.get("model"), str) else None,
        tool_calls=tuple(calls),
        thinking=tuple(thoughts),
    )


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Non-system messages in the Messages API format: tool calls as `tool_use` blocks, tool results as
    `tool_result` blocks of a user turn."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "system":
            continue
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)  # the results of one turn's calls travel together
            else:
                out.append({"role": "user", "content": [block]})
        elif m.get("tool_calls"):
            # Extended thinking: the turn's thinking blocks lead it, unchanged, or the API refuses the tool results.
            blocks: list[dict[str, Any]] = [dict(b) for b in m.get("thinking") or ()]
            blocks += [{"type": "text", "text": m["content"]}] if m.get("content") else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": orjson.loads(c["arguments"] or "{}")} for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({k: v for k, v in m.items() if k != "thinking"})
    return out


class AnthropicProvider(Provider):
    """Messages API; the system prompt travels in `system`, sampling seeds are not supported there."""

    name = "anthropic"
    sdk_module = "anthropic"  # a core dependency, imported only when an Anthropic endpoint is used
    client_class = "AsyncAnthropic"
    default_base_url = "https://api.anthropic.com"

    def body(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """(typed request fields, extra body fields) of one call: the interactive and the batch path send the same."""
        assert request.messages is not None, "the anthropic backend speaks only the chat (Messages) API"
        messages = list(request.messages)
        s = request.sampling
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {"model": self.endpoint.model, "max_tokens": s.max_tokens, "messages": _wire_messages(messages)}
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools]
        extra = dict(s.extra)
        if (spec := thinking(s.reasoning_effort)) is not None:
            body["thinking"] = spec  # the provider's form of reasoning_effort (THINKING_BUDGETS)
        for name in ("temperature", "top_p"):
            if getattr(s, name) is not None:
                # Sent as raw body fields: recent SDKs dropped them from the typed signature, the API keeps them.
                extra[name] = getattr(s, name)
        return body, extra

    async def send(self, client: Any, request: Request) -> Answer:
        body, extra = self.body(request)
        raw = await self.call(client.messages.with_raw_response.create(**body, extra_body=extra or None))
        return read_anthropic_answer(json_body(raw))

    # -- Message Batches: one request list, a status, a JSONL of per-request results ----------------------
    async def batch_submit(self, client: Any, items: list[tuple[str, Request]]) -> str:
        requests = []
        for key, request in items:
            body, extra = self.body(request)
            requests.append({"custom_id": key, "params": {**body, **extra}})
        batch = await self.call(client.messages.batches.create(requests=requests))
        return batch.id

    async def batch_status(self, client: Any, batch_id: str) -> BatchStatus:
        batch = await self.call(client.messages.batches.retrieve(batch_id))
        return BatchStatus(done=batch.processing_status == "ended", state=batch.processing_status)

    async def batch_results(self, client: Any, batch_id: str) -> dict[str, Answer | CallFault]:
        return await self.call(self._collect(client, batch_id))

    async def _collect(self, client: Any, batch_id: str) -> dict[str, Answer | CallFault]:
        out: dict[str, Answer | CallFault] = {}
        async for item in await client.messages.batches.results(batch_id):
            result = item.result
            if result.type == "succeeded":
                try:
                    out[item.custom_id] = read_anthropic_answer(result.message.model_dump(mode="json"))
                except CallFault as fault:
                    out[item.custom_id] = fault
            elif result.type == "errored":
                err = getattr(result.error, "error", None)
                kind = getattr(err, "type", None) or "error"
                # Redact, then cut (a key echoed across the cut would leave its head behind).
                out[item.custom_id] = RetryableError(f"batch: {kind}", self.redact(str(getattr(err, "message", "") or result.error))[:300])
            else:  # expired, canceled
                out[item.custom_id] = RetryableError(f"batch: {result.type}", f"the provider reports the request {result.type}")
        return out
