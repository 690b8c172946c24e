"""`anthropic`: Claude models through the `anthropic` SDK (Messages API)."""

from __future__ import annotations

from typing import Any

from ._base import JUDGES, Judge, JudgeContext, parse_args
from ._batch import BatchStatus
from ._llm import Answer, CallFault, LLMArgs, LLMJudge, Payload, RetryableError, expect, json_body, usage_tokens

__all__ = ["AnthropicJudge", "read_anthropic_answer"]


def read_anthropic_answer(data: dict[str, Any]) -> Answer:
    """The answer in a Messages API response body; a body without a content list is malformed (retried)."""
    blocks = expect(data, "content", list)
    texts = []
    for block in blocks:
        if not isinstance(block, dict):
            raise RetryableError("malformed response", f"a content block is {type(block).__name__}, expected object")
        if block.get("type") == "text":
            texts.append(expect(block, "text", str))
    stop = expect(data, "stop_reason", str, optional=True)
    usage = data.get("usage")
    return Answer(
        text="".join(texts),
        refused=stop == "refusal",
        finish_reason=stop,
        input_tokens=usage_tokens(usage, "input_tokens"),
        output_tokens=usage_tokens(usage, "output_tokens"),
        provider_model=data.get("model") if isinstance(data.get("model"), str) else None,
    )


class AnthropicJudge(LLMJudge):
    """Messages API; the system prompt travels in `system`, sampling seeds are not supported there."""

    backend = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"

    sdk_module = "anthropic"  # a core dependency, imported only when an API judge is built
    client_class = "AsyncAnthropic"
    default_base_url = "https://api.anthropic.com"

    def _body(self, payload: Payload) -> tuple[dict[str, Any], dict[str, Any]]:
        """(typed request fields, extra body fields) of one call: the interactive and the batch path send the same."""
        assert isinstance(payload, list), "the anthropic backend speaks only the chat (Messages) API"
        s = self.args.sampling
        system = "\n".join(m["content"] for m in payload if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.args.model,
            "max_tokens": s.max_tokens,
            "messages": [m for m in payload if m["role"] != "system"],
        }
        if system:
            body["system"] = system
        extra = dict(s.extra)
        for name in ("temperature", "top_p"):
            if getattr(s, name) is not None:
                # Sent as raw body fields: recent SDKs dropped them from the typed signature, the API keeps them.
                extra[name] = getattr(s, name)
        return body, extra

    async def _send(self, client: Any, payload: Payload) -> Answer:
        body, extra = self._body(payload)
        raw = await self._request(client.messages.with_raw_response.create(**body, extra_body=extra or None))
        return read_anthropic_answer(json_body(raw))

    # -- Message Batches: one request list, a status, a JSONL of per-request results ----------------------
    async def _batch_submit(self, client: Any, items: list[tuple[str, Payload]]) -> str:
        requests = []
        for key, payload in items:
            body, extra = self._body(payload)
            requests.append({"custom_id": key, "params": {**body, **extra}})
        batch = await self._request(client.messages.batches.create(requests=requests))
        return batch.id

    async def _batch_status(self, client: Any, batch_id: str) -> BatchStatus:
        batch = await self._request(client.messages.batches.retrieve(batch_id))
        return BatchStatus(done=batch.processing_status == "ended", state=batch.processing_status)

    async def _batch_results(self, client: Any, batch_id: str) -> dict[str, Answer | CallFault]:
        return await self._request(self._collect(client, batch_id))

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
                out[item.custom_id] = RetryableError(f"batch: {kind}", self._redact(str(getattr(err, "message", "") or result.error))[:300])
            else:  # expired, canceled
                out[item.custom_id] = RetryableError(f"batch: {result.type}", f"the provider reports the request {result.type}")
        return out


@JUDGES.register("anthropic", args=LLMArgs)
def anthropic_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """A Claude judge through the Anthropic Messages API."""
    return AnthropicJudge(ctx, parse_args(LLMArgs, args, ctx))
