"""`anthropic`: Claude models through the Anthropic Messages API."""

from __future__ import annotations

from typing import Any

from ..llm import read_anthropic_answer
from ._base import Judge, JudgeContext, parse_args
from ._llm import AnthropicArgs, LLMJudge

__all__ = ["AnthropicJudge", "anthropic_judge", "read_anthropic_answer"]


class AnthropicJudge(LLMJudge):
    """Messages API, sent by the call layer; the system prompt travels in `system`, no sampling seeds there."""

    backend = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    sdk_module = "anthropic"  # a core dependency, imported only when an API judge is built


def anthropic_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """A Claude judge through the Anthropic Messages API."""
    return AnthropicJudge(ctx, parse_args(AnthropicArgs, args, ctx))
