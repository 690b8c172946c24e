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
workers and their HTTP/dashboard servers. Each judge's code digest is computed before fan-out. A failed
chunk fails the stage, but only after every chunk has finished; the run facts (calls, cost) of all of
them go to the run log first, so a failed run still reports what it paid for.

Budget: every chunk draws on the stage run's one budget (`judge.budget_usd`), whose state lives in the store
under a file lock, so the cap holds across threads and worker processes alike.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.concurrency.sync import concurrency, rate_limit
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from novelty_audit.artifacts import Store
from novelty_audit.errors import require
from novelty_audit.judges import Budget, JudgeMap, JudgeOutput, JudgeParams, PairItem, PointItem
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
        return prefect_dask.DaskTaskRunner(cluster_class="distributed.LocalCluster", cluster_kwargs=local_cluster_kwargs(fp))
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

    def run(judges: Sequence[Any], pairs: list[PairItem], points: list[PointItem]) -> list[JudgeOutput]:
        logger = get_run_logger()
        chunks = plan_chunks(judges, pairs, points, fp.chunk_size)
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
                ensure_limits([chunks[i].backend for i in remote], fp)
                logger.info("judge fan-out: %d API chunk(s) on the %s task runner", len(remote), fp.task_runner)
                started()
                for i in remote:
                    limit, rate = limit_names(chunks[i].backend, fp)
                    futures[i] = started().submit(
                        judge_chunk,
                        parameters={
                            "jp": jp, "store_root": store_root, "chunk": chunks[i], "limit": limit, "rate": rate,
                            "budget": budgets.get(chunks[i].judge),
                            "shared_cache": params.store.shared_cache,
                            "shared_cache_options": params.store.shared_cache_options,
                        },
                    )
            # Local judges (controls, distance, GGUF) call no service and are costly to rebuild elsewhere:
            # they run here, on the stage's own judge objects, while the API chunks are in flight.
            by_name = {j.name: j for j in judges}
            for i, c in enumerate(chunks):
                if i not in futures and not errors:
                    try:
                        outputs[i] = by_name[c.judge].judge(c.pairs, c.points)
                    except Exception as exc:  # the API chunks in flight still finish and are counted
                        errors[i] = exc
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
