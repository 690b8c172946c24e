"""What API LLM judges share: typed args, the async call engine, rate limits, retries, cost and budget.

A backend (`_openai.py`, `_anthropic.py`) only builds its client, sends one request and classifies its
errors; everything else — cache, concurrency, rate limit, retries honouring Retry-After, cost, budget,
progress, parsing — lives here, once.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import random
import time
from abc import abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from ..artifacts import canonical_bytes
from ..errors import BudgetExceededError, ConfigError
from ..config import Frozen
from ._base import JudgeContext
from ._cache import CallCache, call_key
from ._prompts import PromptTemplate, load_prompt, parse_verdict
from ._protocol import Call, CallResult, VoteJudge

__all__ = ["Answer", "Budget", "FatalCallError", "LLMArgs", "LLMJudge", "RateLimiter", "RetryableError", "Sampling"]


class Sampling(Frozen):
    """Output-affecting generation settings: every field enters the call key."""

    temperature: float | None = 1.0
    """Sampling temperature; votes are replicates, so keep it above 0 unless you want k identical answers."""
    top_p: float | None = None
    """Nucleus sampling; None leaves the provider default."""
    max_tokens: int = 512
    """Cap on completion tokens (also bounds the budget reservation of each call)."""
    seed: int | None = None
    """Provider sampling seed where supported (OpenAI-compatible servers)."""
    reasoning_effort: str | None = None
    """Provider reasoning setting for reasoning models (e.g. low | medium | high); None: not sent."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further request-body fields sent as is (e.g. {top_k: 40} for vLLM)."""


class RetrievalArgs(Frozen):
    """Related prior-work abstracts shown next to each idea."""

    corpus: str
    """Parquet/JSON/JSONL with id, title, abstract and date or year (HTML is stripped)."""
    k: int = 3
    """Abstracts per idea."""
    max_chars: int = 600
    """Abstract length shown (characters)."""


class LLMArgs(Frozen):
    """Arguments of the API LLM judges (`openai`, `anthropic`)."""

    model: str
    """Model name as the endpoint knows it."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp server, LiteLLM); None: the provider's own."""
    api_key_env: str | None = None
    """Name of the environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY);
    null for local servers that need none. The key itself is never written anywhere."""
    prompt: str = "reference-v1"
    """Pairwise template `prompts/pairwise-<prompt>.txt`: reference-v1, p1-v1 … p5-v1."""
    pointwise_prompt: str | None = None
    """Pointwise template `prompts/pointwise-<name>.txt`; default: the same name as `prompt`."""
    reasoning: Literal["brief", "none"] = "brief"
    """brief: short reasoning, then the JSON verdict; none: JSON verdict only."""
    input_form: Literal["text", "plan"] = "text"
    """How each idea is laid out: its text as published, or as a research plan."""
    votes: int = 3
    """Votes per order (pairwise) or per idea (pointwise)."""
    orders: Literal["both", "forward", "reverse"] = "both"
    """Presentation orders asked."""
    sampling: Sampling = Field(default_factory=Sampling)
    """Generation settings (all in the call key)."""
    retrieval: RetrievalArgs | None = None
    """Show related abstracts per idea; None: off."""
    concurrency: int = 8
    """Requests in flight at once for this judge."""
    requests_per_minute: float | None = None
    """Request rate limit; None: unlimited."""
    tokens_per_minute: float | None = None
    """Token rate limit (prompt bytes + max_tokens as the estimate); None: unlimited."""
    max_retries: int = 5
    """Retries on 429, 5xx, timeouts and connection errors before the call ends as `error`."""
    timeout_s: float = 120.0
    """Per-request timeout."""
    backoff_s: float = 1.0
    """First retry delay; doubles per retry (a Retry-After header takes precedence when longer)."""
    max_backoff_s: float = 60.0
    """Longest retry delay."""


