"""Judge fan-out: chunks run as Prefect tasks on the configured task runner (thread pool or a local Dask
cluster) under per-backend global limits, and the verdicts equal the stage run without fan-out."""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM
from tiny_project import SHARED_PAIR_DATASETS

from novelty_audit.artifacts import Store
from novelty_audit.errors import MissingDependencyError
from novelty_audit.judges import Idea, PairItem, PointItem
from novelty_audit.orchestration import merge_outputs, plan_chunks
from novelty_audit.params import FlowsParams
from novelty_audit.pipeline import run_stage


class _J:
    def __init__(self, name: str, backend: str):
        self.name, self.backend = name, backend


def _idea(n: int) -> Idea:
    return Idea(f"i-{n:016x}", f"Title {n}", f"Idea {n}", f"d{n:063x}")


def _pairs(n: int, dataset: str) -> list[PairItem]:
    return [PairItem(dataset, f"p-{k:016x}", _idea(2 * k), _idea(2 * k + 1), _idea(2 * k).idea_id) for k in range(n)]


def test_api_judges_are_chunked_keeping_a_pair_shared_by_two_datasets_in_one_chunk():
    pairs = _pairs(5, "a") + _pairs(5, "b")  # the same five pair ids in both datasets
    points = [PointItem("a", _idea(k), "POSITIVE") for k in range(3)]
    chunks = plan_chunks([_J("gpt", "openai"), _J("first", "always-first")], pairs, points, chunk_size=4)
    gpt = [c for c in chunks if c.judge == "gpt"]
    assert [len(c.pairs) for c in gpt] == [4, 4, 2, 0] and [len(c.points) for c in gpt] == [0, 0, 0, 3]
    for c in gpt:
        ids = [p.pair_id for p in c.pairs]
        assert all(ids.count(i) == 2 for i in ids)  # both datasets' copies together
    (first,) = [c for c in chunks if c.judge == "first"]
    assert first.pairs == pairs and first.points == points  # non-API judges are never split


def test_merged_outputs_restore_input_order_and_sum_facts():
    from novelty_audit.judges import JudgeOutput

    pairs = _pairs(4, "a")
    chunks = plan_chunks([_J("gpt", "openai")], pairs, [], chunk_size=2)
    outs = [
        JudgeOutput(pairwise=[{"dataset": "a", "pair_id": p.pair_id} for p in reversed(c.pairs)], facts={"calls": 2, "cache_hits": 1})
        for c in chunks
    ]
    (merged,) = merge_outputs([_J("gpt", "openai")], pairs, [], chunks, outs)
    assert [r["pair_id"] for r in merged.pairwise] == [p.pair_id for p in pairs]
    assert merged.facts == {"calls": 4, "cache_hits": 2, "chunks": 2}


@pytest.mark.skipif(importlib.util.find_spec("prefect_ray") is not None, reason="prefect-ray is installed here")
def test_the_ray_runner_without_its_extra_names_the_extra():
    from flows._fanout import make_task_runner

    with pytest.raises(MissingDependencyError) as err:
        make_task_runner(FlowsParams(task_runner="ray"))
    assert "novelty-audit[ray]" in err.value.hint


def _configure(project: Path, mock: MockLLM, runner: str, address: str | None = None) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    controls = {k: v for k, v in raw["judge"]["judges"].items() if v.get("backend") in ("always-first", "always-second", "random", "abstain")}
    controls["mock-gpt"] = {
        "backend": "openai",
        "args": {"model": "gpt-x", "base_url": mock.base_url, "api_key_env": None, "votes": 1, "orders": "both", "concurrency": 4},
    }
    raw["judge"]["judges"] = controls
    # Both datasets share most pair ids: a shared pair must stay in one chunk (and each prompt be asked once).
    raw["judge"]["datasets"] = SHARED_PAIR_DATASETS
    raw["judge"]["probe_datasets"] = []  # the probe is derived from human-only, not judged here
    raw["judge"]["tasks"] = ["pairwise"]
    raw["judge"]["progress"] = False
    raw["judge"].setdefault("prices", {})["gpt-x"] = {"input_per_mtok": 0.15, "output_per_mtok": 0.6}
    raw["flows"] = {
        **(raw.get("flows") or {}),
        "task_runner": runner, "address": address, "max_workers": 2, "dask_processes": False, "chunk_size": 6,
        "limits": {"openai": {"concurrency": 2, "per_second": 50}},
    }  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def _tables(project: Path) -> dict[str, pl.DataFrame]:
    # latency_s is a measured run fact carried in the rows; everything else must match exactly.
    out = {}
    for name in ("verdicts", "pointwise", "judges"):
        df = pl.read_parquet(project / "artifacts" / "judge" / f"{name}.parquet")
        out[name] = df.drop([c for c in ("latency_s",) if c in df.columns])
    return out


