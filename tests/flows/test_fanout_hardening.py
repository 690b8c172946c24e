"""Judge fan-out under faults and load: code digests are computed once before fan-out (and are safe to compute
from many threads), a failed fan-out keeps the run facts of the calls it made, and the local Dask cluster
listens on 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import os
import pkgutil
import random
import socket
import threading
from pathlib import Path

import pytest
import yaml
from mock_llm import MockLLM
from prefect_artifacts import latest_artifact
from tiny_project import SHARED_PAIR_DATASETS

import novelty_audit
from novelty_audit.artifacts import Store, code_digest
from novelty_audit.orchestration import StageOutcome
from novelty_audit.params import FlowsParams

# -- the code digest under a thread race ---------------------------------------------------------------

MODULES = sorted(m.name for m in pkgutil.walk_packages(novelty_audit.__path__, "novelty_audit.") if not m.name.endswith("__main__"))


def _fresh_tuples(n: int) -> list[tuple[str, ...]]:
    # Distinct roots tuples, so no digest comes from a cache filled by an earlier call.
    rng = random.Random(10)
    out = list(dict.fromkeys(tuple(rng.sample(MODULES, 3)) for _ in range(n * 2)))
    return out[:n]


def _race(fn, args: list) -> list:
    """Call fn(arg) for every arg, each in its own thread, all released at once; the results in order."""
    barrier = threading.Barrier(len(args))
    results: dict[int, object] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=120)
            results[i] = fn(args[i])
        except BaseException as exc:  # noqa: BLE001  (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(args))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    return [results[i] for i in range(len(args))]


@pytest.mark.slow
def test_many_threads_digesting_fresh_module_tuples_at_once_never_fail_and_agree():
    tuples = _fresh_tuples(24)
    # Every tuple twice, racing: the same roots must give the same digest, however the threads interleave.
    digests = _race(lambda t: code_digest(*t).digest, tuples + tuples)
    assert digests[: len(tuples)] == digests[len(tuples) :]


def test_many_threads_reading_fresh_judges_code_digests_agree():
    from novelty_audit.judges._base import Judge

    class Probe(Judge):  # only code_modules matters here
        backend = "probe"

        def __init__(self, mods):
            self.mods = mods

        def code_modules(self):
            return self.mods

        def config(self):
            return {"backend": "probe"}

        def judge(self, pairs, points):
            raise NotImplementedError

    tuples = _fresh_tuples(24)
    digests = _race(lambda t: Probe(t).code_digest, tuples + tuples)
    assert digests[: len(tuples)] == digests[len(tuples) :]


# -- fan-out in a flow ----------------------------------------------------------------------------------


def _configure(project: Path, mock: MockLLM, chunk_size: int = 6) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    controls = {k: v for k, v in raw["judge"]["judges"].items() if v.get("backend") in ("always-first", "always-second")}
    controls["mock-gpt"] = {
        "backend": "openai",
        "args": {"model": "gpt-x", "base_url": mock.base_url, "api_key_env": None, "votes": 1, "orders": "forward", "concurrency": 4},
    }
    raw["judge"]["judges"] = controls
    raw["judge"]["datasets"] = SHARED_PAIR_DATASETS
    raw["judge"]["probe_datasets"] = []  # the probe is derived from human-only, not judged here
    raw["judge"]["tasks"] = ["pairwise"]
    raw["judge"]["progress"] = False
    raw["judge"].setdefault("prices", {})["gpt-x"] = {"input_per_mtok": 0.15, "output_per_mtok": 0.6}
    raw["flows"] = {**(raw.get("flows") or {}), "task_runner": "thread", "max_workers": 4, "chunk_size": chunk_size}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


@pytest.fixture
def tiny_copy(make_tiny_project_copy) -> Path:
    """The small project (tests/tiny_project.py): what these tests check does not depend on the benchmark's size."""
    return make_tiny_project_copy("project")


@pytest.mark.slow
def test_code_digests_are_computed_before_any_chunk_runs(prefect_api, tiny_copy, monkeypatch):
    import flows._fanout as fanout
    from flows.evaluate import evaluate
    from novelty_audit.judges import _base

    real = fanout.run_chunk
    at_start: list[bool] = []

    def spy(*args, **kwargs):
        # Which judges' digests were already in the process cache when this chunk started.
        at_start.append(any(mods[0] == "novelty_audit.judges._openai" for mods in list(_base._CODE_DIGESTS)))
        return real(*args, **kwargs)

    monkeypatch.setattr(fanout, "run_chunk", spy)
    monkeypatch.setattr(_base, "_CODE_DIGESTS", {})  # as in a fresh process
    with MockLLM() as mock:
        _configure(tiny_copy, mock)
        summary = evaluate(project_dir=str(tiny_copy), stages=["pin", "judge"])
    assert summary.totals()["failed"] == 0
    assert len(at_start) > 2 and all(at_start)


