"""`openai`: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LiteLLM)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ._base import JUDGES, Judge, JudgeContext, parse_args
from ._llm import Answer, FatalCallError, LLMArgs, LLMJudge, RetryableError

__all__ = ["OpenAIJudge"]


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class OpenAIJudge(LLMJudge):
    """Chat completions through the `openai` SDK with its own retries off (ours honour Retry-After)."""

    backend = "openai"
    default_key_env = "OPENAI_API_KEY"

    sdk_module = "openai"  # a core dependency, imported only when an API judge is built
    client_class = "AsyncOpenAI"

    async def _send(self, client: Any, messages: list[dict[str, str]]) -> Answer:
        sdk, s = self._sdk, self.args.sampling
        body: dict[str, Any] = {"model": self.args.model, "messages": messages, "max_tokens": s.max_tokens}
        for name in ("temperature", "top_p", "seed", "reasoning_effort"):
            if getattr(s, name) is not None:
                body[name] = getattr(s, name)
        try:
            resp = await client.chat.completions.create(**body, extra_body=dict(s.extra) or None)
        except sdk.AuthenticationError:
            raise ConfigError(
                f"judge {self.name}: the endpoint rejected the key from {self.key_env}",
                hint="check the key and base_url",
            ) from None
        except (sdk.PermissionDeniedError, sdk.NotFoundError) as exc:
            raise ConfigError(f"judge {self.name}: {type(exc).__name__} for model '{self.args.model}' ({exc.status_code})") from None
        except sdk.RateLimitError as exc:
            raise RetryableError("429 rate limited", _retry_after(exc)) from None
        except sdk.APITimeoutError:
            raise RetryableError("timeout") from None
        except sdk.APIConnectionError as exc:
            raise RetryableError(f"connection error: {type(exc).__name__}") from None
        except sdk.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise RetryableError(f"HTTP {exc.status_code}", _retry_after(exc)) from None
            raise FatalCallError(f"HTTP {exc.status_code}") from None
        except sdk.APIResponseValidationError as exc:
            raise FatalCallError(f"response did not match the chat-completions schema: {type(exc).__name__}") from None
        if not resp.choices:
            raise FatalCallError("response without choices")
        choice = resp.choices[0]
        msg = choice.message
        refusal = getattr(msg, "refusal", None)
        usage = resp.usage
        return Answer(
            text=msg.content if msg.content is not None else refusal,
            refused=bool(refusal) or choice.finish_reason == "content_filter",
            finish_reason=choice.finish_reason,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            provider_model=resp.model,
        )


@JUDGES.register("openai")
def openai_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """An OpenAI-compatible chat-completions judge (set args.base_url for vLLM, Ollama, llama.cpp, LiteLLM)."""
    return OpenAIJudge(ctx, parse_args(LLMArgs, args, ctx))
