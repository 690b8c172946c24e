"""Judge fan-out on a Prefect task runner, with one global concurrency (and optional rate) limit per backend.

`judge_map(params)` returns the judge stage's `map_judges` hook: API judges' chunks (planned by
`novelty_audit.orchestration.plan_chunks`) run as `judge-chunk` tasks on the runner chosen in params.yaml
`flows.task_runner`, local judges run in the stage's process meanwhile, and the outputs are merged back
into one output per judge, equal to the unsplit run.

Limits: before fan-out the flow upserts, per backend, a Prefect global concurrency limit
`novelty-audit-judge-<backend>` with `flows.limits.<backend>.concurrency` slots, and with `per_second`
set a second limit `novelty-audit-judge-<backend>-rate` whose slots decay at that rate. Each chunk
task holds a slot of the first for its whole run and takes a slot of the second when it starts. The
limits live in the Prefect server, so they hold across every worker of a Dask or Ray cluster, and
across concurrent flow runs. Within a chunk the judge's own limits apply (`concurrency`,
`requests_per_minute`, `tokens_per_minute` in its args), so a backend's ceilings are
slots × the judge's in-flight bound and slots × its request rate; see docs/design/flows.md.

A local Dask cluster (no `flows.address`) listens on `flows.dask_host` (default 127.0.0.1) only: scheduler,
workers and their HTTP/dashboard servers. Its worker processes (`flows.dask_processes`) fork from a
multiprocessing fork server that imported Prefect, this module, the API SDKs and the judges' code digests
once, started when the hook is made (so it warms up while the stage reads its inputs): a spawned worker
imports all of it itself (~6 s of CPU each on a busy 2-core machine), and a forked one exits without the
interpreter's slow teardown (which outlasted the nanny's grace). While a local cluster starts, this process
answers chunks in a thread pool, one lane per chunk that can run at once; the rest go to the cluster. Chunk
sizes are balanced over those lanes (min(workers, backend slots)). See docs/design/flows.md ("Dask vs the
thread pool") and benchmarks/bench_dask.py.

Each judge's code digest is computed before fan-out. A failed chunk fails the stage, but only after every
chunk has finished; the run facts (calls, cost) of all of them go to the run log first, so a failed run
still reports what it paid for.

Budget: every chunk draws on the stage run's one budget (`judge.budget_usd`), whose state lives in the store
under a file lock, so the cap holds across threads and worker processes alike.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math
import multiprocessing
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.concurrency.sync import concurrency, rate_limit
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from novelty_audit.artifacts import Store
from novelty_audit.errors import require
from novelty_audit.judges import JUDGES, Budget, JudgeMap, JudgeOutput, JudgeParams, LLMJudge, PairItem, PointItem
from novelty_audit.judges.distance import ShardJob, embed_shard
from novelty_audit.orchestration import (
    JudgeChunk,
    chunkable,
    failed_fanout_facts,
    merge_outputs,
    plan_chunks,
    run_chunk,
)
from novelty_audit.params import FlowsParams, Params

LIMIT_PREFIX = "novelty-audit-judge-"


def make_task_runner(fp: FlowsParams) -> TaskRunner:
    """The task runner named in params.yaml `flows.task_runner` (a new instance: enter it with `with`)."""
    if fp.task_runner == "thread":
        return ThreadPoolTaskRunner(max_workers=fp.max_workers)
    if fp.task_runner == "dask":
        prefect_dask = require("prefect_dask", extra="dask")
        if fp.address:
            return prefect_dask.DaskTaskRunner(address=fp.address)
        cluster = local_process_cluster if fp.dask_processes else "distributed.LocalCluster"
        return prefect_dask.DaskTaskRunner(cluster_class=cluster, cluster_kwargs=local_cluster_kwargs(fp))
    prefect_ray = require("prefect_ray", extra="ray")
    return prefect_ray.RayTaskRunner(address=fp.address) if fp.address else prefect_ray.RayTaskRunner()


def local_cluster_kwargs(fp: FlowsParams) -> dict[str, Any]:
    """Keyword arguments of the local Dask cluster: every server it starts listens on `flows.dask_host`.

    Dask's defaults listen on every interface: the scheduler's HTTP server on :8787 even with the dashboard
    off, and one HTTP server per worker. Each gets an explicit address on `dask_host`, with a free port.
    """
    host = fp.dask_host
    http = f"[{host}]:0" if ":" in host else f"{host}:0"
    kwargs: dict[str, Any] = {
        "n_workers": fp.max_workers,
        "threads_per_worker": 1,
        "processes": fp.dask_processes,
        "dashboard_address": http,
        "worker_dashboard_address": http,
    }
    if fp.dask_processes:
        # Thread workers talk over Dask's in-process transport (no socket, no host); process workers over TCP.
        kwargs["host"] = host
    return kwargs


WORKER_MODULES = ("distributed", "prefect", "prefect_dask", __name__, "novelty_audit.orchestration._worker")
"""What every local worker process needs before its first chunk: the task engine, this module's tasks, and the
API judges' code digests (computed on import of `novelty_audit.orchestration._worker`)."""


