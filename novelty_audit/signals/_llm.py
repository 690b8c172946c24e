"""The signals extractor's chat client on the call layer, and the LLM signal extractor built on it.

Every request goes through `novelty_audit.llm` (the one call layer: cache and claims, retries with backoff,
circuit breaker, error taxonomy, key redaction). A call that fails after its retries is a value here
(`ChatAnswer.failure`), never cached, so the next run asks only it; the signals stage then publishes its
outputs incomplete and exits 3, as the judge stage does. Only a missing or rejected key stops a run (exit 2).

The call keys are the ones this client always had (backend `openai-compatible` by default, sampling
temperature and max_tokens), so a warm cache answers every call; entries written before the call layer
(`{"text": ...}`) are read as well as the layer's (`{"response": ...}`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..artifacts import canonical_bytes
from ..config import CallSettings, LLMSpec
from ..errors import ConfigError, NoveltyAuditError
from ..llm import CallCache, Endpoint, LLMClient, Reply, Request, Sampling, call_key
from ..templates import packaged

__all__ = ["ChatAnswer", "ChatClient", "CallStats", "extract_messages", "load_text_prompt", "LLMExtraction", "llm_extract", "parse_json_answer"]


def load_text_prompt(name: str) -> str:
    """A prompt file shipped in novelty_audit/prompts/ (its bytes enter every call key)."""
    return packaged(f"{name}.txt", missing=f"prompt novelty_audit/prompts/{name}.txt not found").text


@dataclass
class CallStats:
    """Run facts of one client (go to the run log, never into outputs)."""

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failed: int = 0
    """Calls that failed after their retries (asked again by the next run)."""


@dataclass(frozen=True)
class ChatAnswer:
    """One call's outcome: the answer text, or the reason it failed (`failure`, e.g. "HTTP 500")."""

    key: str
    """The call key (the call-cache entry the answer is stored under)."""
    text: str | None
    failure: str | None = None
    detail: str | None = None
    refused: bool = False
    """The provider flagged a refusal (an answer, cached; `text` may be None)."""


@dataclass(frozen=True)
class _KeyedEndpoint(Endpoint):
    """An OpenAI-compatible endpoint whose call keys name the spec's backend (`openai-compatible`), as they did
    before the call layer, so a warm cache still answers."""

    key_backend: str = "openai-compatible"

    @property
    def backend(self) -> str:
        return self.key_backend


class _KeyedSampling(Sampling):
    """Sampling whose key part is temperature and max_tokens only, as these keys always held: every other
    setting is unset and never sent, so the key still holds exactly what decides the answer."""

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}


