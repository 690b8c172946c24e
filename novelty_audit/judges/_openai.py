"""`openai`: any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LiteLLM), chat or completions."""

from __future__ import annotations

from typing import Any

from ._base import JUDGES, Judge, JudgeContext, parse_args
from ._llm import Answer, LLMArgs, LLMJudge, Payload, RetryableError, expect, json_body, usage_tokens

__all__ = ["OpenAIJudge", "read_openai_answer"]


def read_openai_answer(data: dict[str, Any], *, completions: bool = False) -> Answer:
    """The answer in a chat-completions (or completions) response body; a body without a readable first
    choice is a malformed response (RetryableError)."""
    choices = expect(data, "choices", list)
    if not choices:
        raise RetryableError("malformed response", "response field 'choices' is an empty list")
    choice = choices[0]
    finish = expect(choice, "finish_reason", str, optional=True)
    if completions:
        text, refusal = expect(choice, "text", str), None
    else:
        msg = expect(choice, "message", dict)
        refusal = expect(msg, "refusal", str, optional=True)
        text = expect(msg, "content", str, optional=refusal is not None or finish == "content_filter")
    usage = data.get("usage")
    return Answer(
        text=text if text is not None else refusal,
        refused=bool(refusal) or finish == "content_filter",
        finish_reason=finish,
        input_tokens=usage_tokens(usage, "prompt_tokens"),
        output_tokens=usage_tokens(usage, "completion_tokens"),
        provider_model=data.get("model") if isinstance(data.get("model"), str) else None,
    )


class OpenAIJudge(LLMJudge):
    """Chat completions (or plain completions) through the `openai` SDK with its own retries off (ours
    honour Retry-After). The raw body is read here, so a malformed 200 is a retried fault, not a crash."""

    backend = "openai"
    default_key_env = "OPENAI_API_KEY"
    apis = ("chat", "completions")

    sdk_module = "openai"  # a core dependency, imported only when an API judge is built
    client_class = "AsyncOpenAI"
    default_base_url = "https://api.openai.com/v1"

    async def _send(self, client: Any, payload: Payload) -> Answer:
        s = self.args.sampling
        body: dict[str, Any] = {"model": self.args.model, "max_tokens": s.max_tokens}
        extra = dict(s.extra)
        completions = isinstance(payload, str)
        if completions:
            body["prompt"] = payload
            endpoint = client.completions
        else:
            body["messages"] = payload
            endpoint = client.chat.completions
        for name in ("temperature", "top_p", "seed", "reasoning_effort"):
            if getattr(s, name) is not None:
                if completions and name == "reasoning_effort":
                    extra[name] = s.reasoning_effort  # not in the completions signature; servers that know it read it
                else:
                    body[name] = getattr(s, name)
        raw = await self._request(endpoint.with_raw_response.create(**body, extra_body=extra or None))
        return read_openai_answer(json_body(raw), completions=completions)


@JUDGES.register("openai", args=LLMArgs)
def openai_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """An OpenAI-compatible judge (chat or completions; set args.base_url for vLLM, Ollama, llama.cpp, LiteLLM)."""
    return OpenAIJudge(ctx, parse_args(LLMArgs, args, ctx))
