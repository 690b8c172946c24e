"""What API LLM judges share: typed args, the async call engine, rate limits, retries, cost and budget.

A backend (`_openai.py`, `_anthropic.py`) only builds its request, sends it and reads the JSON body it
gets back; everything else — cache and inter-process claims, concurrency, rate limit, retries honouring
Retry-After, the circuit breaker, error reasons, cost, budget, progress, parsing — lives here, once.

Every call ends as exactly one outcome. Whatever goes wrong with one call (a 500, a malformed 200, a
dead endpoint, a bug in reading an answer) ends that call as `error` with a short, stable
`error_reason`; only user errors (a rejected key, an unknown model, the budget cap) stop the run.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import random
import signal
import sys
import threading
import time
from abc import abstractmethod
from collections import Counter, deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import Field, model_validator

from ..artifacts import canonical_bytes
from ..config import Frozen, Price
from ..errors import BudgetExceededError, ConfigError
from ._base import JudgeContext
from ._batch import has_open_batches, run_batches
from ._budget import Budget
from ._cache import CallCache, CallClaim, call_key
from ._guard import Guard
from ._prompts import PromptTemplate, load_prompt, parse_verdict, template_knobs
from ._protocol import Call, CallResult, VoteJudge
from ._s2 import S2Args

__all__ = [
    "Answer",
    "Budget",
    "CallFault",
    "FatalCallError",
    "LLMArgs",
    "LLMJudge",
    "RateLimiter",
    "RetryableError",
    "Sampling",
    "completion_prompt",
    "connection_fault",
    "json_body",
]

log = logging.getLogger(__name__)

COMPLETION_LEAD_IN = "\n\nAnswer:"
"""Where a completions-mode prompt ends: the model's continuation is the answer (see `completion_prompt`)."""
TRUNCATING_FINISH = ("length", "max_tokens")
"""finish_reason (OpenAI) / stop_reason (Anthropic) values of an answer cut at max_tokens."""
PROGRESS_EVERY_S = 30.0
"""Without a terminal, a progress line at least this often while calls are out (and at every 10% of the calls)."""
STOP_GRACE_S = 10.0
"""After SIGTERM/SIGINT, how long requests already sent may take to be answered (and cached); nothing new is sent."""
_CLAIM_POLL_S = (0.05, 2.0)
"""First and longest wait between looks at a call another process is asking."""


class Sampling(Frozen):
    """Output-affecting generation settings: every field enters the call key."""

    temperature: float | None = 1.0
    """Sampling temperature; votes are replicates, so keep it above 0 unless you want k identical answers."""
    top_p: float | None = None
    """Nucleus sampling; None leaves the provider default."""
    max_tokens: int = 512
    """Cap on completion tokens (also bounds the budget reservation of each call). An answer cut here
    without a readable verdict counts as `truncated`."""
    seed: int | None = None
    """Provider sampling seed where supported (OpenAI-compatible servers)."""
    reasoning_effort: str | None = None
    """Provider reasoning setting for reasoning models (e.g. low | medium | high); None: not sent."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further request-body fields sent as is (e.g. {top_k: 40} for vLLM, {stop: ["\\n\\n"]} for a base model)."""


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
    """OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp server, LiteLLM); None: the provider's own.
    Part of the call key: the same model name on two servers never shares answers."""
    api_key_env: str | None = None
    """Name of the environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY);
    null for local servers that need none. The key itself is never written anywhere."""
    api: Literal["chat", "completions"] = "chat"
    """`openai` backend only. chat: /v1/chat/completions with the rendered messages (instruction-tuned
    models). completions: /v1/completions with one plain-text prompt — system and user text, then
    "Answer:" — for base models, which behind a chat endpoint only continue the chat template."""
    prompt: str = "reference-v1"
    """Pairwise template: a packaged name (`novelty_audit/prompts/pairwise-<prompt>.txt`: reference-v1, p1-v1 …
    p5-v1) or a project file (`prompts/my-judge.jinja2` or `.txt`; see prompts/README.md)."""
    pointwise_prompt: str | None = None
    """Pointwise template (packaged `pointwise-<name>.txt`, or a project file); default: the same as `prompt`."""
    reasoning: Literal["brief", "none"] = "brief"
    """brief: short reasoning, then the JSON verdict; none: JSON verdict only."""
    input_form: Literal["text", "plan"] = "text"
    """How each idea is laid out: its text as published, or as a research plan."""
    guard: Guard = Field(default_factory=Guard)
    """Prompt-injection mitigations ({delimit, data_notice, strip_address}; all off): measured by the injection
    probe, part of the config digest when on (docs/design/probe.md)."""
    votes: int = Field(3, ge=1)
    """Votes per order (pairwise) or per idea (pointwise)."""
    orders: Literal["both", "forward", "reverse"] = "both"
    """Presentation orders asked."""
    sampling: Sampling = Field(default_factory=Sampling)
    """Generation settings (all in the call key)."""
    retrieval: RetrievalArgs | S2Args | None = None
    """Show related abstracts per idea: `{corpus: ...}` (local corpus) or `{source: semantic-scholar, ...}`
    (Graph API search, judges/_s2.py); None: off."""
    price: Price | None = None
    """This judge's price in USD per million tokens, overriding `judge.prices` (0 allowed)."""
    local: bool = False
    """A local endpoint (Ollama, llama.cpp, vLLM on your machine): calls cost nothing, so no price is
    needed and `judge.budget_usd` never stops it."""
    concurrency: int = 8
    """Requests in flight at once for this judge (backoff waits do not hold a slot)."""
    requests_per_minute: float | None = None
    """Request rate limit; None: unlimited."""
    tokens_per_minute: float | None = None
    """Token rate limit (prompt bytes + max_tokens as the estimate); None: unlimited."""
    max_retries: int = 5
    """Retries on 429, 5xx, timeouts, connection errors and malformed responses before the call ends as `error`."""
    timeout_s: float = 120.0
    """Per-request timeout."""
    connect_timeout_s: float = 10.0
    """Time to open a connection (capped at timeout_s): an endpoint that cannot be reached counts toward
    the circuit breaker after this long, not after the whole request timeout."""
    backoff_s: float = 1.0
    """First retry delay; doubles per retry (a Retry-After header takes precedence when longer)."""
    max_backoff_s: float = 60.0
    """Longest retry delay."""
    circuit_breaker: int = 5
    """After this many consecutive calls without an answer (connection refused or reset, connect or read
    timeout) the endpoint counts as down: nothing more is sent to it in this run and the remaining calls end
    as `error` with reason "circuit open" (they are asked again next run). An endpoint that answers, even
    with an error, is up. 0: never give up early."""
    batch: bool = False
    """Send the calls not yet cached as provider batches (OpenAI Batch API, Anthropic Message Batches) at the
    batch price instead of one request each; answers land in the same call cache under the same keys, so
    verdicts equal an interactive run's. The batch id is recorded in the store before polling: a killed run
    resumes the same batch (docs/design/judging.md, "Provider batches")."""
    batch_discount: float = 0.5
    """Batch price as a share of the interactive price (both providers charge half today)."""
    batch_poll_s: float = 30.0
    """Seconds between status polls of a running batch."""
    batch_max_wait_s: float = 24 * 3600.0
    """How long this run polls; a batch still running then ends its calls as `error` ("batch pending") and
    the next run resumes polling it (never resubmits)."""
    batch_failures: Literal["interactive", "next-batch"] = "interactive"
    """What happens to calls a batch failed (OpenAI error file, Anthropic errored/expired results):
    interactive: asked at once, one request each, at the interactive price; next-batch: left as `error`
    (not cached), so the next run submits them in a new batch."""
    batch_max_requests: int = 50000
    """Calls per batch (the providers' limits: OpenAI 50,000, Anthropic 100,000); more make several batches."""

    @model_validator(mode="after")
    def _price_or_local(self) -> LLMArgs:
        if self.local and self.price is not None and (self.price.input_per_mtok or self.price.output_per_mtok):
            raise ValueError("local: true means the calls cost nothing; drop `price` or set local: false")
        if self.circuit_breaker < 0:
            raise ValueError("circuit_breaker must be ≥ 0 (0: off)")
        if not 0 < self.batch_discount <= 1:
            raise ValueError("batch_discount must be in (0, 1] (0.5: half the interactive price)")
        if self.batch_max_requests < 1 or self.batch_poll_s < 0 or self.batch_max_wait_s < 0:
            raise ValueError("batch_max_requests must be ≥ 1, batch_poll_s and batch_max_wait_s ≥ 0")
        return self


