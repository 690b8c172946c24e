"""A cached OpenAI-compatible chat call, and the LLM signal extractor built on it.

The cache is the judges' call cache (`novelty_audit.judges.CallCache`, same directory
`<store root>/cache/calls`, same key: backend, model, endpoint, output-affecting settings,
exact prompt bytes, replicate index), so one cache authority holds every model answer the project paid for.
The judges' API engine is built around votes on pairs; a signal extraction is one plain chat
completion, so the request itself is sent here through the `openai` SDK.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import LLMSpec
from ..artifacts import canonical_bytes, digest_bytes
from ..errors import ConfigError, NoveltyAuditError
from ..templates import packaged

__all__ = ["ChatAnswer", "ChatClient", "CallStats", "load_text_prompt", "LLMExtraction", "llm_extract", "parse_json_answer"]


def load_text_prompt(name: str) -> str:
    """A prompt file shipped in novelty_audit/prompts/ (its bytes enter every call key)."""
    return packaged(f"{name}.txt", missing=f"prompt novelty_audit/prompts/{name}.txt not found").text


@dataclass
class CallStats:
    """Run facts of one client (go to the run log, never into outputs)."""

    calls: int = 0
    cache_hits: int = 0
    failed: int = 0
    """Calls that failed after their retries (asked again by the next run)."""
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class ChatAnswer:
    """One call's outcome: the answer text, or the reason it failed (`failure`, e.g. "HTTP 500")."""

    key: str
    """The call key (the call-cache entry the answer is stored under)."""
    text: str | None
    failure: str | None = None
    detail: str | None = None


@dataclass
class ChatClient:
    """One model behind an OpenAI-compatible endpoint, answers cached by content."""

    spec: LLMSpec
    cache_root: Path
    purpose: str
    """What the client is for (named in errors), e.g. 'signals.llm'."""
    stats: CallStats = field(default_factory=CallStats)
    failures: dict[str, str] = field(default_factory=dict)
    """Call key → reason, for the calls of this run that failed (each distinct call once)."""
    _client: Any = None
    _failed: dict[str, ChatAnswer] = field(default_factory=dict)

    def sampling(self) -> dict[str, Any]:
        return {"temperature": self.spec.temperature, "max_tokens": self.spec.max_tokens}

    def key(self, messages: list[dict[str, str]], replicate: int = 0) -> str:
        from ..judges import call_key

        return call_key(
            backend=self.spec.backend,
            model=self.spec.model,
            endpoint=self.spec.base_url,
            sampling=self.sampling(),
            prompt_bytes=canonical_bytes(messages),
            vote_index=replicate,
        )

    def complete(self, messages: list[dict[str, str]], *, replicate: int = 0) -> str:
        """The answer text, from the cache when this exact call was answered before; a call that failed
        stops the run with its reason (exit 2; answered calls stay cached). See `ask` for failures as values.

        `replicate` tells apart repeated samples of one prompt (it is the cache key's vote index). While
        another process sharing the cache asks the same call, this one waits for its answer instead of
        paying for it again."""
        got = self.ask(messages, replicate=replicate)
        if got.failure is not None:
            raise NoveltyAuditError(
                f"{self.purpose}: the call to model '{self.spec.model}' failed: {got.failure} ({got.detail})",
                hint="answered calls are cached; rerun to resume",
            )
        assert got.text is not None
        return got.text

    def ask(self, messages: list[dict[str, str]], *, replicate: int = 0) -> ChatAnswer:
        """The answer, or the failure's reason when the call failed after its retries (nothing is cached
        then, so the next run asks it again). Only a rejected key or a missing one stops the run."""
        from ..judges import CallCache

        key = self.key(messages, replicate)
        if key in self._failed:  # asked and failed in this run already: not paid for twice
            return self._failed[key]
        cache = CallCache(self.cache_root)
        text = _cached_text(cache, key)
        if text is None:
            claim = _claim(cache, key)
            try:
                text = _cached_text(cache, key)  # the previous holder may have answered it
                if text is None:
                    return self._ask(cache, key, messages)
            finally:
                claim.release()
        self.stats.cache_hits += 1
        return ChatAnswer(key, text)

    def _ask(self, cache: Any, key: str, messages: list[dict[str, str]]) -> ChatAnswer:
        try:
            text, usage, finish = self._send(messages)
        except _CallFailed as exc:
            self.stats.failed += 1
            got = self._failed[key] = ChatAnswer(key, None, exc.reason, exc.detail)
            self.failures[key] = exc.reason
            return got
        self.stats.calls += 1
        self.stats.input_tokens += usage["input_tokens"] or 0
        self.stats.output_tokens += usage["output_tokens"] or 0
        cache.put(key, {"text": text, "model": self.spec.model, "backend": self.spec.backend, "finish_reason": finish,
                        "prompt_sha256": digest_bytes(canonical_bytes(messages)), **usage})  # fmt: skip
        return ChatAnswer(key, text)

    def _send(self, messages: list[dict[str, str]]) -> tuple[str, dict[str, int | None], str | None]:
        """(text, usage, finish_reason). HTTP faults are retried by the SDK; a malformed HTTP 200 body
        (not JSON, no choices, no message) is retried here with the same kind of backoff. A call still
        failing after `max_retries` raises `_CallFailed` with its reason."""
        import openai

        from ..judges._llm import CallFault, connection_fault, json_body
        from ..judges._openai import read_openai_answer

        if self._client is None:
            key = os.environ.get(self.spec.api_key_env) if self.spec.api_key_env else None
            if not key and self.spec.base_url is None:
                raise ConfigError(
                    f"{self.purpose}: environment variable {self.spec.api_key_env} is not set",
                    hint=f"export {self.spec.api_key_env}=… (keys are read from the environment only), or set {self.purpose}.enabled: false",
                )
            self._client = openai.OpenAI(
                api_key=key or "no-key",
                # Explicit default: the SDK would follow OPENAI_BASE_URL, outside the call key.
                base_url=self.spec.base_url or "https://api.openai.com/v1",
                timeout=self.spec.timeout_s, max_retries=self.spec.max_retries
            )
        attempts = self.spec.max_retries + 1
        for attempt in range(attempts):
            try:
                raw = self._client.chat.completions.with_raw_response.create(
                    model=self.spec.model,
                    messages=messages,
                    temperature=self.spec.temperature,
                    max_tokens=self.spec.max_tokens,
                )
            except openai.AuthenticationError:
                raise ConfigError(f"{self.purpose}: the endpoint rejected the key from {self.spec.api_key_env}") from None
            except openai.APIConnectionError as exc:
                fault = connection_fault(exc, self.spec.timeout_s)
                raise _CallFailed(fault.reason, _redact(fault.detail or "", self.spec.api_key_env)) from None
            except openai.APIStatusError as exc:
                raise _CallFailed(f"HTTP {exc.status_code}", _redact(f"{type(exc).__name__}: {exc}", self.spec.api_key_env)[:300]) from None
            except openai.APIError as exc:
                raise _CallFailed(type(exc).__name__, _redact(str(exc), self.spec.api_key_env)[:300]) from None
            try:
                answer = read_openai_answer(json_body(raw))
            except CallFault as exc:
                if attempt + 1 < attempts:
                    time.sleep(min(8.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2))  # the SDK's own schedule
                    continue
                raise _CallFailed(exc.reason, f"after {attempts} attempt(s): {exc.detail}") from None
            if answer.refused or answer.text is None:
                raise _CallFailed("refusal", f"model '{self.spec.model}' declined to answer (finish_reason={answer.finish_reason})")
            usage = {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens}
            return answer.text, usage, answer.finish_reason
        raise AssertionError("unreachable: the last attempt returns or raises")