def worker_preload(jp: JudgeParams) -> list[str]:
    """Modules a local worker process needs for these judges: WORKER_MODULES plus the SDKs of the enabled API backends."""
    backends = sorted({spec.backend for spec in jp.judges.values() if spec.enabled and chunkable(spec.backend)})
    for b in backends:
        JUDGES.get(b)  # the backend table imports a backend's module (its judge class) on first use only
    sdks = {c.backend: c.sdk_module for c in LLMJudge.__subclasses__() if c.backend and c.sdk_module}
    return [*WORKER_MODULES, *(sdks[b] for b in backends if b in sdks)]


def start_worker_server(modules: Sequence[str]) -> None:
    """Start this process's multiprocessing fork server with `modules` preloaded (a no-op once it runs).

    Local Dask worker processes (`local_process_cluster`) fork from it. Its imports run in its own process,
    so starting it early overlaps them with the stage's own work. A module that fails to import there is
    skipped by multiprocessing and imported by the worker that needs it.
    """
    import multiprocessing.forkserver

    import distributed.utils

    if hasattr(distributed.utils, "_forkserver_preload_set"):
        # Otherwise distributed sets its own list when it first makes a worker, importing numpy, pandas and
        # lz4 into this process to check they exist (1.5 s on a busy 2-core machine); ours replaces it.
        distributed.utils._forkserver_preload_set = True
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(modules))
    multiprocessing.forkserver.ensure_running()


def local_process_cluster(**kwargs: Any) -> Any:
    """A `distributed.LocalCluster` whose worker processes fork from the fork server (`start_worker_server`).

    Spawned workers (dask's default) re-import the parent's `__main__` and then everything a chunk needs, each
    on its own; and they exit through the interpreter's full teardown, which with Prefect loaded outlasts the
    nanny's 4 s grace on a busy machine (the worker is then killed). Forked workers start with those imports
    done and exit at once (Prefect's log and event workers still drain first: they hook threading's exit).
    """
    import dask
    import distributed

    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows: dask's default, spawn
        return distributed.LocalCluster(**kwargs)
    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        start_worker_server(WORKER_MODULES)  # no-op when the hook already started it with the judges' SDKs
        return distributed.LocalCluster(**kwargs)


def lanes(fp: FlowsParams, backend: str) -> int:
    """How many chunks of `backend` can run at once: task slots of the runner, capped by the backend's global limit.

    With an existing cluster (`flows.address`) its size is unknown here; the global limit alone bounds it.
    """
    slots = max(1, fp.limit(backend).concurrency)
    return slots if fp.address else min(fp.max_workers, slots)


