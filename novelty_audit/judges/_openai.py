"""`openai`: any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LiteLLM), chat or completions."""

from __future__ import annotations

from typing import Any

from ..llm import read_openai_answer
from ._base import Judge, JudgeContext, parse_args
from ._llm import LLMArgs, LLMJudge

__all__ = ["OpenAIJudge", "openai_judge", "read_openai_answer"]


class OpenAIJudge(LLMJudge):
    """Chat completions (or plain completions) of an OpenAI-compatible endpoint, sent by the call layer."""

    backend = "openai"
    default_key_env = "OPENAI_API_KEY"
    apis = ("chat", "completions")
    sdk_module = "openai"  # a core dependency, imported only when an API judge is built


def openai_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """An OpenAI-compatible judge (chat or completions; set args.base_url for vLLM, Ollama, llama.cpp, LiteLLM)."""
    return OpenAIJudge(ctx, parse_args(LLMArgs, args, ctx))
