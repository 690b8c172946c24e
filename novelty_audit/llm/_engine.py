"""The engine: asks many requests of one endpoint at once and ends each as an answer or a failure.

Cache and inter-process claims, concurrency, rate limits, retries honouring Retry-After, the circuit breaker,
the budget, provider batches, progress lines and SIGTERM/SIGINT holding live here, once. Whatever goes wrong
with one call (a 500, a malformed 200, a dead endpoint, a bug in reading an answer) ends that call as a
failure with a short, stable reason; only user errors (a rejected key, an unknown model, the budget cap) stop
the run.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from queue import SimpleQueue
from typing import Any

from ..artifacts import canonical_bytes, digest_bytes
from ..config import CallSettings, Price
from ..errors import BudgetExceededError, ConfigError, StorageError, storage_error
from ..progress import PROGRESS_EVERY_S
from ._budget import Budget
from ._cache import CallCache, CallClaim, call_key
from ._faults import TRUNCATING_FINISH, Answer, CallFault, FatalCallError, RetryableError, error_entry
from ._provider import Provider
from ._types import Endpoint, Reply, Request

__all__ = ["Classify", "LLMClient", "plain_classify", "run_coro"]

log = logging.getLogger(__name__)

STOP_GRACE_S = 10.0
"""After SIGTERM/SIGINT, how long requests already sent may take to be answered (and cached); nothing new is sent."""
_CLAIM_POLL_S = (0.05, 2.0)
"""First and longest wait between looks at a call another process is asking."""

CLAIM_MARGIN_S = 120.0
"""Added to a shared claim's bound (`claim_hold_s`): writing the answer back, clocks of two hosts a little apart."""


def claim_hold_s(s: CallSettings) -> float:
    """The longest one call can hold its claim with these settings: every attempt's timeout and rate-limit
    wait, every backoff, and a margin. A shared claim older than this is stale (docs/design/cache.md)."""
    limiter = sum(s.concurrency * 60.0 / r for r in (s.requests_per_minute,) if r)
    attempts = s.max_retries + 1
    return attempts * (s.timeout_s + limiter) + s.max_retries * s.max_backoff_s + CLAIM_MARGIN_S


Classify = Callable[[Request, Answer], tuple[str, Any, "str | None"]]
"""(outcome, choice, note) of a fresh answer, stored in its cache entry: a caller's parser (a judge's verdict)."""


class _Stopped(Exception):
    """Another call hit a user error (key, model, budget), or a signal came: calls not yet sent are not sent."""


def plain_classify(request: Request, answer: Answer) -> tuple[str, Any, str | None]:
    """The default reading: `valid`, or `refusal` / `truncated` as the provider flagged it."""
    if answer.refused:
        return "refusal", None, f"provider flagged a refusal (finish_reason={answer.finish_reason})"
    if answer.finish_reason in TRUNCATING_FINISH and not answer.tool_calls:
        return "truncated", None, f"cut at max_tokens={request.sampling.max_tokens} (finish_reason={answer.finish_reason})"
    return "valid", None, None


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
        self.probed = False
        """Opened by the hung-endpoint probe rather than by counting."""

    def trip(self, fault: CallFault) -> bool:
        """Open at once (a probe found the endpoint hung); True when this opened it."""
        self.last = fault
        self.probed = True
        if self.open or not self.threshold:
            return False
        self.open = True
        return True

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
        self._tenth = 1  # next tenth of the calls that gets a line (integers, as progress.Progress: 0.1 steps drift)
        self._last_line = time.monotonic()
        self._ticker: asyncio.Task | None = None
        if enabled and not self.lines:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn(name), BarColumn(), MofNCompleteColumn(),
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
            if 10 * self.done >= self._tenth * self.total:
                self._line()
                while self._tenth * self.total <= 10 * self.done:
                    self._tenth += 1

    def _line(self) -> None:
        self._last_line = time.monotonic()
        print(f"{self.name}: {self.done}/{self.total} calls done, {self.errors} failed, {self.retrying} retrying", file=sys.stderr, flush=True)

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
    """SIGTERM or SIGINT while the layer asks its calls: the signal is held until the answers are saved.

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

    def attach(self) -> None:
        """Bind to the running event loop (naps wake on a signal); no handler is installed."""
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def install(self) -> None:
        """`attach`, and take SIGINT/SIGTERM from their handlers until `uninstall` (main thread only)."""
        self.attach()
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
            print(f"{self.name}: {name}: sending nothing more; waiting up to {STOP_GRACE_S:g} s for the "
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


def run_coro(coro):
    """Run `coro` to its end from sync code, also when called from inside an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from inside an event loop (a notebook, an async flow): run ours on a worker thread.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()