def limit_names(backend: str, fp: FlowsParams) -> tuple[str, str | None]:
    """(concurrency limit name, rate limit name or None) of a backend."""
    base = f"{LIMIT_PREFIX}{backend}"
    return base, (f"{base}-rate" if fp.limit(backend).per_second else None)


def ensure_limits(backends: Sequence[str], fp: FlowsParams) -> None:
    """Create or update each backend's global limits to match params.yaml."""
    with get_client(sync_client=True) as client:
        for backend in sorted(set(backends)):
            lim = fp.limit(backend)
            conc, rate = limit_names(backend, fp)
            client.upsert_global_concurrency_limit_by_name(name=conc, limit=lim.concurrency)
            if rate:
                client.upsert_global_concurrency_limit_by_name(
                    name=rate, limit=max(1, math.ceil(lim.per_second)), slot_decay_per_second=lim.per_second
                )


class Starting:
    """A task runner being started in a background thread (`start_in_background`)."""

    def __init__(self, runner: TaskRunner) -> None:
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        if not hasattr(type(runner), "client"):  # the class: on the instance the property would start it here
            self._done.set()  # thread and Ray runners start nothing lazily
            return
        ctx = contextvars.copy_context()
        threading.Thread(target=ctx.run, args=(self._start, runner), name="dask-cluster-start", daemon=True).start()

    def _start(self, runner: Any) -> None:
        try:
            _ = runner.client  # prefect-dask makes the cluster and client on first access
        except BaseException as exc:  # noqa: BLE001  re-raised by wait() in the caller's thread
            self._error = exc
        with self._lock:
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn()

    def done(self) -> bool:
        return self._done.is_set()

    def on_done(self, fn: Callable[[], None]) -> None:
        """Call `fn` once the start has finished (at once if it has)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(fn)
                return
        fn()

    def wait(self) -> None:
        """Wait for the start to finish; re-raise its error."""
        self._done.wait()
        if self._error is not None:
            raise self._error


def dispatch(
    order: Sequence[int],
    submit: Callable[[int], Any],
    starting: Starting,
    submit_here: Callable[[int], Any] | None = None,
    lanes: int = 0,
) -> dict[int, Any]:
    """Submit every chunk index of `order` once: index → its future, or the exception that kept it from running.

    While `starting` (the cluster) is not ready, up to `lanes` chunks at a time go to `submit_here` (a thread
    pool of this process), at most half of them all, so the cluster keeps the larger share even when there
    are few chunks; the moment it is ready, all the rest go to `submit`. A chunk's answer does not depend on
    where it ran, and every chunk still holds its backend's global slot, so this only fills the start-up.
    """
    events: queue.SimpleQueue[str] = queue.SimpleQueue()
    starting.on_done(lambda: events.put("ready"))
    out: dict[int, Any] = {}
    pending = list(order)
    free = lanes if submit_here is not None else 0
    share = len(pending) // 2
    while pending and free > 0 and share > 0 and not starting.done():
        while free > 0 and share > 0 and pending and not starting.done():
            i = pending.pop(0)
            try:
                fut = out[i] = submit_here(i)  # type: ignore[misc]
            except Exception as exc:  # noqa: BLE001  reported like a failed chunk
                out[i] = exc
                continue
            free -= 1
            share -= 1
            fut.add_done_callback(lambda _f: events.put("free"))
        if events.get() == "free":  # a chunk here finished, or the cluster is ready
            free += 1
    try:
        starting.wait()
    except BaseException as exc:  # noqa: BLE001  the chunks already running here still finish and are counted
        out.update({i: exc for i in pending})
        return out
    for i in pending:
        try:
            out[i] = submit(i)
        except Exception as exc:  # noqa: BLE001
            out[i] = exc
    return out


@task(name="judge-chunk", task_run_name="{chunk.judge}#{chunk.index}", cache_policy=NO_CACHE)
def judge_chunk(
    jp: JudgeParams,
    store_root: str,
    chunk: JudgeChunk,
    limit: str,
    rate: str | None,
    budget: Budget | None = None,
    shared_cache: str | None = None,
    shared_cache_options: dict[str, Any] | None = None,
) -> JudgeOutput:
    """Answer one chunk of an API judge while holding a slot of its backend's global limit."""
    with concurrency(limit, occupy=1, strict=True):
        if rate:
            rate_limit(rate, occupy=1, strict=True)
        out = run_chunk(
            jp, store_root, chunk, budget, shared_cache=shared_cache, shared_cache_options=shared_cache_options
        )
    get_run_logger().info(
        "%s#%d: %d pairs, %d ideas, calls %s, cache hits %s",
        chunk.judge, chunk.index, len(chunk.pairs), len(chunk.points), out.facts.get("calls", 0), out.facts.get("cache_hits", 0),
    )  # fmt: skip
    return out