class Budget:
    """A run-wide cost cap. Each new call reserves its worst-case cost first, so the cap is never crossed."""

    def __init__(self, cap_usd: float | None):
        self.cap = cap_usd
        self.spent = 0.0
        self.reserved = 0.0

    def reserve(self, amount: float, what: str) -> None:
        if self.cap is not None and self.spent + self.reserved + amount > self.cap:
            raise BudgetExceededError(
                f"budget cap ${self.cap:.4f} reached: spent ${self.spent:.4f}, in flight ${self.reserved:.4f}, "
                f"next call ({what}) may cost up to ${amount:.4f}",
                hint="raise judge.budget_usd and rerun; answered calls are cached and will not be paid again",
            )
        self.reserved += amount

    def settle(self, reserved: float, actual: float) -> None:
        self.reserved -= reserved
        self.spent += actual


class RateLimiter:
    """Spaces requests and tokens evenly (no bursts) to stay under per-minute limits."""

    def __init__(self, rpm: float | None, tpm: float | None):
        self.rpm, self.tpm = rpm, tpm
        self._next_req = 0.0
        self._next_tok = 0.0

    async def acquire(self, tokens: int) -> None:
        if not self.rpm and not self.tpm:
            return
        now = time.monotonic()
        wait = 0.0
        if self.rpm:
            start = max(now, self._next_req)
            self._next_req = start + 60.0 / self.rpm
            wait = max(wait, start - now)
        if self.tpm:
            start = max(now, self._next_tok)
            self._next_tok = start + tokens * 60.0 / self.tpm
            wait = max(wait, start - now)
        if wait > 0:
            await asyncio.sleep(wait)


@dataclass(frozen=True)
class Answer:
    """One provider response, reduced to what the judge keeps."""

    text: str | None
    refused: bool
    """The provider flagged a refusal (refusal field, content filter, stop reason)."""
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    provider_model: str | None