def _tally(counts: Counter[str]) -> str:
    """"reason (n), ..." with the most frequent first, for one-line stderr summaries."""
    return ", ".join(f"{r} ({n})" for r, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


class _EntryWriter:
    """One thread that writes a run's answered calls to the call cache, in order, and then releases each
    call's claim, so a process waiting on that claim finds the answer on disk. A call hands its entry over
    and goes on: the loop thread neither waits on the disk nor is woken per write."""

    def __init__(self, cache: CallCache, who: str, on_storage_error: Callable[[StorageError], None] = lambda e: None):
        self._cache = cache
        self._who = who
        self._on_storage_error = on_storage_error
        """Called (from this thread) once, when the disk refuses an entry (full, read-only): the run stops
        sending, since an answer that cannot be kept would be paid again by the next run."""
        self.storage: StorageError | None = None
        self._queue: SimpleQueue[tuple[str, dict[str, Any], CallClaim, bool] | None] = SimpleQueue()
        self.failed: Counter[str] = Counter()
        self._thread = threading.Thread(target=self._work, name="call-cache-writer", daemon=True)
        self._thread.start()

    def put(self, key: str, entry: dict[str, Any], claim: CallClaim, fresh: bool) -> None:
        self._queue.put((key, entry, claim, fresh))

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            key, entry, claim, fresh = item
            try:
                self._cache.put(key, entry, fresh=fresh)
            except Exception as exc:  # the answer is still returned; only its reuse is lost
                self.failed[type(exc).__name__] += 1
                if self.storage is None and (disk := storage_error(exc)) is not None:
                    self.storage = disk
                    self._on_storage_error(disk)
                log.debug("%s: answer of call %s not kept in the call cache", self._who, key[:12], exc_info=True)
            finally:
                claim.release()

    def close(self) -> None:
        """Write what was handed over, then stop (every claim handed over is released); one stderr line if
        answers could not be kept (they are returned all the same, and asked again by the next run)."""
        self._queue.put(None)
        self._thread.join()
        if self.failed and self.storage is None:  # a full disk is the run's one error message, not this line
            print(f"{self._who}: {self.failed.total()} answers could not be kept in the call cache ({_tally(self.failed)}); "
                  "the next run asks them again", file=sys.stderr, flush=True)  # fmt: skip


class _Watchdog:
    """Tells a hung endpoint (connections accepted, nothing ever answered) from a slow one (long reasoning
    calls) without cutting the slow one: after `hung_after_s` with requests out and nothing heard from the
    endpoint, it is probed (`Provider.probe`, a free GET); an answer of any kind means it is up, no answer
    within `connect_timeout_s` means it is hung: the requests out end as `timeout` and the circuit opens."""

    def __init__(self, after: float | None, probe_s: float):
        self.after, self.probe_s = after, probe_s
        self.heard = time.monotonic()
        """When the endpoint last said anything (an answer, an HTTP error, a probe answered)."""
        self.sent: dict[asyncio.Task, float] = {}
        """Requests out: their call's task and when each was sent."""
        self.cut: set[asyncio.Task] = set()
        """Tasks whose request this watchdog ended (cancelled) as a timeout."""
        self.probes = 0
        self.hung: str | None = None
        """Why the endpoint counts as hung (the probe's failure), once it does."""

    def due(self) -> float | None:
        """When to look next (monotonic), or None when no request is out."""
        if self.after is None or not self.sent:
            return None
        return max(min(self.sent.values()), self.heard) + self.after

    async def run(self, provider: Provider, on_hung: Callable[[], None]) -> None:
        assert self.after is not None
        while self.hung is None:
            due = self.due()
            now = time.monotonic()
            if due is None or due > now:
                await asyncio.sleep(self.after if due is None else due - now)
                continue
            self.probes += 1
            failed = await provider.probe(self.probe_s)
            if failed is None:
                self.heard = time.monotonic()
            elif (due := self.due()) is not None and due <= time.monotonic():  # nothing heard meanwhile either
                self.hung = failed
                on_hung()

    def cut_all(self) -> None:
        """End every request out as a timeout (each call sees its cancellation as one)."""
        for task in list(self.sent):
            self.cut.add(task)
            task.cancel()


@dataclass
class _Run:
    """What the calls of one `ask` share."""

    client: Any
    limiter: RateLimiter
    slots: _Slots
    breaker: CircuitBreaker
    progress: _Progress
    stop: list[BaseException]
    pool: ThreadPoolExecutor
    """Threads for the call cache's disk work the loop waits for (opening stripe files, the writer's last entries)."""
    writer: _EntryWriter
    halt: _Halt
    watch: "_Watchdog"


STATS = (
    "calls", "cache_hits", "deduplicated", "claim_waits", "retries", "errors", "truncated", "cost_usd", "latency_s",
    "shared_cache_hits", "batches_submitted", "batches_resumed", "batch_failed", "timeouts", "probes",
)  # fmt: skip
"""Run facts an LLMClient counts (never in an artifact's digest)."""


class LLMClient:
    """Asks requests of one endpoint: every call through the cache, the budget, limits, retries and breaker.

    `ask(requests)` (sync; holds SIGTERM/SIGINT until answers are saved) and `ask_async(requests)` (inside
    an event loop, e.g. an agent's loop) return one `Reply` per request, in order: an answer (fresh or
    cached) or a classified failure. A multi-turn caller asks one turn at a time, appending `reply.turn()`
    and its tool results to the next request's messages; each turn is its own call, cached by its key."""

    def __init__(
        self,
        endpoint: Endpoint,
        settings: CallSettings,
        *,
        cache: CallCache,
        budget: Budget | None = None,
        price: Price | None = None,
        who: str = "llm",
        progress: bool = False,
        refresh: bool = False,
        classify: Classify | None = None,
    ):
        from ._providers import provider_class

        self.endpoint = endpoint
        self.settings = settings
        self.cache = cache
        self.budget = budget if budget is not None else Budget(None)
        self.price = price
        """USD per million tokens; None: calls count as free (and the budget never stops them)."""
        self.who = who
        """Names this caller in messages, e.g. "judge gpt-4o-mini"."""
        self.progress = progress
        self.refresh = refresh
        """Bypass cache reads (drift checks): every call is asked again and its entry replaced."""
        self.classify: Classify = classify or plain_classify
        cls = provider_class(endpoint.provider)
        if endpoint.api not in cls.apis:
            raise ConfigError(f"{who}: the {endpoint.provider} backend has no '{endpoint.api}' API", hint=f"use one of: {', '.join(cls.apis)}")
        self.provider: Provider = cls(endpoint, settings, who)
        self.stats: dict[str, Any] = {name: 0.0 if name in ("cost_usd", "latency_s") else 0 for name in STATS}
        self.errors: Counter[str] = Counter()
        """Failed calls by reason (this client's lifetime)."""
        self.error_details: dict[str, str] = {}
        """The last full message per reason."""
        self._sampling_dumps: dict[int, tuple[Any, dict[str, Any]]] = {}
        self._sizes: dict[str, int] = {}

    # -- keys and money ---------------------------------------------------------------------------------
    def _sampling(self, request: Request) -> dict[str, Any]:
        # One dump per Sampling object: a judge's thousand calls share one.
        s = request.sampling
        got = self._sampling_dumps.get(id(s))
        if got is None or got[0] is not s:
            got = self._sampling_dumps[id(s)] = (s, s.model_dump(mode="json"))
        return got[1]

    def key(self, request: Request, prompts: dict[int, tuple[str, int]] | None = None) -> str:
        """The call key: digest of backend (provider and API), model, normalized endpoint, sampling, the
        prompt's canonical bytes (messages or prompt, and tools when there are any) and the replicate index.
        `prompts`: (sha256, size) of the prompts keyed so far in one batch, by the identity of their messages:
        a judge's votes share one rendered prompt, which is then serialized and digested once."""
        e = self.endpoint
        source = id(request.messages if request.prompt is None else request.prompt)
        got = prompts.get(source) if prompts is not None and not request.tools else None
        if got is None:
            prompt = canonical_bytes(request.hashed())
            got = (digest_bytes(prompt), len(prompt))
            if prompts is not None and not request.tools:
                prompts[source] = got
        key = call_key(backend=e.backend, model=e.model, endpoint=e.base_url, sampling=self._sampling(request),
                       prompt_sha256=got[0], vote_index=request.replicate)  # fmt: skip
        self._sizes[key] = got[1]  # the budget's worst case and the token limiter need it again: serialize once
        return key

    def worst_cost(self, prompt_bytes: int, max_tokens: int) -> float:
        """The most a call can cost: a token is at least one byte, so the prompt's bytes bound its tokens."""
        if self.price is None:
            return 0.0
        return (prompt_bytes * self.price.input_per_mtok + max_tokens * self.price.output_per_mtok) / 1e6

    def cost(self, answer: Answer, worst: float) -> float:
        """What an answer cost by its reported usage (its worst case when it reported none)."""
        if self.price is None:
            return 0.0
        if answer.input_tokens is None or answer.output_tokens is None:
            return worst  # no usage reported: charge the bound rather than nothing
        return (answer.input_tokens * self.price.input_per_mtok + answer.output_tokens * self.price.output_per_mtok) / 1e6

    def redact(self, text: str) -> str:
        return self.provider.redact(text)

    def entry(self, request: Request, answer: Answer, cost: float, latency: float, attempts: int) -> dict[str, Any]:
        """The cache entry of a fresh answer (what the provider said, and the caller's reading of it)."""
        outcome, choice, note = self.classify(request, answer)
        self.stats["calls"] += 1
        self.stats["cost_usd"] += cost
        self.stats["latency_s"] += latency
        e = self.endpoint
        entry: dict[str, Any] = {
            "backend": e.backend,
            "model": e.model,
            "sampling": self._sampling(request),
            "vote_index": request.replicate,
            "messages" if request.prompt is None else "prompt": request.payload,
            "response": answer.text,
            "finish_reason": answer.finish_reason,
            "outcome": outcome,
            "choice": choice,
            "note": note,
            "usage": {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens},
            "provider_model": answer.provider_model,
            "cost_usd": None if self.price is None else cost,  # no price: unknown, recorded as such (not as free)
            "latency_s": round(latency, 6),
            "attempts": attempts,
        }
        if request.tools:  # only then: entries without tools keep their bytes
            entry["tools"] = [t.as_dict() for t in request.tools]
        if answer.tool_calls:
            entry["tool_calls"] = [c.as_dict() for c in answer.tool_calls]
        if answer.thinking:  # only then: entries without extended thinking keep their bytes
            entry["thinking"] = [dict(b) for b in answer.thinking]
        return entry

    # -- asking -----------------------------------------------------------------------------------------
    def ask(self, requests: Sequence[Request]) -> list[Reply]:
        """One reply per request. SIGTERM/SIGINT during the calls is held until the answers are cached, then
        delivered (the caller unwinds as the signal intends; nothing is returned)."""
        halt = _Halt(self.who)
        replies = run_coro(self._ask_signalled(requests, halt))
        if halt.halted:
            halt.deliver()  # the answers are saved: now the signal does what it was sent for
        return replies

    async def ask_async(self, requests: Sequence[Request]) -> list[Reply]:
        """`ask` inside a running event loop (signals are left to the loop's owner)."""
        halt = _Halt(self.who)
        halt.attach()
        return await self._ask_held(requests, halt)

    async def _ask_signalled(self, requests: Sequence[Request], halt: _Halt) -> list[Reply]:
        halt.install()
        try:
            return await self._ask_held(requests, halt)
        finally:
            halt.uninstall()

    async def _ask_held(self, requests: Sequence[Request], halt: _Halt) -> list[Reply]:
        """Ask with SIGTERM/SIGINT held by `halt`: after one, the replies are incomplete (the caller delivers
        the signal instead of returning them)."""
        from ._batch import has_open_batches

        replies: list[Reply | None] = [None] * len(requests)
        pending: dict[str, tuple[Request, list[int]]] = {}
        prompts: dict[int, tuple[str, int]] = {}  # alive only while `requests` holds every keyed prompt
        keyed = [(r, self.key(r, prompts)) for r in requests]
        if not self.refresh and self.cache.shared is not None:
            # One concurrent fetch of the team's answers to the local misses, instead of a round trip per call.
            self.stats["shared_cache_hits"] += self.cache.prefetch(key for _, key in keyed)
        stored = {} if self.refresh else self.cache.get_all(key for _, key in keyed)
        for i, (request, key) in enumerate(keyed):
            if key in pending:
                # Same prompt and replicate (a pair shared by two datasets): one call answers both.
                pending[key][1].append(i)
                self.stats["deduplicated"] += 1
                continue
            entry = stored.get(key)
            if entry is not None:
                replies[i] = Reply(key, entry, cached=True)
                self.stats["cache_hits"] += 1
                continue
            pending[key] = (request, [i])
        asked = len(pending)
        for key in list(self._sizes):
            if key not in pending:
                del self._sizes[key]  # answered from the cache: never sent, its size is not needed
        if pending and not halt.halted and (self.settings.batch or has_open_batches(self, pending)):
            pending = await self._batch_all(pending, replies, halt)
        if pending and not halt.halted:
            await self._ask_all(pending, replies, halt)
        if halt.halted:
            print(f"{self.who}: stopped by {signal.Signals(halt.signum).name}: {halt.kept} answered call(s) kept in "
                  f"the call cache; the next run asks the other {asked - halt.kept}", file=sys.stderr, flush=True)  # fmt: skip
            return replies  # type: ignore[return-value]  # incomplete: ask delivers the signal instead
        assert all(r is not None for r in replies)
        return replies  # type: ignore[return-value]

    def _failed(self, entry: dict[str, Any]) -> None:
        self.stats["errors"] += 1
        self.errors[entry["error_reason"]] += 1
        self.error_details[entry["error_reason"]] = entry["note"]

    async def _batch_all(self, pending: dict[str, tuple[Request, list[int]]], replies: list, halt: _Halt) -> dict[str, tuple[Request, list[int]]]:
        """Answer `pending` through provider batches (`_batch.run_batches`; with `batch: false` only open batches
        of an earlier run are collected); returns the calls left for the interactive engine (those no batch
        holds, and those a batch failed with `batch_failures: interactive`)."""
        from ._batch import run_batches

        self.provider.api_key()
        outcome = await run_batches(self, pending, submit=self.settings.batch, halt=halt)
        halt.kept += len(outcome.answered)
        if halt.halted:
            return {}  # open batches stay journalled: the next run resumes them
        for key, (entry, cached) in outcome.answered.items():
            if entry["outcome"] == "truncated":
                self.stats["truncated"] += 1
            for i in pending[key][1]:
                replies[i] = Reply(key, entry, cached)
        left = {k: pending[k] for k in outcome.untouched}
        failed: Counter[str] = Counter()
        for key, entry in outcome.failed.items():
            self.stats["batch_failed"] += 1
            retry = self.settings.batch_failures == "interactive" and entry["error_reason"] not in ("batch pending", "batch unreachable")
            if retry:
                left[key] = pending[key]  # asked now, one request each
                continue
            failed[entry["error_reason"]] += 1
            self._failed(entry)
            for i in pending[key][1]:
                replies[i] = Reply(key, entry, False)
        self._summarize(failed)
        return left

    async def _ask_all(self, pending: dict[str, tuple[Request, list[int]]], replies: list, halt: _Halt) -> None:
        self.provider.api_key()  # fail before the first request when the key is missing
        s = self.settings
        loop = asyncio.get_running_loop()

        def stop_for(exc: BaseException) -> None:
            """A user error (key, model, budget, a full disk): nothing more is sent, the run raises it."""
            run.stop.append(exc)
            run.slots.close()
        run = _Run(
            client=self.provider.client(),
            limiter=RateLimiter(s.requests_per_minute, s.tokens_per_minute),
            slots=_Slots(s.concurrency),
            breaker=CircuitBreaker(s.circuit_breaker),
            progress=_Progress(self.who, len(pending), self.progress),
            stop=[],
            pool=ThreadPoolExecutor(max(4, min(32, s.concurrency)), thread_name_prefix="call-cache"),
            writer=_EntryWriter(self.cache, self.who, lambda disk: loop.call_soon_threadsafe(stop_for, disk)),
            halt=halt,
            watch=_Watchdog(s.hung_after_s if s.circuit_breaker else None, min(s.connect_timeout_s, s.timeout_s)),
        )
        halt.slots = run.slots
        errors_before = Counter(self.errors)
        watchdog: asyncio.Task | None = None

        async def one(key: str, request: Request, idxs: list[int]) -> None:
            try:
                entry, cached = await self._ask(run, key, request)
            except (ConfigError, BudgetExceededError, StorageError, _Stopped) as exc:
                if not isinstance(exc, _Stopped):
                    stop_for(exc)  # nothing more is sent
                return
            except Exception as exc:  # noqa: BLE001  one call's bug must not lose the other calls' answers
                if (disk := storage_error(exc)) is not None:  # e.g. the budget file on a full disk: the run's error
                    stop_for(disk)
                    return
                log.warning("%s: call failed unexpectedly: %s: %s", self.who, type(exc).__name__, self.redact(str(exc)))
                log.debug("%s: traceback of the unexpected failure", self.who, exc_info=True)
                entry, cached = error_entry(f"unexpected {type(exc).__name__}", self.redact(f"{type(exc).__name__}: {exc}"), 0), False
            if entry["outcome"] == "error":
                self._failed(entry)
            elif entry["outcome"] == "truncated" and not cached:
                self.stats["truncated"] += 1
            reply = Reply(key, entry, cached)
            for i in idxs:
                replies[i] = reply
            run.progress.advance(entry["outcome"] == "error")

        try:
            # Opening or creating the stripe files may wait on a busy disk: once for the whole run, off the loop.
            await asyncio.get_running_loop().run_in_executor(run.pool, self.cache.open_stripes, pending)
            if run.watch.after is not None:
                watchdog = asyncio.get_running_loop().create_task(run.watch.run(self.provider, lambda: self._hung(run)))
            # return_exceptions: a call abandoned after a signal (cancelled) must not stop the wait for the others
            ends = await asyncio.gather(*(one(k, r, idx) for k, (r, idx) in pending.items()), return_exceptions=True)
        finally:
            if watchdog is not None:
                watchdog.cancel()
            self.stats["probes"] += run.watch.probes
            for key in pending:
                self._sizes.pop(key, None)
            # Off the loop: in an agent's loop other agents' calls go on while this run's last entries are written.
            await asyncio.get_running_loop().run_in_executor(run.pool, run.writer.close)
            run.pool.shutdown(wait=True)
            run.progress.close()
            await self.provider.aclose(run.client)
        if not halt.halted:
            unexpected = [e for e in ends if isinstance(e, BaseException)]
            if unexpected:
                raise unexpected[0]
            self._summarize(self.errors - errors_before)
        if run.stop:
            raise run.stop[0]

    def _summarize(self, failed: Counter[str]) -> None:
        """One stderr line on why this run's calls failed, e.g. "296 calls failed: connection refused (290), timeout (6)"."""
        if failed:
            print(f"{self.who}: {failed.total()} calls failed: {_tally(failed)}", file=sys.stderr, flush=True)

    def _hung(self, run: _Run) -> None:
        """The watchdog's verdict: the requests out end as timeouts, and nothing more is sent."""
        w = run.watch
        waited = time.monotonic() - min(w.sent.values(), default=w.heard)
        fault = RetryableError("timeout", f"no answer within {waited:.0f} s, and a probe of the endpoint got none within {w.probe_s:g} s ({w.hung})", connection=True)
        if run.breaker.trip(fault):
            print(f"{self.who}: the endpoint answered nothing for {waited:.0f} s, not even a probe ({w.hung}); the "
                  f"{len(w.sent)} request(s) out end as timeouts and nothing more is sent to it in this run", file=sys.stderr, flush=True)  # fmt: skip
        w.cut_all()

    async def _send(self, run: _Run, request: Request, worst: float) -> tuple[Any, CallFault | None]:
        """(answer, None) or (None, the attempt's fault). A request the watchdog ends (a hung endpoint) is a
        timeout fault; one abandoned after a signal, or a bug, settles its reservation and raises."""
        halt = run.halt
        task = asyncio.current_task()
        assert task is not None
        halt.sending.add(task)
        run.watch.sent[task] = time.monotonic()
        try:
            answer, fault = await self.provider.send(run.client, request), None
        except CallFault as exc:
            answer, fault = None, exc
        except asyncio.CancelledError:
            if task not in run.watch.cut or halt.halted:
                self.budget.settle(worst, 0.0)  # abandoned after a signal: nothing was paid
                raise
            task.uncancel()  # ended by the watchdog: a hung endpoint's timeout, not a stop
            run.watch.cut.discard(task)
            assert run.breaker.last is not None
            answer, fault = None, run.breaker.last
        except BaseException:
            self.budget.settle(worst, 0.0)  # a bug: nothing was paid
            raise
        finally:
            halt.sending.discard(task)
            run.watch.sent.pop(task, None)
        if fault is None or not fault.connection:
            run.watch.heard = time.monotonic()  # the endpoint said something (an answer, even an HTTP error)
        elif fault.reason in ("timeout", "connect timeout"):
            self.stats["timeouts"] += 1
        return answer, fault

    def _circuit_opened(self, breaker: CircuitBreaker) -> None:
        """One stderr line when the endpoint is given up, so a run that ends early says why."""
        last = breaker.last
        assert last is not None
        print(f"{self.who}: circuit open after {breaker.failures} consecutive calls without an answer (last: "
              f"{last.reason}); nothing more is sent to this endpoint in this run", file=sys.stderr, flush=True)  # fmt: skip

    async def _ask(self, run: _Run, key: str, request: Request) -> tuple[dict[str, Any], bool]:
        """(entry, answered from the cache). The call is claimed across processes in its first slot; while
        another process holds the claim this call waits outside any slot, then takes that process's answer."""
        a = self.settings
        loop = asyncio.get_running_loop()
        size = self._sizes.get(key)
        if size is None:
            size = len(canonical_bytes(request.hashed()))
        max_tokens = request.sampling.max_tokens
        worst = self.worst_cost(size, max_tokens)
        jitter = random.Random(key)  # jitter only spreads retries
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
                        if self.cache.claim_is_quick(key):
                            claim = self.cache.try_claim(key)  # one flock on an open descriptor: no thread hop
                        else:
                            # Creating the stripe file may wait on a busy disk (or the shared cache): off the loop.
                            claim = await loop.run_in_executor(run.pool, self.cache.try_claim, key, claim_hold_s(a))
                        if claim is not None and (waited or not self.refresh):
                            entry = self.cache.get(key)  # answered since we first looked (by whoever held the claim)
                            if entry is not None:
                                self.stats["cache_hits"] += 1
                                halt.kept += 1
                                return entry, True
                    if claim is not None:
                        await run.limiter.acquire(size + max_tokens, sleep=halt.nap)
                        if run.stop or halt.halted:
                            raise _Stopped  # a signal during the rate-limit wait: this request is not sent
                        self.budget.reserve(worst, request.label)
                        attempts += 1
                        started = time.perf_counter()
                        answer, fault = await self._send(run, request, worst)
                        latency = time.perf_counter() - started
                        cost = 0.0 if fault is not None else self.cost(answer, worst)
                        self.budget.settle(worst, cost)
                if claim is None:
                    if not waited:
                        self.stats["claim_waits"] += 1
                    waited = True
                    await halt.nap(poll)
                    poll = min(_CLAIM_POLL_S[1], poll * 2)
                    continue
                if run.breaker.record(fault):
                    self._circuit_opened(run.breaker)
                if fault is None:
                    entry = self.entry(request, answer, cost, latency, attempts)
                    if entry["outcome"] != "error":
                        assert claim is not None
                        # The writer releases the claim once the entry is on disk; `fresh`: the look after claiming
                        # found no entry, so there is no older answer to keep in history (a refresh skips that look).
                        run.writer.put(key, entry, claim, fresh=waited or not self.refresh)
                        claim = None
                        halt.kept += 1
                    return entry, False
                if isinstance(fault, FatalCallError) or attempts > a.max_retries or run.breaker.open:
                    break
                if halt.halted:
                    raise _Stopped  # after a signal nothing is sent again, retries included
                self.stats["retries"] += 1
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
        if run.breaker.open and fault is None:  # never sent: the endpoint was given up first
            last = run.breaker.last
            assert last is not None
            given_up = "the endpoint answered neither the requests out nor a probe" if run.breaker.probed else f"{a.circuit_breaker} consecutive connection failures or timeouts"
            detail = f"{given_up}; last: {last.reason}: {last.detail}"
            return error_entry("circuit open", self.redact(detail), attempts), False
        assert fault is not None
        return error_entry(fault.reason, self.redact(f"after {attempts} attempt(s): {fault.detail}"), attempts), False
