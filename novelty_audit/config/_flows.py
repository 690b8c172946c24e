"""The `flows:` section of params.yaml: how Prefect runs the pipeline, the drift watch and judge fan-out.

Nothing here changes a result: no stage reads this section, so no params digest covers it.
Task runner, chunk size and limits decide how fast and where work runs, never what it yields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import Frozen

__all__ = ["BackendLimit", "CanaryParams", "FlowsParams", "SchedulesParams"]


class CanaryParams(Frozen):
    """The subset of pairs the drift watch re-asks."""

    size: int = Field(default=20, ge=1)
    """Pairs per dataset (all pairs of a dataset when it has fewer)."""
    seed: int = 0
    """Seed of the `random.Random` that draws the canary pairs; the same seed draws the same pairs."""
    datasets: list[str] | None = None
    """Datasets to draw from: pinned splits or datasets the pools stage builds; null = every dataset a watched judge
    is asked about (judge.datasets and the judges' own datasets)."""
    judges: list[str] | None = None
    """Judge names to re-ask; null = every configured judge whose backend calls an API."""


class SchedulesParams(Frozen):
    """Cron schedules of the served deployments (`python -m flows.serve`)."""

    evaluate: str = "0 3 * * 1"
    """Full evaluation (every stage of dvc.yaml); default Mondays 03:00."""
    drift: str = "0 6 * * *"
    """Drift watch; default daily 06:00."""
    timezone: str = "UTC"
    """IANA time zone the cron expressions are read in."""


class BackendLimit(Frozen):
    """One global limit shared by every worker that calls a judge backend."""

    concurrency: int = Field(default=8, ge=1)
    """Judge tasks of this backend running at once, across all workers of the task runner."""
    per_second: float | None = Field(default=None, gt=0)
    """Task starts per second for this backend (a Prefect rate limit); null = no rate limit."""


class FlowsParams(Frozen):
    """How the Prefect flows run; see docs/design/flows.md."""

    task_runner: Literal["thread", "dask", "ray"] = "thread"
    """thread: a thread pool in the flow process; dask: prefect-dask (extra `dask`); ray: prefect-ray (extra `ray`)."""
    max_workers: int = Field(default=4, ge=1)
    """Thread pool size (thread), or local cluster workers (dask/ray without an address)."""
    address: str | None = None
    """Scheduler address of an existing cluster (dask: tcp://host:8786; ray: ray://host:10001); null = start a local one."""
    dask_processes: bool = False
    """Local Dask cluster only: worker processes (true) or threads in this process (false)."""
    dask_host: str = "127.0.0.1"
    """Local Dask cluster only: the interface its scheduler, workers and their HTTP (dashboard) servers listen on,
    each on a free port; the default keeps them off the network. Set e.g. 0.0.0.0 to reach the dashboard remotely."""
    chunk_size: int = Field(default=50, ge=1)
    """Pairs per judge task when judge work fans out."""
    limits: dict[str, BackendLimit] = Field(default_factory=dict)
    """Backend name → global concurrency/rate limit; a backend not listed gets `BackendLimit()`."""
    canary: CanaryParams = Field(default_factory=CanaryParams)
    """The drift watch's canary subset."""
    schedules: SchedulesParams = Field(default_factory=SchedulesParams)
    """Cron schedules of the deployments."""
    drift_dir: str = "drift"
    """Where the drift watch writes, relative to `store.root` (outputs, its own store and runs ledger)."""

    def limit(self, backend: str) -> BackendLimit:
        """The limit for `backend` (the default when it is not configured)."""
        return self.limits.get(backend, BackendLimit())