class RetryableError(Exception):
    """A transient failure (429, 5xx, timeout): retried with backoff; `retry_after` in seconds if given."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class FatalCallError(Exception):
    """A failure that retrying cannot fix for this call (e.g. 400): the call ends as `error`."""


def _run_coro(coro):
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from inside an event loop (a notebook, an async flow): run ours on a worker thread.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


class LLMJudge(VoteJudge):
    """An API LLM judge; subclasses name their SDK and client class and implement `_send` and `_classify`."""

    default_key_env: str = ""
    sdk_module: str = ""
    """The SDK package, imported only when a judge of this backend is built."""
    client_class: str = ""
    """Its async client class, built with our retries (the SDK's own are off so Retry-After is honoured once)."""

    def __init__(self, ctx: JudgeContext, args: LLMArgs):
        super().__init__(ctx, votes=args.votes, orders=args.orders)
        self.args = args
        self.key_env = args.api_key_env if "api_key_env" in args.model_fields_set else self.default_key_env
        self.templates: dict[str, PromptTemplate] = {"pairwise": load_prompt("pairwise", args.prompt, args.reasoning)}
        if "pointwise" in ctx.tasks:
            name = args.pointwise_prompt or args.prompt
            try:
                self.templates["pointwise"] = load_prompt("pointwise", name, args.reasoning)
            except ConfigError as exc:
                raise ConfigError(
                    f"judge {ctx.name}: {exc.message}",
                    hint="pointwise templates: reference-v1, p1-v1, p2-v1; set args.pointwise_prompt",
                ) from None
        price = ctx.prices.get(args.model)
        self.price = price
        budget = ctx.budget
        if budget is not None and budget.cap is not None and price is None:
            raise ConfigError(
                f"judge {ctx.name}: judge.budget_usd is set but model '{args.model}' has no entry in judge.prices",
                hint="add its input_per_mtok/output_per_mtok, or remove the budget cap",
            )
        self.budget: Budget = budget if budget is not None else Budget(None)
        self.cache = CallCache(ctx.cache_dir / "calls")
        self.retriever = None
        if args.retrieval is not None:
            from ._retrieval import Retriever

            self.retriever = Retriever(args.retrieval)
        self._facts = {"calls": 0, "cache_hits": 0, "deduplicated": 0, "retries": 0, "errors": 0, "cost_usd": 0.0}
        self._sdk = importlib.import_module(self.sdk_module)

    # -- backend hooks ------------------------------------------------------------------------------
    def api_key(self) -> str | None:
        if not self.key_env:
            return None
        key = os.environ.get(self.key_env)
        if not key:
            raise ConfigError(
                f"judge {self.name}: environment variable {self.key_env} is not set",
                hint=f"export {self.key_env}=… (keys are read from the environment only), or disable the judge",
            )
        return key

    def _client(self) -> Any:
        """A new async client (made inside the event loop that uses it)."""
        return getattr(self._sdk, self.client_class)(
            api_key=self.api_key() or "no-key", base_url=self.args.base_url, max_retries=0, timeout=self.args.timeout_s
        )

    @abstractmethod
    async def _send(self, client: Any, messages: list[dict[str, str]]) -> Answer:
        """Send one request; raise RetryableError / FatalCallError, or ConfigError for auth problems."""

    async def _aclose(self, client: Any) -> None:
        close = getattr(client, "close", None)
        if close is not None:
            await close()

    # -- config -------------------------------------------------------------------------------------
    def sampling(self) -> dict[str, Any]:
        return self.args.sampling.model_dump(mode="json")

    def config(self) -> dict[str, Any]:
        a = self.args
        return {
            "backend": self.backend,
            "model": a.model,
            "base_url": a.base_url,
            "prompt": a.prompt,
            "prompt_digest": self.templates["pairwise"].digest,
            "pointwise_prompt": self.templates["pointwise"].name if "pointwise" in self.templates else None,
            "pointwise_prompt_digest": self.templates["pointwise"].digest if "pointwise" in self.templates else None,
            "reasoning": a.reasoning,
            "input_form": a.input_form,
            "votes": a.votes,
            "orders": a.orders,
            "sampling": self.sampling(),
            "retrieval": self.retriever.config() if self.retriever else None,
        }

    def input_files(self):
        return self.retriever.input_files() if self.retriever else []

    def extra_evidence(self, shown) -> dict[str, str]:
        if self.retriever is None:
            return {}
        return {"retrieval": self.retriever.evidence_digest(shown), "corpus": self.retriever.corpus_digest}

    def facts(self) -> dict[str, Any]:
        return dict(self._facts)

    # -- the engine ---------------------------------------------------------------------------------
    def _prepare(self, call: Call) -> tuple[list[dict[str, str]], str]:
        evidence = self.retriever.blocks(call.shown) if self.retriever else None
        messages = self.templates[call.task].render(call.shown, form=self.args.input_form, evidence=evidence)
        key = call_key(
            backend=self.backend,
            model=self.args.model,
            sampling=self.sampling(),
            prompt_bytes=canonical_bytes(messages),
            vote_index=call.vote_index,
        )
        return messages, key

    def _result(self, key: str, entry: dict[str, Any], cached: bool) -> CallResult:
        return CallResult(
            outcome=entry["outcome"],
            choice=entry["choice"],
            call_digest=key,
            provider_model=entry.get("provider_model"),
            cost_usd=float(entry.get("cost_usd") or 0.0),
            latency_s=float(entry.get("latency_s") or 0.0),
            cached=cached,
            detail=entry.get("note"),
        )

    def _cost(self, answer: Answer) -> float:
        if self.price is None:
            return 0.0
        return (answer.input_tokens * self.price.input_per_mtok + answer.output_tokens * self.price.output_per_mtok) / 1e6

    def _worst_cost(self, prompt_bytes: int) -> float:
        if self.price is None:
            return 0.0
        # A token is at least one byte, so the prompt's byte count bounds its token count.
        return (prompt_bytes * self.price.input_per_mtok + self.args.sampling.max_tokens * self.price.output_per_mtok) / 1e6

    def run_calls(self, calls: Sequence[Call]) -> list[CallResult]:
        return _run_coro(self._run_all(calls))

    async def _run_all(self, calls: Sequence[Call]) -> list[CallResult]:
        results: list[CallResult | None] = [None] * len(calls)
        pending: dict[str, tuple[Call, list[dict[str, str]], list[int]]] = {}
        for i, call in enumerate(calls):
            messages, key = self._prepare(call)
            if key in pending:
                # Same prompt and vote index (a pair shared by both datasets): one call answers both.
                pending[key][2].append(i)
                self._facts["deduplicated"] += 1
                continue
            entry = None if self.ctx.refresh else self.cache.get(key)
            if entry is not None:
                results[i] = self._result(key, entry, cached=True)
                self._facts["cache_hits"] += 1
                continue
            pending[key] = (call, messages, [i])
        if pending:
            await self._ask_all(pending, results)
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    async def _ask_all(self, pending: dict[str, tuple[Call, list[dict[str, str]], list[int]]], results: list) -> None:
        self.api_key()  # fail before the first request when the key is missing
        limiter = RateLimiter(self.args.requests_per_minute, self.args.tokens_per_minute)
        sem = asyncio.Semaphore(max(1, self.args.concurrency))
        client = self._client()
        stop: list[Exception] = []
        progress = None
        if self.ctx.progress:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            progress = Progress(
                TextColumn(f"judge {self.name}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                console=Console(stderr=True), transient=True,
            )  # fmt: skip
            task = progress.add_task("calls", total=len(pending))
            progress.start()

        async def one(key: str, call: Call, messages: list[dict[str, str]], idxs: list[int]) -> None:
            async with sem:
                if stop:
                    return
                try:
                    entry = await self._ask(client, limiter, call, messages)
                except Exception as exc:  # noqa: BLE001  re-raised after the gather; stops new calls meanwhile
                    stop.append(exc)
                    return
            if entry["outcome"] != "error":
                # fsyncs in parallel coalesce; on the loop thread they would serialize every call behind the disk
                await loop.run_in_executor(writer, self.cache.put, key, entry)
            else:
                self._facts["errors"] += 1
            r = self._result(key, entry, cached=False)
            for i in idxs:
                results[i] = r
            if progress is not None:
                progress.advance(task)

        loop = asyncio.get_running_loop()
        writer = ThreadPoolExecutor(max(4, min(32, self.args.concurrency)), thread_name_prefix="call-cache")
        try:
            await asyncio.gather(*(one(k, c, m, idx) for k, (c, m, idx) in pending.items()))
        finally:
            writer.shutdown(wait=True)
            if progress is not None:
                progress.stop()
            await self._aclose(client)
        if stop:
            raise stop[0]

    async def _ask(self, client: Any, limiter: RateLimiter, call: Call, messages: list[dict[str, str]]) -> dict[str, Any]:
        a = self.args
        size = len(canonical_bytes(messages))
        worst = self._worst_cost(size)
        jitter = random.Random(f"{call.item_id}/{call.order}/{call.vote_index}")  # jitter only spreads retries
        last = ""
        for attempt in range(a.max_retries + 1):
            await limiter.acquire(size + a.sampling.max_tokens)
            self.budget.reserve(worst, f"{call.task} {call.item_id}")
            started = time.perf_counter()
            try:
                answer = await self._send(client, messages)
            except RetryableError as exc:
                self.budget.settle(worst, 0.0)
                last = str(exc)
                if attempt == a.max_retries:
                    break
                self._facts["retries"] += 1
                delay = min(a.max_backoff_s, a.backoff_s * 2**attempt) * (0.5 + jitter.random() / 2)
                await asyncio.sleep(max(delay, exc.retry_after or 0.0))
                continue
            except FatalCallError as exc:
                self.budget.settle(worst, 0.0)
                last = str(exc)
                break
            latency = time.perf_counter() - started
            cost = self._cost(answer)
            self.budget.settle(worst, cost)
            self._facts["calls"] += 1
            self._facts["cost_usd"] += cost
            parsed = parse_verdict(call.task, answer.text)
            outcome, choice, note = parsed.outcome, parsed.choice, parsed.note
            if answer.refused and outcome != "valid":
                outcome, note = "refusal", f"provider flagged a refusal (finish_reason={answer.finish_reason})"
            return {
                "backend": self.backend,
                "model": a.model,
                "sampling": self.sampling(),
                "vote_index": call.vote_index,
                "messages": messages,
                "response": answer.text,
                "finish_reason": answer.finish_reason,
                "outcome": outcome,
                "choice": choice,
                "note": note,
                "usage": {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens},
                "provider_model": answer.provider_model,
                "cost_usd": cost,
                "latency_s": round(latency, 6),
                "attempts": attempt + 1,
            }
        return {"outcome": "error", "choice": None, "note": f"after {a.max_retries + 1} attempt(s): {last}", "cost_usd": 0.0, "latency_s": 0.0}