@pytest.fixture
def dask_cluster():
    """An existing local Dask cluster (2 in-process workers), as a user's cluster would be reached by address."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        yield cluster


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["dask", "dask-address", "thread"])
def test_fanned_out_judging_equals_the_plain_stage(prefect_api, make_tiny_project_copy, runner, request):
    from flows.evaluate import evaluate

    cluster = request.getfixturevalue("dask_cluster") if runner == "dask-address" else None
    address = cluster.scheduler_address if cluster is not None else None
    with MockLLM() as mock:
        plain, fanned = make_tiny_project_copy("plain"), make_tiny_project_copy("fanned")
        for project in (plain, fanned):
            _configure(project, mock, runner.removesuffix("-address"), address)
        with contextlib.chdir(plain):
            run_stage("pin")
            run_stage("judge")
        calls_plain = mock.count
        summary = evaluate(project_dir=str(fanned), stages=["pin", "judge"])
        calls_fanned = mock.count - calls_plain

    assert summary.totals()["failed"] == 0
    assert calls_fanned == calls_plain > 0  # no call lost or repeated by the split
    plain_t, fanned_t = _tables(plain), _tables(fanned)
    by_dataset = [set(plain_t["verdicts"].filter(pl.col("dataset") == d)["pair_id"]) for d in SHARED_PAIR_DATASETS]
    assert by_dataset[0] & by_dataset[1]  # pairs shared by both datasets were split
    for name in plain_t:
        assert fanned_t[name].equals(plain_t[name]), name
    if cluster is not None:
        assert cluster.scheduler.transition_counter > 0  # the chunks ran on the user's cluster
    facts = Store(fanned / ".novelty-audit").run_facts("judge")[-1]
    assert facts["mock-gpt"]["chunks"] > 2 and facts["mock-gpt"]["calls"] == calls_fanned


@pytest.mark.slow
def test_a_pools_dataset_is_fanned_out_and_judged_like_a_pinned_split(prefect_api, make_tiny_project_copy):
    from flows.evaluate import evaluate

    stages = ["pin", "signals", "pools", "judge"]
    with MockLLM() as mock:
        plain, fanned = make_tiny_project_copy("plain"), make_tiny_project_copy("fanned")
        for project in (plain, fanned):
            _configure(project, mock, "thread")
            raw = yaml.safe_load((project / "params.yaml").read_text())
            raw["pools"]["repair"] = {"dataset": "human-only", "seeds": [1]}  # a dataset the pools stage builds
            raw["judge"]["datasets"] = ["human-only", "human-only-seed-1"]
            (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        with contextlib.chdir(plain):
            for stage in stages:
                run_stage(stage)
        calls_plain = mock.count
        summary = evaluate(project_dir=str(fanned), stages=stages)
        calls_fanned = mock.count - calls_plain

    assert summary.totals()["failed"] == 0
    assert calls_fanned == calls_plain > 0
    plain_t, fanned_t = _tables(plain), _tables(fanned)
    built = pl.read_parquet(fanned / "artifacts" / "pools" / "datasets" / "human-only-seed-1" / "pairs.parquet")
    judged = fanned_t["verdicts"].filter((pl.col("dataset") == "human-only-seed-1") & (pl.col("judge") == "mock-gpt"))
    assert set(judged["pair_id"]) == set(built["pair_id"]) and built.height > 0  # every pair of the pools dataset
    for name in plain_t:
        assert fanned_t[name].equals(plain_t[name]), name
    assert Store(fanned / ".novelty-audit").run_facts("judge")[-1]["mock-gpt"]["chunks"] > 1