@pytest.mark.slow
def test_a_failed_fanout_keeps_the_calls_and_cost_of_its_chunks(prefect_api, tiny_copy, monkeypatch):
    from flows.evaluate import evaluate
    from novelty_audit.judges._openai import OpenAIJudge

    real = OpenAIJudge.judge
    doomed: list[str] = []

    def judge(self, pairs, points):
        out = real(self, pairs, points)  # the chunk's calls are made (and paid for) first
        if pairs and not doomed:
            doomed.append(pairs[0].pair_id)
        if pairs and pairs[0].pair_id == doomed[0]:
            raise RuntimeError("injected fault after the chunk's calls")
        return out

    monkeypatch.setattr(OpenAIJudge, "judge", judge)
    with MockLLM() as mock:
        _configure(tiny_copy, mock)
        with contextlib.chdir(tiny_copy):
            from novelty_audit.pipeline import run_stage

            run_stage("pin")
        store = Store(tiny_copy / ".novelty-audit")
        before = len(store.run_facts("judge"))
        state = evaluate(project_dir=str(tiny_copy), stages=["judge"], return_state=True)
        calls = mock.count
    assert state.is_failed() and calls > 0
    with pytest.raises(RuntimeError, match="injected fault"):
        state.result()
    facts = store.run_facts("judge")[before:]
    failed = [f for f in facts if f.get("action") == "failed" and "mock-gpt" in f]
    assert failed, facts
    assert failed[-1]["mock-gpt"]["failed_chunks"] == 1 and failed[-1]["mock-gpt"]["chunks"] > 1
    outcome = StageOutcome.from_facts("judge", facts, 0.0)
    assert outcome.calls == calls and outcome.cost_usd > 0
    summary = latest_artifact("evaluate-summary").data
    assert f"API calls {calls}," in summary and "**judge failed**" in summary, summary


# -- the local Dask cluster listens on loopback only ----------------------------------------------------


def _listening_psutil(pids: set[int]) -> set[tuple[int, str, int]]:
    import psutil

    out = set()
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            for c in psutil.Process(pid).net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    out.add((pid, c.laddr.ip, c.laddr.port))
    return out


def _listening_proc(pids: set[int]) -> set[tuple[int, str, int]]:
    """The same from /proc/net/tcp{,6} (Linux), for machines without psutil."""
    listen: dict[str, tuple[str, int]] = {}
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A":  # TCP_LISTEN
                continue
            hex_ip, hex_port = fields[1].split(":")
            raw = bytes.fromhex(hex_ip)
            # /proc prints each 32-bit word in host (little-endian) order.
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            listen[fields[9]] = (socket.inet_ntop(family, raw), int(hex_port, 16))
    out = set()
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        for fd in fd_dir.iterdir() if fd_dir.exists() else ():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:[") and (inode := target[8:-1]) in listen:
                    out.add((pid, *listen[inode]))
    return out


def _listening(pids: set[int]) -> set[tuple[int, str, int]]:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return _listening_proc(pids)
    return _listening_psutil(pids)


def _process_tree() -> set[int]:
    try:
        import psutil
    except ImportError:
        return {os.getpid()} | {int(p) for p in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()}
    me = psutil.Process()
    return {me.pid} | {c.pid for c in me.children(recursive=True)}


def test_the_proc_reader_agrees_with_a_known_listening_socket():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert (os.getpid(), "127.0.0.1", port) in _listening_proc({os.getpid()})


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_the_local_dask_cluster_listens_on_127_0_0_1_only(processes):
    from flows._fanout import make_task_runner

    before = _listening(_process_tree())
    runner = make_task_runner(FlowsParams(task_runner="dask", max_workers=2, dask_processes=processes))
    with runner:
        client = runner.client  # starts the local cluster
        client.wait_for_workers(2, timeout=180)
        started = _listening(_process_tree()) - before
    assert started, "the cluster started no server?"
    # At least the scheduler's HTTP (dashboard) server and each worker's; with processes, their TCP servers too.
    assert len(started) >= (7 if processes else 3), started
    assert {ip for _, ip, _ in started} == {"127.0.0.1"}, started
