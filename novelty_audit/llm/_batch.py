"""Provider batch APIs (`batch: true` on an `openai` or `anthropic` judge): the not-yet-cached calls of a run
go out as one batch (OpenAI: a JSONL file + /v1/batches; Anthropic: Message Batches) at the batch price.

The promise is the interactive path's: the same call keys, the same cache entries (so a batch run's
verdicts equal an interactive run's), and never paying twice:

- **Journal before polling.** The batch id and the keys it answers are written to
  `<store root>/cache/batches/open/<batch id>.json` as soon as the provider returns the id, before the first
  poll. A killed and restarted run finds its keys there and resumes polling that batch instead of submitting
  them again. Submission itself runs under a file lock, so two processes sharing a store never submit one
  key twice. A finished batch's record moves to `done/`.
- **Budget.** Before submission the batch's worst case (each call's prompt bytes × input price + max_tokens ×
  output price, times the batch discount) is reserved on the run's budget; the actual cost (reported usage ×
  price × discount) is settled when the results are in. A resumed batch reserves its worst case again in the
  new run (its spend has not been settled anywhere yet).
- **Partial failures.** A request the provider failed (OpenAI's error file or a non-200 line, an Anthropic
  `errored`/`expired`/`canceled` result, or a result missing from the output) is recorded per call with its
  reason in the run facts and is not cached; `batch_failures: interactive` asks it at once through the
  interactive engine (full price), `next-batch` leaves it as an error so the next run puts it in a new batch.
- **A batch still running** when `batch_max_wait_s` is over ends its calls as `error` ("batch pending"): the
  stage publishes incomplete outputs and the next run resumes polling the same batch.

Providers implement three hooks: `batch_submit`, `batch_status`, `batch_results` (see `_provider.Provider`).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import sys
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..artifacts import atomic_write_bytes, canonical_bytes
from ._cache import endpoint_id
from ._faults import Answer, CallFault, FatalCallError, error_entry
from ._provider import BatchStatus
from ._types import Request

# `llm` below is the `_engine.LLMClient` asking (not imported: the engine imports this module).
LLMClient = Any
_Halt = Any

__all__ = ["BatchJournal", "BatchOutcome", "BatchStatus", "has_open_batches", "run_batches"]

log = logging.getLogger(__name__)


@dataclass
class BatchOutcome:
    """What the batch path did with a run's pending calls."""

    answered: dict[str, tuple[dict[str, Any], bool]]
    """key → (cache entry, cached) for calls answered by a batch (now in the call cache)."""
    failed: dict[str, dict[str, Any]]
    """key → error entry for calls a batch did not answer (left to the interactive engine or the next run)."""
    untouched: set[str] = field(default_factory=set)
    """Keys no batch holds, when nothing new was submitted (`submit=False`): for the interactive engine."""


