"""The study at paper scale as one run: a sweep of 60 API judge configurations against a 50 ms mock.

    python benchmarks/bench_sweep.py [--scale 1.0] [--latency 0.05] [--concurrency 32] [--keep]

A project copy (tests/project_copy.py) whose params.yaml judges, on both tasks, six bases (openai backend, models
mock-0 … mock-5, the lean mock server of benchmarks/_mock.py in its own process), each swept one knob at a time:
pairwise prompt (p3-v1, p4-v1), pointwise prompt (p1-v1), temperature (0.0), votes (1), guard (every mitigation)
and the three pinned backbone splits (dataset): 6 × (1 + 9) = 60 configurations. Base 0 reads its pairwise prompt from
prompts/bench-base.txt (a copy of reference-v1), so the second run can edit it.

`--scale` sets `judge.limit` to round(154 × scale) pairs per split (below 1) or the number of bases to
round(6 × scale) (above 1): calls grow linearly with it.

Measured in one run, each step its own `novelty-audit` process as `dvc repro` runs it, in wall seconds and CPU
seconds (`*_cpu_seconds`: user + system of the process and its children; on a loaded machine the wall time
measures the load as much as the work, the CPU time the work):
- judge stage: peak RSS (`os.wait4` of the stage process: its children included), calls sent;
- a bare `AsyncOpenAI` client sending the same number of requests (the pinned ideas' texts, prompts of the same
  size) at the same concurrency to the same mock: `ratio` = judge / bare (wall), `cpu_ratio` (CPU);
- metrics and report stages (default metrics params: 10,000 resamples, every judge pair);
- cached rerun: the judge stage again with `--force` (identity known, so every call must come from the call
  cache): seconds, calls sent (goal 0) and identical verdicts;
- the call cache on disk after the first run: bytes and files;
- audit: base 0's prompt file edited, judge → metrics → report again, then `novelty-audit audit --json`.

The machine's load is recorded at start and end: a figure taken beside other work is not an idle figure.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import LEAN_MOCK, REPO, bare, start_server  # noqa: E402
from project_copy import init_git_dvc, make_project  # noqa: E402

SPLITS = ["human-only", "human-plus-generated"]
BACKBONES = ["human-plus-generated-gpt-5.4", "human-plus-generated-gpt-5.1", "human-plus-generated-opus-4-5"]
PAIRS_PER_SPLIT = 154
GUARD = {"delimit": True, "data_notice": True, "strip_address": True}
BASE_PROMPT = "prompts/bench-base.txt"
GOALS = {"ratio": 1.15, "peak_rss_mb": 2000, "metrics_seconds": 60, "report_seconds": 30, "audit_seconds": 30, "cached_rerun_seconds": 30}


def sweep_params(url: str, n_bases: int, concurrency: int) -> tuple[dict, dict]:
    """(judges, sweeps) for params.yaml `judge:`: one sweep per base (each varies the same knobs)."""
    judges, sweeps = {}, {}
    for b in range(n_bases):
        name = f"base-{b}"
        judges[name] = {
            "backend": "openai",
            "args": {
                "model": f"mock-{b}", "base_url": url, "api_key_env": "BENCH_KEY", "local": True,
                "prompt": BASE_PROMPT if b == 0 else "reference-v1", "pointwise_prompt": "reference-v1",
                "votes": 3, "orders": "both", "sampling": {"temperature": 1.0, "max_tokens": 64},
                "concurrency": concurrency,
            },
        }  # fmt: skip
        sweeps[f"sweep-{b}"] = {
            "base": name,
            "mode": "one-at-a-time",
            "vary": {
                "prompt": ["p3-v1", "p4-v1"], "pointwise_prompt": ["p1-v1"], "temperature": [0.0], "votes": [1],
                "guard": [GUARD], "dataset": BACKBONES,
            },
        }  # fmt: skip
    return judges, sweeps


def write_project(root: Path, url: str, scale: float, concurrency: int) -> int:
    """The project copy with the sweep in its params.yaml; returns the number of bases."""
    import yaml

    make_project(root)
    shutil.copytree(REPO / "prompts", root / "prompts")
    shutil.copy(REPO / "novelty_audit" / "prompts" / "pairwise-reference-v1.txt", root / BASE_PROMPT)
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    n_bases = max(1, round(6 * max(scale, 1.0)))
    limit = round(PAIRS_PER_SPLIT * scale)
    judges, sweeps = sweep_params(url, n_bases, concurrency)
    params["judge"].update(
        datasets=SPLITS, probe_datasets=[], tasks=["pairwise", "pointwise"], judges=judges, sweeps=sweeps,
        generators={}, limit=limit if limit < PAIRS_PER_SPLIT else None, progress=False,
    )  # fmt: skip
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    init_git_dvc(root, lambda *cmd, cwd: subprocess.run(cmd, cwd=cwd, capture_output=True, text=True))
    return n_bases


class Step(NamedTuple):
    seconds: float
    cpu_seconds: float
    """user + system CPU of the process and its waited-for children: what a loaded machine does not inflate."""
    peak_rss_mb: float
    stdout: str


def stage(root: Path, env: dict, *args: str) -> Step:
    """Wall and CPU seconds, peak RSS (MB) of the process and its waited-for children, and stdout of `novelty-audit *args`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(["novelty-audit", *args], cwd=root, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this process's own rusage, not the other stages'
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        text, errors = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"novelty-audit {' '.join(args)} exited {proc.returncode}:\n{text[-3000:]}\n{errors[-3000:]}")
    return Step(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text)


