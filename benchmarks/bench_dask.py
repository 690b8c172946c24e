"""Judge fan-out on a local Dask cluster against the thread runner, for the same fresh API calls.

The same API judge answers the same synthetic pairs three ways, each run against a fresh store (so no call is
a cache hit), against the mock OpenAI-compatible server (its own process, on 127.0.0.1, a fixed latency):

- plain:  `judge.judge(pairs, [])` in this process (what `novelty-audit stage judge` does);
- thread: the flows' fan-out hook (`flows._fanout.judge_map`) with `flows.task_runner: thread`;
- dask:   the same hook with `flows.task_runner: dask`, a local cluster of worker processes started by the hook
          (its start-up is part of the time, as it is for a user).

Each run is a fresh Python process (as a stage run is: nothing imported, no fork server, no cluster), timed
from the moment the hook is made (the flows make it before the stage reads its inputs) to the merged outputs,
cluster start-up and teardown included. Both fan-outs run inside a Prefect flow against one Prefect server
started once (prefect_test_harness), so the global concurrency limits are real server round trips.
Default: 535 pairs × 2 orders × 3 votes = 3,210 calls.

    python benchmarks/bench_dask.py [--repeats 3] [--pairs 535] [--latency 0.05] [--workers 2]
        [--concurrency 8] [--slots 4] [--chunk-size 50] [--dask-threads]

Prints medians, dask/thread (goal ≤ 1.2) and the load average; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

from bench_judge import start_server, synthetic_pairs

from novelty_audit.params import Params, load_raw_params


def bench_params(url: str, store: Path, a: argparse.Namespace, runner: str) -> Params:
    raw = load_raw_params(REPO / "params.yaml")
    raw["store"] = {"root": str(store), "artifacts": str(store / "artifacts")}
    raw["judge"]["tasks"] = ["pairwise"]
    raw["judge"]["progress"] = False
    raw["judge"]["prices"] = {"mock": {"input_per_mtok": 0.15, "output_per_mtok": 0.6}}
    raw["judge"]["budget_usd"] = 1000.0  # a cap, so every call reserves and settles on the store's budget file
    raw["judge"]["judges"] = {
        "bench": {
            "backend": "openai",
            "args": {"model": "mock", "base_url": url, "api_key_env": None, "votes": a.votes, "orders": "both", "concurrency": a.concurrency},
        }
    }
    raw["flows"] = {
        **(raw.get("flows") or {}),
        "task_runner": runner, "max_workers": a.workers, "chunk_size": a.chunk_size, "dask_processes": not a.dask_threads,
        "limits": {"openai": {"concurrency": a.slots, "per_second": None}},
    }  # fmt: skip
    return Params.model_validate(raw)


def run_plain(params: Params, pairs: list) -> tuple[float, dict[str, Any]]:  # noqa: D103
    from novelty_audit.judges import build_judges

    started = time.perf_counter()
    (judge,) = build_judges(params.judge, store_root=params.store.root).judges
    out = judge.judge(pairs, [])
    return time.perf_counter() - started, out.facts


def run_fanout(params: Params, pairs: list) -> tuple[float, dict[str, Any]]:
    from prefect import flow

    from flows._fanout import judge_map
    from novelty_audit.judges import build_judges

    @flow(name="bench-dask", persist_result=False)
    def fanout() -> tuple[float, dict[str, Any]]:
        started = time.perf_counter()
        hook = judge_map(params)  # as the flows do: the hook first, then the stage builds its judges
        judges = build_judges(params.judge, store_root=params.store.root).judges
        (out,) = hook(judges, pairs, [])
        return time.perf_counter() - started, out.facts

    return fanout()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=535)
    ap.add_argument("--votes", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--workers", type=int, default=2, help="flows.max_workers: thread pool size and local Dask workers")
    ap.add_argument("--concurrency", type=int, default=8, help="the judge's own in-flight bound (per chunk)")
    ap.add_argument("--slots", type=int, default=4, help="flows.limits.openai.concurrency (global slots)")
    ap.add_argument("--chunk-size", type=int, default=50)
    ap.add_argument("--dask-threads", action="store_true", help="Dask workers as threads of this process")
    ap.add_argument("--skip-plain", action="store_true")
    ap.add_argument("--one", choices=["plain", "thread", "dask"], help=argparse.SUPPRESS)  # a child: one timed run
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        import logging

        logging.getLogger("distributed").setLevel(logging.ERROR)
        params = bench_params(a.url, Path(a.store), a, "thread" if a.one == "plain" else a.one)
        wall, facts = (run_plain if a.one == "plain" else run_fanout)(params, synthetic_pairs(a.pairs))
        print(json.dumps({"wall": wall, "calls": facts["calls"], "cache_hits": facts["cache_hits"], "errors": facts["errors"]}))
        return
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    proc, url = start_server(a.latency)
    tmp = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    modes = (["plain"] if not a.skip_plain else []) + ["thread", "dask"]
    times: dict[str, list[float]] = {m: [] for m in modes}
    calls = 0
    try:
        with prefect_test_harness(server_startup_timeout=180):
            env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
            passed = [f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items() if k in ("pairs", "votes", "latency", "workers", "concurrency", "slots", "chunk_size")]
            passed += ["--dask-threads"] if a.dask_threads else []

            def one(mode: str, store: Path, *extra: str) -> dict[str, Any]:
                cmd = [sys.executable, __file__, *passed, *extra, f"--one={mode}", f"--url={url}", f"--store={store}"]
                res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
                if res.returncode != 0:
                    raise SystemExit(f"{mode} run failed:\n{res.stderr[-3000:]}")
                return json.loads(res.stdout.strip().splitlines()[-1])

            one("thread", tmp / "warm", "--pairs=8")  # warms the mock server and the Prefect API once, untimed
            for r in range(a.repeats):
                line = []
                for mode in modes:
                    store = tmp / f"{mode}-{r}"
                    facts = one(mode, store)
                    assert facts["cache_hits"] == 0 and facts["errors"] == 0, facts
                    calls = calls or facts["calls"]
                    assert facts["calls"] == calls, (mode, facts["calls"], calls)
                    wall = facts["wall"]
                    times[mode].append(wall)
                    line.append(f"{mode} {wall:.2f} s")
                    shutil.rmtree(store, ignore_errors=True)
                print(f"  repeat {r + 1}: " + " · ".join(line) + f" · load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)

    med = {m: statistics.median(v) for m, v in times.items()}
    load = os.getloadavg()
    in_flight = min(a.workers, a.slots) * a.concurrency
    print(f"{calls} fresh calls · latency {a.latency * 1000:.0f} ms · {a.workers} workers · {a.slots} slots · "
          f"chunk size {a.chunk_size} · judge concurrency {a.concurrency} · ideal {calls * a.latency / in_flight:.2f} s")  # fmt: skip
    for m in modes:
        print(f"median {m:6s} wall: {med[m]:6.2f} s   (runs: {', '.join(f'{x:.2f}' for x in times[m])})")
    ratio = med["dask"] / med["thread"]
    print(f"dask / thread: {ratio:.2f}×  (goal ≤ 1.2) · load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    summary = {
        "calls": calls, "thread_s": round(med["thread"], 3), "dask_s": round(med["dask"], 3), "ratio": round(ratio, 3),
        "plain_s": round(med["plain"], 3) if "plain" in med else None, "workers": a.workers, "slots": a.slots,
        "chunk_size": a.chunk_size, "judge_concurrency": a.concurrency, "latency_s": a.latency, "repeats": a.repeats,
        "dask_processes": not a.dask_threads, "load_avg": [round(x, 2) for x in load], "cores": os.cpu_count(),
    }  # fmt: skip
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
