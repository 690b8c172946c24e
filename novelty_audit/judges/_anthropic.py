"""`anthropic`: Claude models through the `anthropic` SDK (Messages API)."""

from __future__ import annotations

from typing import Any

from ._base import JUDGES, Judge, JudgeContext, parse_args
from ._llm import Answer, LLMArgs, LLMJudge, Payload, RetryableError, expect, json_body, usage_tokens

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

    async def _send(self, client: Any, payload: Payload) -> Answer:
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
        raw = await self._request(client.messages.with_raw_response.create(**body, extra_body=extra or None))
        return read_anthropic_answer(json_body(raw))


@JUDGES.register("anthropic", args=LLMArgs)
def anthropic_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """A Claude judge through the Anthropic Messages API."""
    return AnthropicJudge(ctx, parse_args(LLMArgs, args, ctx))