@dataclass(frozen=True)
class Answer:
    """One provider response, reduced to what the judge keeps."""

    text: str | None
    refused: bool
    """The provider flagged a refusal (refusal field, content filter, stop reason)."""
    finish_reason: str | None
    input_tokens: int | None
    """None when the response reported no usage (the call is then charged its worst case)."""
    output_tokens: int | None
    provider_model: str | None


class CallFault(Exception):
    """One failed attempt: `reason` is a short stable category (no host, port, key or time), `detail` the
    full message for the run facts."""

    def __init__(self, reason: str, detail: str | None = None, *, retry_after: float | None = None, connection: bool = False):
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail or reason
        self.retry_after = retry_after
        self.connection = connection
        """No answer came from the endpoint (refused, reset, connect or read timeout): counts toward the
        circuit breaker. A hung endpoint accepts connections and answers nothing, so a timeout counts too."""


class RetryableError(CallFault):
    """A transient failure (429, 5xx, timeout, connection, malformed 200): retried with backoff."""


class FatalCallError(CallFault):
    """A failure that retrying cannot fix for this call (e.g. 400): the call ends as `error`."""


def json_body(raw: Any) -> dict[str, Any]:
    """The JSON object of an HTTP 200 response (an SDK raw response); anything else is a malformed
    response, retried like a 500."""
    http = raw.http_response  # the same attribute on both SDKs' raw responses; the body is already read
    content = http.content
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        ctype = http.headers.get("content-type", "no content type")
        raise RetryableError("malformed response", f"HTTP 200 body is not JSON ({ctype}, {len(content)} bytes): {exc}") from None
    if not isinstance(data, dict):
        raise RetryableError("malformed response", f"HTTP 200 body is JSON {type(data).__name__}, not an object")
    return data


