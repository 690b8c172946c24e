"""Judge fan-out on a local Dask cluster: chunks balanced over the lanes that run at once, the stage's
own process answering chunks while the cluster starts, and worker processes forked from a preloaded server."""

from __future__ import annotations

import concurrent.futures
import contextlib
import sys
import threading
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.artifacts import Store
from novelty_audit.judges import Idea, PairItem
from novelty_audit.orchestration import balanced_size, plan_chunks
from novelty_audit.params import FlowsParams
from novelty_audit.pipeline import run_stage

WAIT_S = 120  # generous: the machine running the suite may be busy


class _J:
    def __init__(self, name: str, backend: str):
        self.name, self.backend = name, backend


def _pairs(n: int, dataset: str) -> list[PairItem]:
    ideas = [Idea(f"i-{k:016x}", f"Title {k}", f"Idea {k}", f"d{k:063x}") for k in range(2 * n)]
    return [PairItem(dataset, f"p-{k:016x}", ideas[2 * k], ideas[2 * k + 1], ideas[2 * k].idea_id) for k in range(n)]


# -- planning ----------------------------------------------------------------------------------------


def test_chunks_fill_every_lane_of_the_last_round_and_never_exceed_the_chunk_size():
    pairs = _pairs(535, "a")
    chunks = plan_chunks([_J("gpt", "openai")], pairs, [], chunk_size=50, lanes={"openai": 2})
    sizes = [len(c.pairs) for c in chunks]
    # 11 chunks of 50 would leave one lane idle through the last round; 12 of ~45 keep both busy.
    assert len(sizes) == 12 and max(sizes) <= 50 and max(sizes) - min(sizes) <= 45 - 40
    assert [p for c in chunks for p in c.pairs] == pairs


def test_work_that_fits_one_chunk_stays_one_chunk_and_shared_pairs_stay_together():
    assert balanced_size(40, 50, 4) == 40
    pairs = _pairs(30, "a") + _pairs(30, "b")  # the same 30 pair ids in both datasets
    chunks = plan_chunks([_J("gpt", "openai")], pairs, [], chunk_size=25, lanes={"openai": 4})
    assert len(chunks) % 4 == 0 and all(len(c.pairs) <= 25 for c in chunks)
    for c in chunks:
        ids = [p.pair_id for p in c.pairs]
        assert all(ids.count(i) == 2 for i in ids)


# -- dispatch while the cluster starts -----------------------------------------------------------------


class _Gate:
    """A task runner whose client (the cluster) is ready when the test says so."""

    def __init__(self, fail: bool = False):
        self.open, self.fail = threading.Event(), fail

    @property
    def client(self) -> str:
        assert self.open.wait(WAIT_S)
        if self.fail:
            raise RuntimeError("cluster did not start")
        return "client"


class _Recorder:
    """A submit function: records which chunk went where and hands back a future the test completes."""

    def __init__(self) -> None:
        self.submitted: list[int] = []
        self.futures: dict[int, concurrent.futures.Future] = {}
        self.changed = threading.Condition()

    def __call__(self, i: int) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self.changed:
            self.submitted.append(i)
            self.futures[i] = fut
            self.changed.notify_all()
        return fut

    def wait_for(self, n: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.submitted) >= n, timeout=WAIT_S), self.submitted


def _run_dispatch(gate: _Gate, here: _Recorder, there: _Recorder, lanes: int, n: int) -> tuple[threading.Thread, dict]:
    from flows._fanout import Starting, dispatch

    starting = Starting(gate)  # type: ignore[arg-type]
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(dispatch(list(range(n)), there, starting, here, lanes)))
    t.start()
    return t, out


def test_while_the_cluster_starts_chunks_run_here_one_per_lane_then_all_the_rest_go_to_the_cluster():
    gate, here, there = _Gate(), _Recorder(), _Recorder()
    t, out = _run_dispatch(gate, here, there, lanes=2, n=7)
    here.wait_for(2)
    assert here.submitted == [0, 1] and there.submitted == []  # one per lane, no more
    here.futures[0].set_result("done")  # a lane frees up: the next chunk runs here too
    here.wait_for(3)
    gate.open.set()  # the cluster is ready: everything left goes there
    t.join(WAIT_S)
    assert not t.is_alive()
    assert here.submitted == [0, 1, 2] and there.submitted == [3, 4, 5, 6]
    assert sorted(out) == list(range(7)) and all(isinstance(f, concurrent.futures.Future) for f in out.values())


def test_during_a_long_start_up_this_process_takes_at_most_half_of_the_chunks():
    gate, here, there = _Gate(), _Recorder(), _Recorder()
    t, out = _run_dispatch(gate, here, there, lanes=4, n=5)
    here.wait_for(2)
    for i in (0, 1):
        here.futures[i].set_result("done")  # lanes free up, but half of the chunks (2 of 5) ran here already
    assert t.is_alive() and here.submitted == [0, 1]
    gate.open.set()
    t.join(WAIT_S)
    assert not t.is_alive() and here.submitted == [0, 1] and there.submitted == [2, 3, 4]