@dataclass
class ChatClient:
    """One model behind an OpenAI-compatible endpoint, every call through the call layer."""

    spec: LLMSpec
    cache_root: Path
    purpose: str
    """What the client is for (named in errors and progress lines), e.g. 'signals.llm'."""
    stats: CallStats = field(default_factory=CallStats)
    failures: dict[str, str] = field(default_factory=dict)
    """Call key → reason, for the calls of this run that failed (each distinct call once)."""
    _llm: LLMClient | None = None
    _answers: dict[str, ChatAnswer] = field(default_factory=dict)
    """This run's answers and failures by key: a call is asked at most once per run."""
    _prefetched: set[str] = field(default_factory=set)

    def sampling(self) -> dict[str, Any]:
        return {"temperature": self.spec.temperature, "max_tokens": self.spec.max_tokens}

    def _request(self, messages: list[dict[str, str]], replicate: int) -> Request:
        return Request(messages=messages, sampling=_KeyedSampling(temperature=self.spec.temperature, max_tokens=self.spec.max_tokens),
                       replicate=replicate, label=self.purpose)  # fmt: skip

    def client(self) -> LLMClient:
        """The call layer's client for this endpoint (made on first use)."""
        if self._llm is None:
            env = self.spec.api_key_env
            if not (env and os.environ.get(env)) and self.spec.base_url is None:
                raise ConfigError(
                    f"{self.purpose}: environment variable {env} is not set",
                    hint=f"export {env}=… (keys are read from the environment only), or set {self.purpose}.enabled: false",
                )
            # A local server (base_url set) needs no key: ask without one when the variable is unset.
            key_env = env if env and os.environ.get(env) else None
            endpoint = _KeyedEndpoint("openai", self.spec.model, self.spec.base_url, "chat", key_env, key_backend=self.spec.backend)
            settings = CallSettings(max_retries=self.spec.max_retries, timeout_s=self.spec.timeout_s)
            self._llm = LLMClient(endpoint, settings, cache=CallCache(self.cache_root), who=self.purpose)
        return self._llm

    def key(self, messages: list[dict[str, str]], replicate: int = 0) -> str:
        """The call key of `messages` (replicate: the key's vote index)."""
        return call_key(backend=self.spec.backend, model=self.spec.model, endpoint=self.spec.base_url,
                        sampling=self.sampling(), prompt_bytes=canonical_bytes(messages), vote_index=replicate)  # fmt: skip

    def complete(self, messages: list[dict[str, str]], *, replicate: int = 0) -> str:
        """The answer text, from the cache when this exact call was answered before; a call that failed or
        was declined stops the run with its reason (exit 2; answered calls stay cached). See `ask` for
        failures as values.

        `replicate` tells apart repeated samples of one prompt (it is the cache key's vote index)."""
        got = self.ask(messages, replicate=replicate)
        if got.failure is not None:
            raise NoveltyAuditError(
                f"{self.purpose}: the call to model '{self.spec.model}' failed: {got.failure} ({got.detail})",
                hint="answered calls are cached; rerun to resume",
            )
        if got.text is None:
            raise NoveltyAuditError(f"{self.purpose}: model '{self.spec.model}' declined to answer ({got.detail})")
        return got.text

    def ask(self, messages: list[dict[str, str]], *, replicate: int = 0) -> ChatAnswer:
        """The answer, or the failure's reason when the call failed after its retries (nothing is cached
        then, so the next run asks it again). Only a rejected key or a missing one stops the run."""
        return self.ask_many([messages], replicate=replicate)[0]

    def ask_many(self, conversations: Sequence[list[dict[str, str]]], *, replicate: int = 0) -> list[ChatAnswer]:
        """`ask` for many calls at once: the layer sends the calls not answered yet concurrently."""
        keys = [self.key(m, replicate) for m in conversations]
        todo: dict[str, list[dict[str, str]]] = {}
        for k, m in zip(keys, conversations, strict=True):
            if k not in self._answers:
                todo.setdefault(k, m)
            elif k in self._prefetched:
                self._prefetched.discard(k)  # its first use after `prefetch`: counted when it was fetched
            elif self._answers[k].failure is None:
                self.stats.cache_hits += 1  # answered earlier in this run (its cache entry is the answer)
        if todo:
            replies = self.client().ask([self._request(m, replicate) for m in todo.values()])
            for k, reply in zip(todo, replies, strict=True):
                assert reply.key == k, "the call layer's key differs from this client's (see _KeyedEndpoint)"
                self._answers[k] = self._answer(reply)
        return [self._answers[k] for k in keys]

    def prefetch(self, conversations: Sequence[list[dict[str, str]]], *, replicate: int = 0) -> None:
        """Ask these calls now, all at once (concurrently), for the `ask`s that follow: each is counted once."""
        new = {self.key(m, replicate) for m in conversations} - set(self._answers)
        self.ask_many(conversations, replicate=replicate)
        self._prefetched |= new

    def _answer(self, reply: Reply) -> ChatAnswer:
        entry = reply.entry
        if reply.failure is not None:
            self.stats.failed += 1
            self.failures[reply.key] = reply.failure.reason
            return ChatAnswer(reply.key, None, reply.failure.reason, reply.failure.detail)
        if reply.cached:
            self.stats.cache_hits += 1
        else:
            self.stats.calls += 1
            usage = entry.get("usage") or {}
            self.stats.input_tokens += usage.get("input_tokens") or 0
            self.stats.output_tokens += usage.get("output_tokens") or 0
        text = entry["response"] if "response" in entry else entry.get("text")  # the layer's entries, or older ones
        refused = entry.get("outcome") == "refusal"
        detail = f"finish_reason={entry.get('finish_reason')}" if refused or text is None else None
        refused = refused or not isinstance(text, str)
        return ChatAnswer(reply.key, None if refused else text, refused=refused, detail=detail)


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


def extract_messages(sections: dict[str, str], *, prompt: str | None = None) -> list[dict[str, str]]:
    """The chat messages that ask for the originality signals in `sections` (review section → text)."""
    template = prompt if prompt is not None else load_text_prompt(PROMPT_NAME)
    review = "\n\n".join(f"## {name.capitalize()}\n{text}" for name, text in sections.items() if text)
    return [{"role": "user", "content": template.replace("{review}", review)}]


def llm_extract(client: ChatClient, sections: dict[str, str], *, prompt: str | None = None) -> LLMExtraction:
    """Ask the model for originality signals in `sections` and keep only verbatim snippets."""
    messages = extract_messages(sections, prompt=prompt)
    got = client.ask(messages)
    if got.failure is not None:
        return LLMExtraction([], [], failed=got.failure, detail=got.detail)
    if got.text is None:
        return LLMExtraction([], [("", "", f"the model declined to answer ({got.detail})")])
    answer = parse_json_answer(got.text)
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