class _CallFailed(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def _cached_text(cache: Any, key: str) -> str | None:
    hit = cache.get(key)
    return hit["text"] if hit is not None and isinstance(hit.get("text"), str) else None


def _claim(cache: Any, key: str) -> Any:
    """Block until this process holds the call's claim (another process may be asking it right now)."""
    delay = 0.05
    while (claim := cache.try_claim(key)) is None:
        time.sleep(delay)
        delay = min(2.0, delay * 2)
    return claim


def _redact(text: str, key_env: str | None) -> str:
    key = os.environ.get(key_env) if key_env else None
    return text.replace(key, "***") if key else text


_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.S)


def parse_json_answer(text: str) -> Any:
    """The JSON object in an answer (code fences and text around the outermost braces tolerated)."""
    body = _FENCE.sub("", text.strip())
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        a, b = body.find("{"), body.rfind("}")
        if a >= 0 and b > a:
            try:
                return json.loads(body[a : b + 1])
            except json.JSONDecodeError:
                return None
    return None


@dataclass(frozen=True)
class LLMExtraction:
    """What the model returned for one review, after the verbatim check."""

    accepted: list[tuple[str, str, str, int]]
    """(polarity, snippet, section, start): snippets found verbatim in a scanned section."""
    rejected: list[tuple[str, str, str]]
    """(polarity, snippet, reason): not verbatim, empty, or not a string; or the whole answer unparseable."""
    failed: str | None = None
    """The reason the call failed (no answer: nothing accepted or rejected); the next run asks it again."""
    detail: str | None = None


PROMPT_NAME = "signals-extract-v1"


def llm_extract(client: ChatClient, sections: dict[str, str], *, prompt: str | None = None) -> LLMExtraction:
    """Ask the model for originality signals in `sections` and keep only verbatim snippets."""
    template = prompt if prompt is not None else load_text_prompt(PROMPT_NAME)
    review = "\n\n".join(f"## {name.capitalize()}\n{text}" for name, text in sections.items() if text)
    messages = [{"role": "user", "content": template.replace("{review}", review)}]
    got = client.ask(messages)
    if got.failure is not None:
        return LLMExtraction([], [], failed=got.failure, detail=got.detail)
    answer = parse_json_answer(got.text or "")
    if not isinstance(answer, dict):
        return LLMExtraction([], [("", "", "answer is not a JSON object")])
    accepted: list[tuple[str, str, str, int]] = []
    rejected: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for polarity in ("positive", "negative"):
        items = answer.get(polarity, [])
        if not isinstance(items, list):
            rejected.append((polarity, repr(items)[:200], f"'{polarity}' is not a list"))
            continue
        for item in items:
            if not isinstance(item, str):
                rejected.append((polarity, repr(item)[:200], "not a string"))
                continue
            snippet = item.strip()
            if not snippet:
                rejected.append((polarity, item, "empty"))
                continue
            where = next(((name, text.find(snippet)) for name, text in sections.items() if snippet in text), None)
            if where is None:
                rejected.append((polarity, snippet, "not verbatim in the review"))
                continue
            if (polarity, snippet) in seen:
                continue
            seen.add((polarity, snippet))
            accepted.append((polarity, snippet, where[0], where[1]))
    return LLMExtraction(accepted, rejected)