def expect(obj: Any, name: str, kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
    """`obj[name]` if it has the expected type (None allowed when optional), else a malformed response."""
    value = obj.get(name) if isinstance(obj, dict) else None
    if value is None and optional:
        return None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        got = "missing" if value is None else type(value).__name__
        raise RetryableError("malformed response", f"response field '{name}' is {got}, expected {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__


def usage_tokens(usage: Any, name: str) -> int | None:
    """A token count from a usage object, or None when absent or not a count."""
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def connection_fault(exc: BaseException, timeout_s: float) -> RetryableError:
    """A fault for an SDK connection error, its reason read from the underlying cause (refused, reset, ...).

    The detail names the exception the reason was read from, not the end of the chain: `__context__` also
    links exceptions that were merely being handled when the real cause was raised (an unrelated
    "RuntimeError: no running event loop" deep in an HTTP library), which say nothing about this call."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 12 and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__

    def first(test) -> BaseException | None:
        # the deepest match: the library's own exception (httpcore's ReadTimeout), not the SDK's wrapper of it
        return next((c for c in reversed(chain) if test(c)), None)

    def named(*names: str) -> BaseException | None:
        return first(lambda c: type(c).__name__ in names)

    def detail(cause: BaseException | None) -> str:
        head = f"{type(exc).__name__}: {exc}"
        return head if cause is None or cause is exc else f"{head} ({type(cause).__name__}: {cause})"

    if (c := first(lambda c: isinstance(c, ConnectionRefusedError))) is not None:
        return RetryableError("connection refused", detail(c), connection=True)
    if (c := first(lambda c: isinstance(c, ConnectionResetError))) is not None:
        return RetryableError("connection reset", detail(c), connection=True)
    if (c := named("ConnectTimeout")) is not None:
        return RetryableError("connect timeout", f"no connection within {timeout_s} s: {detail(c)}", connection=True)
    if (c := named("ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException", "APITimeoutError")) is not None:
        # Connected, then nothing within the timeout: a hung endpoint looks exactly like this, so it counts
        # toward the breaker (a server that is slow but answers resets the streak with each answer).
        return RetryableError("timeout", f"no answer within {timeout_s} s: {detail(c)}", connection=True)
    if (c := named("RemoteProtocolError")) is not None:
        # The server accepted the connection: it is up, if unwell, so this does not count toward the breaker.
        return RetryableError("connection dropped", detail(c))
    if (c := named("gaierror")) is not None:
        return RetryableError("name resolution failed", detail(c), connection=True)
    # Otherwise the operating system's error if there is one, else the immediate cause.
    cause = next((c for c in chain if isinstance(c, OSError)), chain[1] if len(chain) > 1 else None)
    return RetryableError("connection error", detail(cause), connection=True)


def completion_prompt(messages: Sequence[dict[str, str]]) -> str:
    """The plain prompt of completions mode: each message's text (system first), blank-line separated,
    ending with "Answer:" so the model's continuation is its answer."""
    return "\n\n".join(m["content"].strip() for m in messages) + COMPLETION_LEAD_IN


class RateLimiter:
    """Spaces requests and tokens evenly (no bursts) to stay under per-minute limits."""

    def __init__(self, rpm: float | None, tpm: float | None):
        self.rpm, self.tpm = rpm, tpm
        self._next_req = 0.0
        self._next_tok = 0.0

    async def acquire(self, tokens: int, sleep=asyncio.sleep) -> None:
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
            await sleep(wait)


class CircuitBreaker:
    """One endpoint's health within a run: open after `threshold` consecutive calls without an answer."""

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.failures = 0
        self.last: CallFault | None = None
        self.open = False

    def record(self, fault: CallFault | None) -> bool:
        """Any answer from the endpoint (even a 500) closes the streak; no answer (`fault.connection`) extends
        it. True when this fault opened the circuit."""
        if fault is None or not fault.connection:
            self.failures = 0
            return False
        self.failures += 1
        self.last = fault
        if self.threshold and self.failures >= self.threshold and not self.open:
            self.open = True
            return True
        return False


class _Progress:
    """Calls done, failed and retrying: a rich bar on a terminal; otherwise a plain line at every 10% of the
    calls and at least every `PROGRESS_EVERY_S` while calls are out, so a run that waits on a hung endpoint
    still says so. Stderr only: nothing of it enters an artifact."""

    def __init__(self, name: str, total: int, enabled: bool):
        self.name, self.total = name, total
        self.done = self.errors = self.retrying = 0
        self.bar = None
        self.lines = enabled and not sys.stderr.isatty()
        self._next_share = 0.1
        self._last_line = time.monotonic()
        self._ticker: asyncio.Task | None = None
        if enabled and not self.lines:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn(f"judge {name}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[errors]} failed, {task.fields[retrying]} retrying"),
                TimeRemainingColumn(), console=Console(stderr=True), transient=True,
            )  # fmt: skip
            self._task = self.bar.add_task("calls", total=total, errors=0, retrying=0)
            self.bar.start()
        elif self.lines and total:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, self._last_line + PROGRESS_EVERY_S - time.monotonic()))
            if time.monotonic() - self._last_line >= PROGRESS_EVERY_S:
                self._line()

    def retry(self, started: bool) -> None:
        """A call starts (True) or ends (False) a stretch of retries."""
        self.retrying += 1 if started else -1
        if self.bar is not None:
            self.bar.update(self._task, retrying=self.retrying)

    def advance(self, error: bool) -> None:
        self.done += 1
        self.errors += error
        if self.bar is not None:
            self.bar.update(self._task, advance=1, errors=self.errors, retrying=self.retrying)
        elif self.lines:
            if self.done >= self._next_share * self.total:
                self._line()
                while self._next_share * self.total <= self.done:
                    self._next_share += 0.1

    def _line(self) -> None:
        self._last_line = time.monotonic()
        print(f"judge {self.name}: {self.done}/{self.total} calls done, {self.errors} failed, {self.retrying} retrying", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        if self.bar is not None:
            self.bar.stop()


class _Slots:
    """`n` request slots, given to a call that is retrying before any call's first attempt: a call once
    started is finished first, so failures surface one by one instead of all at the end of the run."""

    def __init__(self, n: int):
        self.free = max(1, n)
        self._waiting: tuple[deque[asyncio.Future], deque[asyncio.Future]] = (deque(), deque())  # (retries, first attempts)
        self.closed = False

    @asynccontextmanager
    async def slot(self, retry: bool):
        await self._acquire(retry)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, retry: bool) -> None:
        if self.closed:
            raise _Stopped
        if self.free > 0 and not any(self._waiting):
            self.free -= 1
            return
        fut = asyncio.get_running_loop().create_future()
        queue = self._waiting[0 if retry else 1]
        queue.append(fut)
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._release()  # handed a slot just as this call was cancelled: pass it on
            elif fut in queue:
                queue.remove(fut)
            raise

    def _release(self) -> None:
        for queue in self._waiting:
            while queue:
                fut = queue.popleft()
                if not fut.done():
                    fut.set_result(None)
                    return
        self.free += 1

    def close(self) -> None:
        """No slot is given any more: every waiting call (and any later one) ends unsent."""
        self.closed = True
        for queue in self._waiting:
            while queue:
                fut = queue.popleft()
                if not fut.done():
                    fut.set_exception(_Stopped())


