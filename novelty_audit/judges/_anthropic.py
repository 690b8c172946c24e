"""`anthropic`: Claude models through the `anthropic` SDK (Messages API)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ._base import JUDGES, Judge, JudgeContext, parse_args
from ._llm import Answer, FatalCallError, LLMArgs, LLMJudge, RetryableError
from ._openai import _retry_after

__all__ = ["AnthropicJudge"]


class AnthropicJudge(LLMJudge):
    """Messages API; the system prompt travels in `system`, sampling seeds are not supported there."""

    backend = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"

    sdk_module = "anthropic"  # a core dependency, imported only when an API judge is built
    client_class = "AsyncAnthropic"

    async def _send(self, client: Any, messages: list[dict[str, str]]) -> Answer:
        sdk, s = self._sdk, self.args.sampling
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.args.model,
            "max_tokens": s.max_tokens,
            "messages": [m for m in messages if m["role"] != "system"],
        }
        if system:
            body["system"] = system
        extra = dict(s.extra)
        for name in ("temperature", "top_p"):
            if getattr(s, name) is not None:
                # Sent as raw body fields: recent SDKs dropped them from the typed signature, the API keeps them.
                extra[name] = getattr(s, name)
        try:
            resp = await client.messages.create(**body, extra_body=extra or None)
        except sdk.AuthenticationError:
            raise ConfigError(f"judge {self.name}: the endpoint rejected the key from {self.key_env}", hint="check the key") from None
        except (sdk.PermissionDeniedError, sdk.NotFoundError) as exc:
            raise ConfigError(f"judge {self.name}: {type(exc).__name__} for model '{self.args.model}' ({exc.status_code})") from None
        except sdk.RateLimitError as exc:
            raise RetryableError("429 rate limited", _retry_after(exc)) from None
        except sdk.APITimeoutError:
            raise RetryableError("timeout") from None
        except sdk.APIConnectionError as exc:
            raise RetryableError(f"connection error: {type(exc).__name__}") from None
        except sdk.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409, 529):
                raise RetryableError(f"HTTP {exc.status_code}", _retry_after(exc)) from None
            raise FatalCallError(f"HTTP {exc.status_code}") from None
        text = "".join(getattr(b, "text", "") for b in resp.content if getattr(b, "type", None) == "text")
        return Answer(
            text=text,
            refused=resp.stop_reason == "refusal",
            finish_reason=resp.stop_reason,
            input_tokens=int(resp.usage.input_tokens or 0),
            output_tokens=int(resp.usage.output_tokens or 0),
            provider_model=resp.model,
        )


@JUDGES.register("anthropic")
def anthropic_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """A Claude judge through the Anthropic Messages API."""
    return AnthropicJudge(ctx, parse_args(LLMArgs, args, ctx))