@task(name="embed-shard", task_run_name="embed-shard-{job.shard.index}", cache_policy=NO_CACHE)
def embed_shard_task(job: ShardJob) -> int:
    """Embed one corpus shard into the shared embedding cache (a no-op when another run stored it)."""
    n = embed_shard(job)
    get_run_logger().info("embedding shard %d: %d texts stored", job.shard.index, n)
    return n


@contextlib.contextmanager
def forward_progress(logger: Any) -> Iterator[None]:
    """Progress lines of long library steps (`novelty_audit.progress`, e.g. corpus embedding) go to the run log."""

    class _Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logger.info("%s", record.getMessage())

    source = logging.getLogger("novelty_audit.progress")
    handler, level = _Forward(logging.INFO), source.level
    source.addHandler(handler)
    source.setLevel(logging.INFO)
    try:
        yield
    finally:
        source.removeHandler(handler)
        source.setLevel(level)


def judge_map(params: Params) -> JudgeMap:
    """The judge stage's `map_judges` hook for these params (the params the stage itself runs with)."""
    # Absolute: a worker of a remote cluster has its own working directory (the project must be on a shared path).
    fp, jp, store_root = params.flows, params.judge, str(Path(params.store.root).resolve())
    local_processes = fp.task_runner == "dask" and not fp.address and fp.dask_processes
    if local_processes and "forkserver" in multiprocessing.get_all_start_methods() and any(s.enabled and chunkable(s.backend) for s in jp.judges.values()):
        # Warms up (imports) while the stage reads its inputs and builds its judges, before `run` is called.
        start_worker_server(worker_preload(jp))

    def run(judges: Sequence[Any], pairs: list[PairItem], points: list[PointItem]) -> list[JudgeOutput]:
        logger = get_run_logger()
        backends = {j.backend for j in judges if chunkable(j.backend)}
        chunks = plan_chunks(judges, pairs, points, fp.chunk_size, lanes={b: lanes(fp, b) for b in backends})
        remote = [i for i, c in enumerate(chunks) if chunkable(c.backend)]
        outputs: list[JudgeOutput | None] = [None] * len(chunks)
        errors: dict[int, BaseException] = {}
        futures = {}
        # Each judge's code digest is computed here, once, before any task starts: the chunks' judges (same
        # classes, same modules) then read it from the per-process cache instead of parsing sources from
        # several threads at once (ast.parse is not thread-safe on CPython 3.11).
        for judge in judges:
            _ = judge.code_digest
        with contextlib.ExitStack() as stack:
            runner: TaskRunner | None = None

            def started() -> TaskRunner:
                nonlocal runner
                if runner is None:
                    runner = stack.enter_context(make_task_runner(fp))
                return runner

            def shard_map(jobs: list[ShardJob]) -> Iterator[int]:
                logger.info("corpus embedding: %d shard(s) on the %s task runner", len(jobs), fp.task_runner)
                futs = [started().submit(embed_shard_task, parameters={"job": job}) for job in jobs]
                for fut in futs:
                    yield fut.result()

            # Distance judges' corpora: missing embedding shards fan out over the task runner (a runner is
            # started only when a shard is missing); the judges below then read every shard from the cache.
            for judge in judges:
                prepare = getattr(judge, "prepare_corpus", None)
                if callable(prepare):
                    prepare(map_shards=shard_map)
            if remote:
                # One cap for the whole run: the stage's budget keeps its state in the store (flock'd), and a
                # pickled copy on a worker process draws on the same file.
                budgets = {j.name: getattr(j.ctx, "budget", None) for j in judges}

                def submit_on(on: TaskRunner) -> Callable[[int], Any]:
                    def submit(i: int) -> Any:
                        limit, rate = limit_names(chunks[i].backend, fp)
                        return on.submit(
                            judge_chunk,
                            parameters={
                                "jp": jp, "store_root": store_root, "chunk": chunks[i], "limit": limit, "rate": rate,
                                "budget": budgets.get(chunks[i].judge),
                                "shared_cache": params.store.shared_cache,
                                "shared_cache_options": params.store.shared_cache_options,
                            },
                        )  # fmt: skip

                    return submit

                # A local Dask cluster takes seconds to start (worker processes, imports): it starts in the
                # background while the limits are upserted, and meanwhile this process answers chunks in a thread
                # pool of one lane per chunk that could run at once. Never with a remote cluster (`address`):
                # there, work stays off this machine.
                starting = Starting(started())
                ensure_limits([chunks[i].backend for i in remote], fp)
                here = None
                n_lanes = max(lanes(fp, chunks[i].backend) for i in remote)
                if fp.task_runner == "dask" and not fp.address and not starting.done():
                    here = submit_on(stack.enter_context(ThreadPoolTaskRunner(max_workers=n_lanes)))
                logger.info("judge fan-out: %d API chunk(s) on the %s task runner", len(remote), fp.task_runner)
                submitted: dict[int, Any] = {}
                there = submit_on(started())
                # Submitting runs in a thread, so that the local judges below start at once; it carries this
                # thread's context (Prefect's flow run, which task runs are created under).
                ctx = contextvars.copy_context()
                dispatcher = threading.Thread(
                    target=lambda: submitted.update(ctx.run(dispatch, remote, there, starting, here, n_lanes)),
                    name="judge-chunk-dispatch", daemon=True,
                )  # fmt: skip
                dispatcher.start()
            # Local judges (controls, distance, GGUF) call no service and are costly to rebuild elsewhere:
            # they run here, on the stage's own judge objects, while the API chunks are in flight.
            by_name = {j.name: j for j in judges}
            for i, c in enumerate(chunks):
                if not chunkable(c.backend) and not errors:
                    try:
                        outputs[i] = by_name[c.judge].judge(c.pairs, c.points)
                    except Exception as exc:  # the API chunks in flight still finish and are counted
                        errors[i] = exc
            if remote:
                dispatcher.join()
                for i in remote:
                    fut = submitted.get(i, RuntimeError(f"chunk {chunks[i].judge}#{chunks[i].index} was never submitted"))
                    if isinstance(fut, BaseException):
                        errors[i] = fut
                    else:
                        futures[i] = fut
            # Every chunk is waited for, failed or not: calls already paid for must reach the run log.
            for i, fut in futures.items():
                try:
                    outputs[i] = fut.result()
                except Exception as exc:
                    errors[i] = exc
        if errors:
            first = errors[min(errors)]
            facts = failed_fanout_facts(chunks, outputs, errors)
            Store(store_root).log_run_facts({"stage": "judge", "action": "failed", "error": f"{type(first).__name__}: {first}", **facts})
            logger.error(
                "judge fan-out: %d of %d chunk(s) failed (first: %s); facts of the finished chunks kept in the run log",
                len(errors), len(chunks), first,
            )  # fmt: skip
            raise first
        return merge_outputs(judges, pairs, points, chunks, outputs)  # type: ignore[arg-type]

    return run