def record(out: dict, name: str, step: Step, rss: bool = False) -> Step:
    out[f"{name}_seconds"], out[f"{name}_cpu_seconds"] = step.seconds, step.cpu_seconds
    if rss:
        out[f"{name}_peak_rss_mb"] = step.peak_rss_mb
    return step


def judge_calls(root: Path) -> tuple[int, int]:
    """(calls sent, cache hits) of the latest judge stage run, summed over its judges (run log, never hashed)."""
    lines = (root / ".novelty-audit" / "runlog.jsonl").read_text(encoding="utf-8").splitlines()
    rec = [json.loads(x) for x in lines if json.loads(x).get("stage") == "judge"][-1]
    facts = [v for v in rec.values() if isinstance(v, dict) and "calls" in v]
    return sum(int(f.get("calls") or 0) for f in facts), sum(int(f.get("cache_hits") or 0) for f in facts)


def cache_size(root: Path) -> tuple[int, int]:
    files = [p for p in (root / ".novelty-audit" / "cache" / "calls").rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def bare_bodies(root: Path, n: int) -> list[dict]:
    """`n` chat requests built from the pinned ideas (the reference template's size), one per call the judge sent."""
    import polars as pl

    ideas = pl.concat([pl.read_parquet(root / "artifacts" / "pin" / d / "ideas.parquet", columns=["text"]) for d in SPLITS])["text"].to_list()
    template = (REPO / "novelty_audit" / "prompts" / "pairwise-reference-v1.txt").read_text(encoding="utf-8")
    system, user = template.split("[user]")
    bodies = []
    for i in range(n):
        a, b = ideas[i % len(ideas)], ideas[(i * 7 + 1) % len(ideas)]
        text = user.replace("{{idea_a}}", a).replace("{{idea_b}}", b).replace("{{evidence}}", "").replace("{{answer_format}}", f"vote {i}")
        messages = [{"role": "system", "content": system.replace("[system]", "").strip()}, {"role": "user", "content": text}]
        bodies.append({"model": "mock-bare", "messages": messages, "max_tokens": 64, "temperature": 1.0})
    return bodies


def bare_step(root: Path, url: str, n: int, concurrency: int) -> dict[str, float]:
    """The bare client in a process of its own: this one stays small, since a child's peak RSS counts the memory
    of the process it was forked from (Linux keeps the larger of the two across exec), and 60,000 request bodies
    held here showed up as every later stage's peak."""
    cmd = [sys.executable, __file__, "--bare", url, str(n), str(concurrency), str(root)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.splitlines()[-1])


def bare_main(url: str, n: int, concurrency: int, root: Path) -> None:
    bodies = bare_bodies(root, n)
    cpu = time.process_time()
    seconds = asyncio.run(bare(url, bodies, concurrency))
    print(json.dumps({"bare_seconds": seconds, "bare_cpu_seconds": time.process_time() - cpu}))


def timed_runs(root: Path, env: dict, url: str, concurrency: int) -> dict:
    out: dict[str, float | int | bool] = {}
    for name in ("pin", "probe"):
        stage(root, env, "stage", name)
    os.sync()
    out["peak_rss_mb"] = record(out, "judge", stage(root, env, "stage", "judge")).peak_rss_mb
    out["calls"], _ = judge_calls(root)
    out["cache_bytes"], out["cache_files"] = cache_size(root)
    os.sync()
    out.update(bare_step(root, url, int(out["calls"]), concurrency))
    out["ratio"] = out["judge_seconds"] / out["bare_seconds"]
    out["cpu_ratio"] = out["judge_cpu_seconds"] / out["bare_cpu_seconds"]
    record(out, "metrics", stage(root, env, "stage", "metrics"), rss=True)
    record(out, "report", stage(root, env, "stage", "report"), rss=True)
    verdicts = (root / "artifacts" / "judge" / "verdicts.parquet").read_bytes()
    record(out, "cached_rerun", stage(root, env, "stage", "judge", "--force"))
    out["cached_rerun_calls"], _ = judge_calls(root)
    out["cached_rerun_identical"] = verdicts == (root / "artifacts" / "judge" / "verdicts.parquet").read_bytes()
    # The second run: base 0's prompt edited (one sentence more), judged, measured and reported again.
    prompt = root / BASE_PROMPT
    prompt.write_text(prompt.read_text(encoding="utf-8").replace("Decide which", "Read both closely. Decide which"), encoding="utf-8")
    record(out, "second_judge", stage(root, env, "stage", "judge"))
    out["second_calls"], _ = judge_calls(root)
    stage(root, env, "stage", "metrics")
    stage(root, env, "stage", "report")
    out["audit_json_bytes"] = len(record(out, "audit", stage(root, env, "audit", "--json"), rss=True).stdout)
    return out


def main() -> None:
    if sys.argv[1:2] == ["--bare"]:  # the bare client's own process (bare_step)
        url, n, concurrency, root = sys.argv[2:6]
        return bare_main(url, int(n), int(concurrency), Path(root))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--keep", action="store_true", help="keep the project copy and print its path")
    a = ap.parse_args()
    load_start = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    root = tmp / "project"
    proc, url = start_server(a.latency, LEAN_MOCK)
    try:
        n_bases = write_project(root, url, a.scale, a.concurrency)
        # This checkout's code (PYTHONPATH), not the one an editable install points at: a snapshot can be timed
        # while its checkout is being edited.
        env = {**os.environ, "BENCH_KEY": "bench", "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(REPO)}
        result = {"scale": a.scale, "bases": n_bases, "configurations": n_bases * 10, **timed_runs(root, env, url, a.concurrency)}
    finally:
        proc.terminate()
        proc.wait(10)
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    load_end = os.getloadavg()
    for key, goal in GOALS.items():
        print(f"{key:>22}: {result[key]:10.2f}  (goal ≤ {goal})")
    print(f"{'calls':>22}: {result['calls']:10d}  (goal ≥ 50,000 at scale 1); cached rerun {result['cached_rerun_calls']} calls")
    print(f"load average {load_start[0]:.2f} → {load_end[0]:.2f} on {os.cpu_count()} CPUs, nice {os.nice(0)}")
    result.update(
        latency=a.latency, concurrency=a.concurrency, loadavg_start=[round(x, 2) for x in load_start],
        loadavg_end=[round(x, 2) for x in load_end], cpus=os.cpu_count(), nice=os.nice(0),
        project=str(root) if a.keep else None, code=str(REPO),
    )  # fmt: skip
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
