"""Overhead of the Prefect `evaluate` flow over the same stages run directly (`run_stage` in dvc.yaml order).

Usage: python benchmarks/bench_flow.py [--runs 3] [--stages pin,judge]

Each run uses a fresh project copy in a temp dir, for both modes:
- cold: every stage computes (empty store);
- warm: a second run of the same copy, where every identity is unchanged and every stage is reused,
  so the time is pure orchestration overhead.
The flow runs against one ephemeral Prefect server started once (its start-up is timed separately and
is not part of the per-run overhead; a served deployment pays it once, not per run).
Prints medians per mode and the flow/direct ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

# The flow tests' fresh project: no run state, no Python environment.
from project_copy import ignore_run_state


def fresh_copy(base: Path, name: str) -> Path:
    dest = base / name
    shutil.copytree(REPO, dest, ignore=ignore_run_state)
    cache = REPO / ".novelty-audit" / "cache" / "embeddings"  # keyed by (model, text digest): safe to share
    if cache.exists():
        shutil.copytree(cache, dest / ".novelty-audit" / "cache" / "embeddings")
    return dest


def run_direct(project: Path, stages: list[str]) -> float:
    from novelty_audit.pipeline import run_stage

    started = time.perf_counter()
    with contextlib.chdir(project):
        for name in stages:
            run_stage(name)
    return time.perf_counter() - started


def run_flow(project: Path, stages: list[str]) -> float:
    from flows.evaluate import evaluate

    started = time.perf_counter()
    summary = evaluate(project_dir=str(project), stages=stages)
    elapsed = time.perf_counter() - started
    if summary.totals()["failed"]:
        raise SystemExit(f"flow failed: {summary.rows()}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stages", default=None, help="comma-separated stage names (default: every dvc.yaml stage)")
    args = ap.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

    from prefect.testing.utilities import prefect_test_harness

    from novelty_audit.pipeline import stage_order

    stages = args.stages.split(",") if args.stages else stage_order(REPO / "dvc.yaml")
    times: dict[str, list[float]] = {k: [] for k in ("direct cold", "direct warm", "flow cold", "flow warm")}
    with tempfile.TemporaryDirectory(prefix="bench-flow-") as tmp:
        started = time.perf_counter()
        with prefect_test_harness(server_startup_timeout=180):
            server_start = time.perf_counter() - started
            for i in range(args.runs):
                d = fresh_copy(Path(tmp), f"direct-{i}")
                times["direct cold"].append(run_direct(d, stages))
                times["direct warm"].append(run_direct(d, stages))
                f = fresh_copy(Path(tmp), f"flow-{i}")
                times["flow cold"].append(run_flow(f, stages))
                times["flow warm"].append(run_flow(f, stages))
                shutil.rmtree(d)
                shutil.rmtree(f)

    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"stages: {', '.join(stages)}; runs: {args.runs}")
    print(f"ephemeral Prefect server start-up (once): {server_start:.2f} s")
    for k, v in med.items():
        print(f"{k:12s} median {v:8.3f} s   (runs: {', '.join(f'{x:.3f}' for x in times[k])})")
    print(f"cold: flow/direct = {med['flow cold'] / med['direct cold']:.2f}x  (overhead {med['flow cold'] - med['direct cold']:+.2f} s)")
    print(f"warm: flow/direct = {med['flow warm'] / med['direct warm']:.2f}x  (overhead {med['flow warm'] - med['direct warm']:+.2f} s)")


if __name__ == "__main__":
    main()
