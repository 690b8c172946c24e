"""What goes into the call layer and what comes out: an endpoint, requests (turns), replies and failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from ..config import REASONING_EFFORTS, Frozen
from ._faults import ToolCall

__all__ = [
    "COMPLETION_LEAD_IN",
    "DEFAULT_KEY_ENV",
    "Endpoint",
    "Failure",
    "Payload",
    "Reply",
    "Request",
    "Sampling",
    "Tool",
    "completion_prompt",
    "tool_result",
]

COMPLETION_LEAD_IN = "\n\nAnswer:"
"""Where a completions-mode prompt ends: the model's continuation is the answer (see `completion_prompt`)."""

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""Where a provider's key is read from when the endpoint names no variable."""

Payload = list[dict[str, Any]] | str
"""What is sent: chat messages, or one prompt string (completions mode)."""


class Sampling(Frozen):
    """Output-affecting generation settings: every field enters the call key."""

    temperature: float | None = Field(default=1.0, ge=0)
    """Sampling temperature; votes are replicates, so keep it above 0 unless you want k identical answers."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling; None leaves the provider default."""
    max_tokens: int = Field(default=512, ge=1)
    """Cap on completion tokens (also bounds the budget reservation of each call). An answer cut here
    without a readable verdict counts as `truncated`."""
    seed: int | None = None
    """Provider sampling seed where supported (OpenAI-compatible servers)."""
    reasoning_effort: Literal[REASONING_EFFORTS] | None = None  # type: ignore[valid-type]
    """How hard a reasoning model thinks: none | minimal | low | medium | high | xhigh | max; None: not sent.
    OpenAI-compatible chat: sent as `reasoning_effort` (with the answer cap as `max_completion_tokens`, the field
    reasoning models take); Anthropic: extended thinking with the budget `THINKING_BUDGETS` gives the level
    (`max_tokens` must exceed it; docs/judges.md)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further request-body fields sent as is (e.g. {top_k: 40} for vLLM, {grammar: 'root ::= " "? [^ \\n] [^\\n]*'} for a base model
    behind llama.cpp: one answer line whose first character is no blank; README, local model)."""


@dataclass(frozen=True)
class Endpoint:
    """Who answers: a provider's API, a model name and (optionally) an OpenAI-compatible base URL."""

    provider: Literal["openai", "anthropic"]
    model: str
    base_url: str | None = None
    """None: the provider's own endpoint (never one an environment variable points to). Part of the call key."""
    api: Literal["chat", "completions"] = "chat"
    """chat: messages; completions (openai only): one plain prompt, for base models."""
    api_key_env: str | None = "default"
    """The environment variable holding the key; "default": the provider's (OPENAI_API_KEY, ANTHROPIC_API_KEY);
    None: no key (a local server). The key itself is never written anywhere."""

    @property
    def backend(self) -> str:
        """The backend as the call key names it: the API mode is part of it (its prompts differ anyway)."""
        return self.provider if self.api == "chat" else f"{self.provider}-{self.api}"

    @property
    def key_env(self) -> str | None:
        return DEFAULT_KEY_ENV[self.provider] if self.api_key_env == "default" else self.api_key_env


@dataclass(frozen=True)
class Tool:
    """A function the model may call: its name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class Request:
    """One turn to send: the conversation so far (or one completions prompt), sampling, replicate, tools.

    Messages are `{"role": "system" | "user" | "assistant" | "tool", "content": str}`; an assistant turn that
    called tools carries `"tool_calls": [{"id", "name", "arguments"}]` (what `Reply.turn()` gives) and a tool's
    result is `tool_result(id, content)`. The call key is the digest of everything that decides the answer:
    endpoint, model, sampling, these messages (and tools), and `replicate`; `label` and `tag` are not in it."""

    messages: Sequence[dict[str, Any]] | None = None
    prompt: str | None = None
    """Completions mode: the whole prompt (`messages` must then be None)."""
    sampling: Sampling = field(default_factory=Sampling)
    replicate: int = 0
    """Tells apart repeated samples of one prompt (a judge's vote index)."""
    tools: Sequence[Tool] = ()
    label: str = "call"
    """Names the call in budget and log messages (e.g. "pairwise p-1")."""
    tag: Any = None
    """The caller's handle (e.g. the judge's Call), handed back to its `classify` hook; never sent nor hashed."""

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("a Request has either messages (chat) or a prompt (completions)")

    @property
    def payload(self) -> Payload:
        return self.prompt if self.prompt is not None else list(self.messages or ())

    def hashed(self) -> Any:
        """What the call key digests as the prompt: the payload, and the tools when there are any (so a
        tool-less request keeps the key it always had)."""
        if not self.tools:
            return self.payload
        return {"messages": self.payload, "tools": [t.as_dict() for t in self.tools]}


@dataclass(frozen=True)
class Failure:
    """Why a call ended without an answer: a short stable `reason` (e.g. "HTTP 500", "timeout", "circuit open",
    "batch pending", "unexpected KeyError"), the full redacted `detail`, and the attempts made. Failed calls are
    never cached: the next run asks them again."""

    reason: str
    detail: str
    attempts: int


@dataclass(frozen=True)
class Reply:
    """How one request ended: its call key, its cache entry (or error entry), and whether it came from the cache."""

    key: str
    entry: dict[str, Any]
    cached: bool

    @property
    def failure(self) -> Failure | None:
        if self.entry.get("outcome") != "error":
            return None
        return Failure(self.entry["error_reason"], self.entry.get("note") or "", int(self.entry.get("attempts") or 0))

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def text(self) -> str | None:
        return self.entry.get("response")

    @property
    def finish_reason(self) -> str | None:
        return self.entry.get("finish_reason")

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(**c) for c in self.entry.get("tool_calls") or ())

    @property
    def cost_usd(self) -> float:
        return float(self.entry.get("cost_usd") or 0.0)

    def turn(self) -> dict[str, Any]:
        """The assistant message to append to the conversation for the next turn."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text or ""}
        if self.entry.get("tool_calls"):
            msg["tool_calls"] = [dict(c) for c in self.entry["tool_calls"]]
            if self.entry.get("thinking"):  # Anthropic extended thinking: handed back with the tool results
                msg["thinking"] = [dict(b) for b in self.entry["thinking"]]
        return msg


def tool_result(call_id: str, content: str) -> dict[str, Any]:
    """The message carrying one tool's result back to the model (answers `ToolCall.id`)."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def completion_prompt(messages: Sequence[dict[str, str]]) -> str:
    """The plain prompt of completions mode: each message's text (system first), blank-line separated,
    ending with "Answer:" so the model's continuation is its answer."""
    return "\n\n".join(m["content"].strip() for m in messages) + COMPLETION_LEAD_IN