def test_a_cluster_that_fails_to_start_fails_only_the_chunks_it_was_given():
    gate, here, there = _Gate(fail=True), _Recorder(), _Recorder()
    t, out = _run_dispatch(gate, here, there, lanes=2, n=4)
    here.wait_for(2)
    gate.open.set()
    t.join(WAIT_S)
    assert not t.is_alive() and there.submitted == []
    assert isinstance(out[0], concurrent.futures.Future) and isinstance(out[1], concurrent.futures.Future)
    assert all(isinstance(out[i], RuntimeError) for i in (2, 3))  # still reported, and 0, 1 still waited for


def test_without_a_start_up_to_fill_every_chunk_goes_to_the_runner():
    from flows._fanout import Starting, dispatch
    from prefect.task_runners import ThreadPoolTaskRunner

    here, there = _Recorder(), _Recorder()
    starting = Starting(ThreadPoolTaskRunner(max_workers=1))  # starts nothing lazily: ready at once
    assert starting.done()
    out = dispatch([0, 1, 2], there, starting, here, lanes=2)
    assert here.submitted == [] and there.submitted == [0, 1, 2] and sorted(out) == [0, 1, 2]


# -- local worker processes ---------------------------------------------------------------------------


def _loaded() -> dict[str, bool]:
    return {m: m in sys.modules for m in ("prefect", "flows._fanout", "novelty_audit.orchestration._worker")}


@pytest.mark.slow
def test_local_worker_processes_start_with_the_fan_out_modules_already_imported():
    from distributed import Client

    from flows._fanout import local_cluster_kwargs, local_process_cluster

    kwargs = local_cluster_kwargs(FlowsParams(task_runner="dask", max_workers=1, dask_processes=True))
    with local_process_cluster(**kwargs) as cluster, Client(cluster, timeout=WAIT_S) as client:
        loaded = client.run(_loaded)
    # Spawned workers (dask's default) would import these only when their first chunk arrives.
    assert list(loaded.values()) == [dict.fromkeys(_loaded(), True)]


def _configure(project: Path, mock: MockLLM) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"]["judges"] = {
        "always-first": {"backend": "always-first"},
        "mock-gpt": {
            "backend": "openai",
            "args": {"model": "gpt-x", "base_url": mock.base_url, "api_key_env": None, "votes": 1, "orders": "both", "concurrency": 4},
        },
    }
    raw["judge"]["tasks"] = ["pairwise"]
    raw["judge"]["progress"] = False
    raw["judge"].setdefault("prices", {})["gpt-x"] = {"input_per_mtok": 0.15, "output_per_mtok": 0.6}
    # The small project's 24 pairs (no id shared by the two splits) in chunks of 6: four, a multiple of the two lanes.
    raw["flows"] = {
        **(raw.get("flows") or {}),
        "task_runner": "dask", "address": None, "max_workers": 2, "dask_processes": True, "chunk_size": 6,
        "limits": {"openai": {"concurrency": 2, "per_second": None}},
    }  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def _differing(a: pl.DataFrame, b: pl.DataFrame) -> dict:
    """The columns whose values differ between two tables of one shape, with the first differing pair of values."""
    if a.columns != b.columns or a.height != b.height:
        return {"columns": (a.columns, b.columns), "rows": (a.height, b.height)}
    out = {}
    for c in a.columns:
        x, y = a[c].to_list(), b[c].to_list()
        if x != y:
            i = next(i for i, (u, v) in enumerate(zip(x, y)) if u != v)
            out[c] = (i, x[i], y[i])
    return out


@pytest.mark.slow
def test_judging_on_local_worker_processes_equals_the_plain_stage(prefect_api, make_tiny_project_copy):
    from flows.evaluate import evaluate

    with MockLLM() as mock:
        plain, fanned = make_tiny_project_copy("plain"), make_tiny_project_copy("fanned")
        for project in (plain, fanned):
            _configure(project, mock)
        with contextlib.chdir(plain):
            run_stage("pin")
            run_stage("judge")
        calls_plain = mock.count
        summary = evaluate(project_dir=str(fanned), stages=["pin", "judge"])
        calls_fanned = mock.count - calls_plain

    assert summary.totals()["failed"] == 0
    assert calls_fanned == calls_plain > 0  # chunks answered here during start-up and on the workers: none lost or repeated
    for name in ("verdicts", "pointwise", "judges"):
        a = pl.read_parquet(plain / "artifacts" / "judge" / f"{name}.parquet")
        b = pl.read_parquet(fanned / "artifacts" / "judge" / f"{name}.parquet")
        drop = [c for c in ("latency_s",) if c in a.columns]
        assert b.drop(drop).equals(a.drop(drop)), (name, _differing(a.drop(drop), b.drop(drop)))
    facts = Store(fanned / ".novelty-audit").run_facts("judge")[-1]
    assert facts["mock-gpt"]["chunks"] % 2 == 0 and facts["mock-gpt"]["calls"] == calls_fanned