class BatchJournal:
    """Open and finished batches of one store, as small JSON records (no secrets: the endpoint is normalized)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def _open_dir(self) -> Path:
        return self.root / "open"

    @contextmanager
    def submitting(self) -> Iterator[None]:
        """Exclusive across processes: look for open batches, submit, record — as one step."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "submit.lock", "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            yield

    def open_records(self, backend: str, endpoint: str) -> list[dict[str, Any]]:
        out = []
        d = self._open_dir()
        if not d.is_dir():
            return out
        for p in sorted(d.glob("*.json")):
            try:
                rec = orjson.loads(p.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                log.warning("batch journal: unreadable record %s is ignored", p)
                continue
            if isinstance(rec, dict) and rec.get("backend") == backend and rec.get("endpoint") == endpoint:
                out.append(rec)
        return out

    def record(self, rec: dict[str, Any]) -> Path:
        return atomic_write_bytes(self._open_dir() / f"{_safe(rec['batch_id'])}.json", orjson.dumps(rec, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))

    def close(self, batch_id: str, state: str) -> None:
        src = self._open_dir() / f"{_safe(batch_id)}.json"
        try:
            rec = orjson.loads(src.read_bytes())
        except FileNotFoundError:
            return  # another process finished it
        rec["state"] = state
        atomic_write_bytes(self.root / "done" / src.name, orjson.dumps(rec, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))
        src.unlink(missing_ok=True)


def _safe(batch_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in batch_id)[:200]


def has_open_batches(llm: LLMClient, keys: Iterable[str]) -> bool:
    """Whether an open batch of this store holds one of `keys` (then even an interactive run collects it
    rather than paying for the call a second time)."""
    journal = _journal(llm)
    if not journal._open_dir().is_dir():
        return False
    wanted = set(keys)
    backend = llm.endpoint.backend
    endpoint = endpoint_id(backend, llm.endpoint.base_url)
    return any(wanted.intersection(rec["keys"]) for rec in journal.open_records(backend, endpoint))


def _journal(llm: LLMClient) -> BatchJournal:
    # next to the call cache: `<store root>/cache/batches`
    return BatchJournal(llm.cache.root.parent / "batches")


async def run_batches(
    llm: LLMClient, pending: dict[str, tuple[Request, list[int]]], *, submit: bool = True, halt: _Halt | None = None
) -> BatchOutcome:
    """Answer `pending` (key → (request, reply indexes)) through provider batches: resume the open
    batches that hold some of these keys, submit the rest as new batches (unless `submit` is false: an
    interactive judge collecting what an earlier batch run left open), poll until done or
    `batch_max_wait_s`, and cache every answer under its call key. After a signal (`halt`) nothing more is
    submitted and polling stops; the journal keeps the open batches for the next run."""
    a = llm.settings
    backend = llm.endpoint.backend
    endpoint = endpoint_id(backend, llm.endpoint.base_url)
    journal = _journal(llm)
    client = llm.provider.client()
    outcome = BatchOutcome({}, {})
    try:
        with journal.submitting():
            batches: list[dict[str, Any]] = []
            covered: set[str] = set()
            for rec in journal.open_records(backend, endpoint):
                mine = [k for k in rec["keys"] if k in pending]
                if mine:
                    # Its spend has been settled nowhere yet: it counts against this run's cap first.
                    worst = sum(_worst(llm, pending[k][0]) for k in mine) * a.batch_discount
                    llm.budget.reserve(worst, f"resumed batch {rec['batch_id']}")
                    rec["_reserved_here"] = worst
                    batches.append(rec)
                    covered.update(mine)
                    llm.stats["batches_resumed"] += 1
                    log.info("%s: resuming batch %s (%d of its calls are still needed)", llm.who, rec["batch_id"], len(mine))
            new = [k for k in pending if k not in covered]
            outcome.untouched = set() if submit else set(new)
            for start in range(0, len(new) if submit else 0, a.batch_max_requests):
                if halt is not None and halt.halted:
                    break
                keys = new[start : start + a.batch_max_requests]
                worst = sum(_worst(llm, pending[k][0]) for k in keys) * a.batch_discount
                llm.budget.reserve(worst, f"a batch of {len(keys)} calls")
                try:
                    batch_id = await _with_retries(llm, lambda ks=keys: llm.provider.batch_submit(client, [(k, pending[k][0]) for k in ks]))
                except CallFault as fault:
                    # Not accepted, so not paid: these calls may be asked again, one by one or next run.
                    llm.budget.settle(worst, 0.0)
                    for k in keys:
                        outcome.failed[k] = error_entry(f"batch submit: {fault.reason}", llm.redact(fault.detail), 1)
                    continue
                except BaseException:
                    llm.budget.settle(worst, 0.0)
                    raise
                rec = {"backend": backend, "endpoint": endpoint, "model": llm.endpoint.model, "batch_id": batch_id, "keys": keys,
                       "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "state": "submitted",
                       "reserved_usd": worst}  # fmt: skip
                journal.record(rec)  # before the first poll: a restarted run resumes this batch
                rec["_reserved_here"] = worst
                batches.append(rec)
                llm.stats["batches_submitted"] += 1
                print(f"{llm.who}: submitted batch {batch_id} ({len(keys)} calls)", flush=True, file=sys.stderr)
        await asyncio.gather(*(_finish(llm, client, journal, rec, pending, outcome, halt) for rec in batches))
    finally:
        await llm.provider.aclose(client)
    return outcome


def _worst(llm: LLMClient, request: Request) -> float:
    return llm.worst_cost(len(canonical_bytes(request.hashed())), request.sampling.max_tokens)


async def _with_retries(llm: LLMClient, make: Any) -> Any:
    """A batch API request (upload, create, status, results) with the call settings' retries and backoff."""
    a = llm.settings
    attempt = 0
    while True:
        try:
            return await make()
        except CallFault as fault:
            attempt += 1
            if isinstance(fault, FatalCallError) or attempt > a.max_retries:
                raise
            llm.stats["retries"] += 1
            await asyncio.sleep(max(min(a.max_backoff_s, a.backoff_s * 2 ** (attempt - 1)), fault.retry_after or 0.0))


def _unreachable(llm: LLMClient, outcome: BatchOutcome, keys: list[str], what: str, fault: CallFault) -> None:
    """Every call of a batch the provider could not be asked about fails as "batch unreachable" (redacted)."""
    for k in keys:
        outcome.failed[k] = error_entry("batch unreachable", llm.redact(f"{what}: {fault.reason}: {fault.detail}"), 0)


async def _finish(
    llm: LLMClient, client: Any, journal: BatchJournal, rec: dict[str, Any], pending: dict, outcome: BatchOutcome, halt: _Halt | None = None
) -> None:
    a = llm.settings
    batch_id = rec["batch_id"]
    mine = [k for k in rec["keys"] if k in pending]
    reserved = rec["_reserved_here"]
    deadline = time.monotonic() + a.batch_max_wait_s
    spent = 0.0
    to_cache: list[tuple[str, dict[str, Any]]] = []
    try:
        while True:
            try:
                status = await _with_retries(llm, lambda: llm.provider.batch_status(client, batch_id))
            except CallFault as fault:
                # The batch may well be running: keep its record, the next run polls it again.
                _unreachable(llm, outcome, mine, f"batch {batch_id}", fault)
                return
            if status.done:
                break
            if time.monotonic() >= deadline:
                for k in mine:
                    outcome.failed[k] = error_entry(
                        "batch pending", f"batch {batch_id} still {status.state} after {a.batch_max_wait_s} s; the next run resumes it", 0
                    )
                return
            wait = min(a.batch_poll_s, max(0.0, deadline - time.monotonic()))
            await (halt.nap(wait) if halt is not None else asyncio.sleep(wait))
            if halt is not None and halt.halted:
                return  # the record stays open: the next run resumes polling this batch
        try:
            answers = await _with_retries(llm, lambda: llm.provider.batch_results(client, batch_id))
        except CallFault as fault:
            _unreachable(llm, outcome, mine, f"batch {batch_id} results", fault)
            return
        for k in mine:
            request = pending[k][0]
            got: Answer | CallFault | None = answers.get(k)
            if got is None:
                outcome.failed[k] = error_entry("batch: no result", f"batch {batch_id} ({status.state}) returned no result for this call", 1)
                continue
            if isinstance(got, CallFault):
                outcome.failed[k] = error_entry(got.reason, llm.redact(f"batch {batch_id}: {got.detail}"), 1)
                continue
            worst = _worst(llm, request)
            cost = llm.cost(got, worst) * a.batch_discount
            spent += cost
            entry = llm.entry(request, got, cost, 0.0, 1)
            if entry["outcome"] != "error":
                to_cache.append((k, entry))
            outcome.answered[k] = (entry, False)
        # Parallel writes (fsyncs, and PUTs to a shared cache) coalesce; a batch may hold 50,000 answers.
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(16, thread_name_prefix="batch-cache") as pool:
            await asyncio.gather(*(loop.run_in_executor(pool, llm.cache.put, k, e) for k, e in to_cache))
        journal.close(batch_id, status.state)  # only once every answer is cached
    finally:
        llm.budget.settle(reserved, spent)