class _Halt:
    """SIGTERM or SIGINT while a judge asks its calls: the signal is held until the answers are saved.

    On the first signal nothing new is sent (waiting calls end unsent), requests already out get
    `STOP_GRACE_S` to be answered and cached, the run says what it kept, and `deliver` then hands the signal
    to the handler it was meant for (the CLI's: the stage unwinds, exit 143 or 130, no traceback). A second
    signal abandons the requests in flight at once; a third goes straight to that handler. Only the main
    thread receives signals: a judge running elsewhere (a flow's worker) is left to its host."""

    def __init__(self, name: str):
        self.name = name
        self.signum: int | None = None
        self.kept = 0
        """Answers this run wrote to the call cache (or found there, answered by another process)."""
        self.sending: set[asyncio.Task] = set()
        """Calls with a request out: the only ones worth waiting for after a signal."""
        self.slots: _Slots | None = None
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: dict[int, Any] = {}

    @property
    def halted(self) -> bool:
        return self.signum is not None

    def install(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(sig)
            if previous in (signal.SIG_IGN, None):
                continue  # ignored (or set outside Python): not ours to take
            try:
                self._loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError):
                continue
            self._previous[sig] = previous

    def uninstall(self) -> None:
        """Give each signal back to the handler it had before `install`."""
        for sig, previous in self._previous.items():
            assert self._loop is not None
            self._loop.remove_signal_handler(sig)
            signal.signal(sig, previous)
        self._previous.clear()

    def _on_signal(self, sig: int) -> None:
        if self.signum is not None:
            self.uninstall()
            self.abandon()
            return
        self.signum = sig
        assert self._event is not None and self._loop is not None
        self._event.set()
        if self.slots is not None:
            self.slots.close()
        name = signal.Signals(sig).name
        if self.sending:
            print(f"judge {self.name}: {name}: sending nothing more; waiting up to {STOP_GRACE_S:g} s for the "
                  f"{len(self.sending)} request(s) in flight (a second signal stops at once)", file=sys.stderr, flush=True)  # fmt: skip
            self._loop.call_later(STOP_GRACE_S, self.abandon)

    def abandon(self) -> None:
        """Stop waiting for the requests in flight: their calls end unanswered."""
        for task in list(self.sending):
            task.cancel()

    async def nap(self, seconds: float) -> None:
        """Sleep `seconds`, or until a signal (then the caller sees `halted`)."""
        if seconds <= 0:
            return
        assert self._event is not None
        try:
            await asyncio.wait_for(self._event.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    def deliver(self) -> None:
        """Hand the held signal to its handler (restored by now), as if it had just arrived."""
        assert self.signum is not None
        signal.raise_signal(self.signum)
        # A handler that returned (one that only notes the signal) still must not let the run go on as if complete.
        raise KeyboardInterrupt(f"stopped by {signal.Signals(self.signum).name}")


def _run_coro(coro):
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from inside an event loop (a notebook, an async flow): run ours on a worker thread.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _error_entry(reason: str, detail: str, attempts: int) -> dict[str, Any]:
    return {"outcome": "error", "choice": None, "error_reason": reason, "note": detail, "attempts": attempts, "cost_usd": 0.0, "latency_s": 0.0}


@dataclass
class _Run:
    """What the calls of one `run_calls` share."""

    client: Any
    limiter: RateLimiter
    slots: _Slots
    breaker: CircuitBreaker
    progress: _Progress
    stop: list[BaseException]
    pool: ThreadPoolExecutor
    """Threads for the call cache's disk work (claims, writes), so the event loop never waits on the disk."""
    halt: _Halt


Payload = list[dict[str, str]] | str
"""What is sent: chat messages, or one prompt string (completions mode)."""


class LLMJudge(VoteJudge):
    """An API LLM judge; subclasses name their SDK and client class and implement `_send`."""

    default_key_env: str = ""
    sdk_module: str = ""
    """The SDK package, imported only when a judge of this backend is built."""
    client_class: str = ""
    """Its async client class, built with our retries (the SDK's own are off so Retry-After is honoured once)."""
    default_base_url: str = ""
    """The provider's own endpoint, passed explicitly when args.base_url is None: the SDKs would otherwise
    follow an environment variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL), sending calls elsewhere under a
    call key that still says `<backend>:default`."""
    apis: tuple[str, ...] = ("chat",)
    """The `api` modes this backend speaks."""

    def __init__(self, ctx: JudgeContext, args: LLMArgs):
        super().__init__(ctx, votes=args.votes, orders=args.orders)
        self.args = args
        if args.api not in self.apis:
            raise ConfigError(
                f"params.yaml judge.judges.{ctx.name}.args.api: the {self.backend} backend has no '{args.api}' API",
                hint=f"use one of: {', '.join(self.apis)}",
            )
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
        if args.local:
            self.price: Price | None = Price(input_per_mtok=0.0, output_per_mtok=0.0)
        else:
            self.price = args.price if args.price is not None else ctx.prices.get(args.model)
        budget = ctx.budget
        if budget is not None and budget.cap is not None and self.price is None:
            raise ConfigError(
                f"judge {ctx.name}: judge.budget_usd is set but model '{args.model}' has no price",
                hint=(
                    f"add `{args.model}: {{input_per_mtok: …, output_per_mtok: …}}` under judge.prices, or for a "
                    f"local or free endpoint set `local: true` in judge.judges.{ctx.name}.args "
                    f"(or `price: {{input_per_mtok: 0, output_per_mtok: 0}}`), or remove judge.budget_usd"
                ),
            )
        self.budget: Budget = budget if budget is not None else Budget(None)
        self.cache = CallCache(ctx.cache_dir / "calls", shared=ctx.shared_cache)
        self.retriever = None
        if args.retrieval is not None:
            from ._retrieval import make_retriever

            self.retriever = make_retriever(args.retrieval, ctx)  # local corpus or Semantic Scholar (_s2.py)
        self._facts: dict[str, Any] = {
            "calls": 0, "cache_hits": 0, "deduplicated": 0, "claim_waits": 0, "retries": 0, "errors": 0,
            "truncated": 0, "cost_usd": 0.0, "latency_s": 0.0, "shared_cache_hits": 0,
            "batches_submitted": 0, "batches_resumed": 0, "batch_failed": 0,
        }  # fmt: skip
        self._errors: Counter[str] = Counter()
        self._error_details: dict[str, str] = {}
        self._sdk = importlib.import_module(self.sdk_module)

    # -- backend hooks ------------------------------------------------------------------------------
    @property
    def call_backend(self) -> str:
        """The backend as the call key names it: the API mode is part of it (its prompts differ anyway)."""
        return self.backend if self.args.api == "chat" else f"{self.backend}-{self.args.api}"

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
        a = self.args
        timeout = self._sdk.Timeout(a.timeout_s, connect=min(a.connect_timeout_s, a.timeout_s))
        return getattr(self._sdk, self.client_class)(api_key=self.api_key() or "no-key", base_url=a.base_url or self.default_base_url or None, max_retries=0, timeout=timeout)

    @abstractmethod
    async def _send(self, client: Any, payload: Payload) -> Answer:
        """Send one request (through `_request`) and read its body (with `json_body`/`expect`); raise
        RetryableError / FatalCallError for a failed attempt, ConfigError for auth problems."""

    async def _request(self, pending: Any) -> Any:
        """Await an SDK call, turning its errors into call faults (or ConfigError when the user must act)."""
        sdk = self._sdk
        try:
            return await pending
        except sdk.AuthenticationError:
            raise ConfigError(
                f"judge {self.name}: the endpoint rejected the key from {self.key_env}", hint="check the key and base_url"
            ) from None
        except (sdk.PermissionDeniedError, sdk.NotFoundError) as exc:
            raise ConfigError(
                f"judge {self.name}: {type(exc).__name__} for model '{self.args.model}' ({exc.status_code})",
                hint="check the model name and base_url (and api: completions needs an endpoint that serves /v1/completions)",
            ) from None
        except sdk.APIConnectionError as exc:  # includes the SDK's timeout error
            raise connection_fault(exc, self.args.timeout_s) from None
        except sdk.APIStatusError as exc:
            status = exc.status_code
            # Redact, then cut: cut first, a key the server echoed across the cut would leave its head behind.
            detail = f"{type(exc).__name__}: {self._redact(str(exc))[:300]}"
            if status == 429 or status >= 500 or status in (408, 409):
                raise RetryableError(f"HTTP {status}", detail, retry_after=_retry_after(exc)) from None
            raise FatalCallError(f"HTTP {status}", detail) from None

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
            "api": a.api,
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
            **template_knobs(self.templates),  # a project template file: {"prompt_files": {path: sha256}}
            **a.guard.knob(),  # injection mitigations, only when one is on (older configs keep their digest)
        }

    def input_files(self):
        return self.retriever.input_files() if self.retriever else []

    def extra_evidence(self, shown) -> dict[str, str]:
        if self.retriever is None:
            return {}
        return self.retriever.evidence_parts(shown, _slots(shown))

    def evidence_docs(self, ideas) -> list[dict[str, Any]]:
        return self.retriever.evidence_docs(ideas, _slots(ideas)) if self.retriever is not None else []

    def close(self) -> None:
        if self.retriever is not None:
            self.retriever.close()

    def facts(self) -> dict[str, Any]:
        """Run facts: calls, cache hits, retries, cost, summed latency, and why calls failed
        (`errors_by_reason` counts, `error_details` the last full message per reason)."""
        out = dict(self._facts)
        out["errors_by_reason"] = dict(sorted(self._errors.items()))
        out["error_details"] = dict(sorted(self._error_details.items()))
        if self.retriever is not None and self.retriever.facts():
            out["retrieval"] = self.retriever.facts()
        return out

    # -- the engine ---------------------------------------------------------------------------------
    def _payload(self, messages: list[dict[str, str]]) -> Payload:
        return completion_prompt(messages) if self.args.api == "completions" else messages

    def _prepare(self, call: Call) -> tuple[Payload, str]:
        evidence = self.retriever.blocks(call.shown) if self.retriever else None
        messages = self.templates[call.task].render(call.shown, form=self.args.input_form, evidence=evidence, guard=self.args.guard)
        payload = self._payload(messages)
        key = call_key(
            backend=self.call_backend,
            model=self.args.model,
            endpoint=self.args.base_url,
            sampling=self.sampling(),
            prompt_bytes=canonical_bytes(payload),
            vote_index=call.vote_index,
        )
        return payload, key

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
            error_reason=entry.get("error_reason"),
        )

    def _worst_cost(self, prompt_bytes: int) -> float:
        if self.price is None:
            return 0.0
        # A token is at least one byte, so the prompt's byte count bounds its token count.
        return (prompt_bytes * self.price.input_per_mtok + self.args.sampling.max_tokens * self.price.output_per_mtok) / 1e6

    def _cost(self, answer: Answer, worst: float) -> float:
        if self.price is None:
            return 0.0
        if answer.input_tokens is None or answer.output_tokens is None:
            return worst  # no usage reported: charge the bound rather than nothing
        return (answer.input_tokens * self.price.input_per_mtok + answer.output_tokens * self.price.output_per_mtok) / 1e6

    def _redact(self, text: str) -> str:
        key = os.environ.get(self.key_env) if self.key_env else None
        return text.replace(key, "***") if key else text

    def run_calls(self, calls: Sequence[Call]) -> list[CallResult]:
        halt = _Halt(self.name)
        results = _run_coro(self._run_all(calls, halt))
        if halt.halted:
            halt.deliver()  # the answers are saved: now the signal does what it was sent for
        return results

    async def _run_all(self, calls: Sequence[Call], halt: _Halt) -> list[CallResult]:
        halt.install()
        try:
            return await self._run_held(calls, halt)
        finally:
            halt.uninstall()

    async def _run_held(self, calls: Sequence[Call], halt: _Halt) -> list[CallResult]:
        """`_run_all` with SIGTERM/SIGINT held by `halt`: after one, the results are incomplete (the caller
        delivers the signal instead of returning them)."""
        results: list[CallResult | None] = [None] * len(calls)
        pending: dict[str, tuple[Call, Payload, list[int]]] = {}
        prepared = [(call, *self._prepare(call)) for call in calls]
        if not self.ctx.refresh and self.cache.shared is not None:
            # One concurrent fetch of the team's answers to the local misses, instead of a round trip per call.
            self._facts["shared_cache_hits"] += self.cache.prefetch(key for _, _, key in prepared)
        for i, (call, payload, key) in enumerate(prepared):
            if key in pending:
                # Same prompt and vote index (a pair shared by both datasets): one call answers both.
                pending[key][2].append(i)
                self._facts["deduplicated"] += 1
                continue
            entry = None if self.ctx.refresh else self.cache.get(key)
            if entry is not None:
                results[i] = self._result(key, self._reparsed(call, entry), cached=True)
                self._facts["cache_hits"] += 1
                continue
            pending[key] = (call, payload, [i])
        asked = len(pending)
        if pending and not halt.halted and (self.args.batch or has_open_batches(self, pending)):
            pending = await self._batch_all(pending, results, halt)
        if pending and not halt.halted:
            await self._ask_all(pending, results, halt)
        if halt.halted:
            print(f"judge {self.name}: stopped by {signal.Signals(halt.signum).name}: {halt.kept} answered call(s) kept in "
                  f"the call cache; the next run asks the other {asked - halt.kept}", file=sys.stderr, flush=True)  # fmt: skip
            return results  # type: ignore[return-value]  # incomplete: run_calls delivers the signal instead
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    async def _batch_all(
        self, pending: dict[str, tuple[Call, Payload, list[int]]], results: list, halt: _Halt
    ) -> dict[str, tuple[Call, Payload, list[int]]]:
        """Answer `pending` through provider batches (`_batch.run_batches`; with `batch: false` only open batches
        of an earlier run are collected); returns the calls left for the interactive engine (those no batch
        holds, and those a batch failed with `batch_failures: interactive`)."""
        self.api_key()
        outcome = await run_batches(self, pending, submit=self.args.batch, halt=halt)
        halt.kept += len(outcome.answered)
        if halt.halted:
            return {}  # open batches stay journalled: the next run resumes them
        for key, (entry, cached) in outcome.answered.items():
            call, _, idxs = pending[key]
            if entry["outcome"] == "truncated":
                self._facts["truncated"] += 1
            r = self._result(key, entry, cached=cached)
            for i in idxs:
                results[i] = r
        left: dict[str, tuple[Call, Payload, list[int]]] = {k: pending[k] for k in outcome.untouched}
        failed: Counter[str] = Counter()
        for key, entry in outcome.failed.items():
            self._facts["batch_failed"] += 1
            retry = self.args.batch_failures == "interactive" and entry["error_reason"] not in ("batch pending", "batch unreachable")
            if retry:
                left[key] = pending[key]  # asked now, one request each
                continue
            failed[entry["error_reason"]] += 1
            self._facts["errors"] += 1
            self._errors[entry["error_reason"]] += 1
            self._error_details[entry["error_reason"]] = entry["note"]
            r = self._result(key, entry, cached=False)
            for i in pending[key][2]:
                results[i] = r
        self._summarize(failed)
        return left

    # -- batch hooks (a backend that speaks a provider batch API implements these) -------------------
    async def _batch_submit(self, client: Any, items: list[tuple[str, Payload]]) -> str:
        """Submit one batch of (call key → payload), the key as the request's custom id; return the batch id."""
        raise ConfigError(f"judge {self.name}: the {self.backend} backend has no batch API", hint="remove `batch: true`")

    async def _batch_status(self, client: Any, batch_id: str) -> Any:
        """The batch's `BatchStatus`."""
        raise NotImplementedError

    async def _batch_results(self, client: Any, batch_id: str) -> dict[str, Any]:
        """call key → `Answer`, or a `CallFault` for a request the provider failed."""
        raise NotImplementedError

    async def _ask_all(self, pending: dict[str, tuple[Call, Payload, list[int]]], results: list, halt: _Halt) -> None:
        self.api_key()  # fail before the first request when the key is missing
        run = _Run(
            client=self._client(),
            limiter=RateLimiter(self.args.requests_per_minute, self.args.tokens_per_minute),
            slots=_Slots(self.args.concurrency),
            breaker=CircuitBreaker(self.args.circuit_breaker),
            progress=_Progress(self.name, len(pending), self.ctx.progress),
            stop=[],
            pool=ThreadPoolExecutor(max(4, min(32, self.args.concurrency)), thread_name_prefix="call-cache"),
            halt=halt,
        )
        halt.slots = run.slots
        errors_before = Counter(self._errors)

        async def one(key: str, call: Call, payload: Payload, idxs: list[int]) -> None:
            try:
                entry, cached = await self._ask(run, key, call, payload)
            except (ConfigError, BudgetExceededError, _Stopped) as exc:
                if not isinstance(exc, _Stopped):
                    run.stop.append(exc)
                    run.slots.close()  # nothing more is sent
                return
            except Exception as exc:  # noqa: BLE001  one call's bug must not lose the other calls' answers
                log.warning("judge %s: call failed unexpectedly: %s: %s", self.name, type(exc).__name__, self._redact(str(exc)))
                log.debug("judge %s: traceback of the unexpected failure", self.name, exc_info=True)
                entry, cached = _error_entry(f"unexpected {type(exc).__name__}", self._redact(f"{type(exc).__name__}: {exc}"), 0), False
            if entry["outcome"] == "error":
                self._facts["errors"] += 1
                self._errors[entry["error_reason"]] += 1
                self._error_details[entry["error_reason"]] = entry["note"]
            elif entry["outcome"] == "truncated" and not cached:
                self._facts["truncated"] += 1
            r = self._result(key, self._reparsed(call, entry) if cached else entry, cached=cached)
            for i in idxs:
                results[i] = r
            run.progress.advance(entry["outcome"] == "error")

        try:
            # return_exceptions: a call abandoned after a signal (cancelled) must not stop the wait for the others
            ends = await asyncio.gather(*(one(k, c, p, idx) for k, (c, p, idx) in pending.items()), return_exceptions=True)
        finally:
            run.pool.shutdown(wait=True)
            run.progress.close()
            await self._aclose(run.client)
        if not halt.halted:
            unexpected = [e for e in ends if isinstance(e, BaseException)]
            if unexpected:
                raise unexpected[0]
            self._summarize(self._errors - errors_before)
        if run.stop:
            raise run.stop[0]

    def _summarize(self, failed: Counter[str]) -> None:
        """One stderr line on why this run's calls failed, e.g. "296 calls failed: connection refused (290), timeout (6)"."""
        if failed:
            reasons = ", ".join(f"{r} ({n})" for r, n in sorted(failed.items(), key=lambda kv: (-kv[1], kv[0])))
            print(f"judge {self.name}: {failed.total()} calls failed: {reasons}", file=sys.stderr, flush=True)

    async def _ask(self, run: _Run, key: str, call: Call, payload: Payload) -> tuple[dict[str, Any], bool]:
        """(entry, answered from the cache). The call is claimed across processes in its first slot; while
        another process holds the claim this call waits outside any slot, then takes that process's answer."""
        a = self.args
        loop = asyncio.get_running_loop()
        size = len(canonical_bytes(payload))
        worst = self._worst_cost(size)
        jitter = random.Random(f"{call.item_id}/{call.order}/{call.vote_index}")  # jitter only spreads retries
        claim: CallClaim | None = None
        poll, waited = _CLAIM_POLL_S[0], False
        fault: CallFault | None = None
        attempts = 0
        retrying = False
        halt = run.halt
        try:
            while True:
                # Waits (claims, backoff) happen outside the slot: a waiting call never keeps a live one from being sent.
                async with run.slots.slot(retry=attempts > 0):
                    if run.stop or halt.halted:
                        raise _Stopped
                    if run.breaker.open:
                        break
                    if claim is None:
                        # Creating the claim file may wait on a busy disk: off the loop, so requests keep flowing.
                        claim = await loop.run_in_executor(run.pool, self.cache.try_claim, key)
                        if claim is not None and (waited or not self.ctx.refresh):
                            entry = self.cache.get(key)  # answered since we first looked (by whoever held the claim)
                            if entry is not None:
                                self._facts["cache_hits"] += 1
                                halt.kept += 1
                                return entry, True
                    if claim is not None:
                        await run.limiter.acquire(size + a.sampling.max_tokens, sleep=halt.nap)
                        if run.stop or halt.halted:
                            raise _Stopped  # a signal during the rate-limit wait: this request is not sent
                        self.budget.reserve(worst, f"{call.task} {call.item_id}")
                        attempts += 1
                        started = time.perf_counter()
                        task = asyncio.current_task()
                        assert task is not None
                        halt.sending.add(task)
                        try:
                            answer = await self._send(run.client, payload)
                        except CallFault as exc:
                            fault = exc
                        except BaseException:
                            self.budget.settle(worst, 0.0)  # abandoned after a signal, or a bug: nothing was paid
                            raise
                        else:
                            fault = None
                        finally:
                            halt.sending.discard(task)
                        latency = time.perf_counter() - started
                        cost = 0.0 if fault is not None else self._cost(answer, worst)
                        self.budget.settle(worst, cost)
                if claim is None:
                    if not waited:
                        self._facts["claim_waits"] += 1
                    waited = True
                    await halt.nap(poll)
                    poll = min(_CLAIM_POLL_S[1], poll * 2)
                    continue
                if run.breaker.record(fault):
                    self._circuit_opened(run.breaker)
                if fault is None:
                    entry = self._answer_entry(call, payload, answer, cost, latency, attempts)
                    if entry["outcome"] != "error":
                        # fsyncs in parallel coalesce; on the loop thread they would serialize every call behind the disk
                        await loop.run_in_executor(run.pool, self.cache.put, key, entry)
                        halt.kept += 1
                    return entry, False
                if isinstance(fault, FatalCallError) or attempts > a.max_retries or run.breaker.open:
                    break
                if halt.halted:
                    raise _Stopped  # after a signal nothing is sent again, retries included
                self._facts["retries"] += 1
                if not retrying:
                    retrying = True
                    run.progress.retry(True)
                delay = min(a.max_backoff_s, a.backoff_s * 2 ** (attempts - 1)) * (0.5 + jitter.random() / 2)
                await halt.nap(max(delay, fault.retry_after or 0.0))
        finally:
            if retrying:
                run.progress.retry(False)
            if claim is not None:
                claim.release()
        if run.breaker.open and (fault is None or fault.connection):
            last = run.breaker.last
            assert last is not None
            detail = f"{a.circuit_breaker} consecutive connection failures or timeouts; last: {last.reason}: {last.detail}"
            return _error_entry("circuit open", self._redact(detail), attempts), False
        assert fault is not None
        return _error_entry(fault.reason, self._redact(f"after {attempts} attempt(s): {fault.detail}"), attempts), False

    def _circuit_opened(self, breaker: CircuitBreaker) -> None:
        """One stderr line when the endpoint is given up, so a run that ends early says why."""
        last = breaker.last
        assert last is not None
        print(f"judge {self.name}: circuit open after {breaker.failures} consecutive calls without an answer (last: "
              f"{last.reason}); nothing more is sent to this endpoint in this run", file=sys.stderr, flush=True)  # fmt: skip

    def _classify(self, task: str, text: str | None, refused: bool, finish_reason: str | None) -> tuple[str, Any, str | None]:
        """(outcome, choice, note) of one answer. In completions mode the prompt ends with the lead-in
        "Answer:", so the continuation completes that line: it is parsed as lead-in + continuation."""
        if self.args.api == "completions" and text is not None:
            text = COMPLETION_LEAD_IN.strip() + text
        parsed = parse_verdict(task, text)
        outcome, choice, note = parsed.outcome, parsed.choice, parsed.note
        if refused and outcome != "valid":
            outcome, note = "refusal", f"provider flagged a refusal (finish_reason={finish_reason})"
        elif outcome != "valid" and finish_reason in TRUNCATING_FINISH:
            outcome = "truncated"
            note = f"cut at max_tokens={self.args.sampling.max_tokens} (finish_reason={finish_reason}) before a verdict: {note}"
        return outcome, choice, note

    def _reparsed(self, call: Call, entry: dict[str, Any]) -> dict[str, Any]:
        """A cached answer judged by this code's parser. The cache keeps what the provider said; reading a
        verdict out of it is harness code, so a parser change applies to cached answers too (and shows up as
        the code digest that moved), instead of replaying an outcome the old parser decided."""
        if "response" not in entry or entry.get("outcome") not in ("valid", "invalid", "truncated"):
            return entry  # errors are never cached; a provider-flagged refusal stays one
        outcome, choice, note = self._classify(call.task, entry["response"], False, entry.get("finish_reason"))
        return {**entry, "outcome": outcome, "choice": choice, "note": note}

    def _answer_entry(self, call: Call, payload: Payload, answer: Answer, cost: float, latency: float, attempts: int) -> dict[str, Any]:
        outcome, choice, note = self._classify(call.task, answer.text, answer.refused, answer.finish_reason)
        self._facts["calls"] += 1
        self._facts["cost_usd"] += cost
        self._facts["latency_s"] += latency
        return {
            "backend": self.call_backend,
            "model": self.args.model,
            "sampling": self.sampling(),
            "vote_index": call.vote_index,
            "messages" if isinstance(payload, list) else "prompt": payload,
            "response": answer.text,
            "finish_reason": answer.finish_reason,
            "outcome": outcome,
            "choice": choice,
            "note": note,
            "usage": {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens},
            "provider_model": answer.provider_model,
            "cost_usd": cost,
            "latency_s": round(latency, 6),
            "attempts": attempts,
        }


def _slots(ideas) -> tuple[str, ...]:
    """Evidence slots of ideas given in pair slot order (idea_0, idea_1) or one idea (pointwise)."""
    return ("idea_0", "idea_1") if len(ideas) == 2 else ("idea",)


class _Stopped(Exception):
    """Another call hit a user error (key, model, budget): calls not yet sent are not sent."""


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
