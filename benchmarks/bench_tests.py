"""Wall time of the README's test command (or a subset of it), with the slowest tests.

Usage: python benchmarks/bench_tests.py [--runs N] [--busy K] [--slowest 20] [pytest args, e.g. tests/flows]

The command is the `python -m pytest …` part of the README's test command (the line after `<!-- test-command -->`,
the one `.ci/run` runs); pytest arguments given here are appended (a path narrows it to a subset). Each run adds
`--durations=<slowest>` and prints its wall time, its CPU time (pytest and the processes it waited for; steadier
than wall time on a shared machine), the load average (1 min) at start and end, and the slowest tests.
`--busy K` starts K busy loops (one Python process each) beside the runs and stops them after, the "beside two
busy loops" check of the test-suite goal. `--runs N` runs the command N times in a row.
The last line is one JSON object: `seconds` (the slowest run), `passed` (the fewest), `failed` (failed + errors,
the most), `reference_s`, and the figures of every run under `runs`. Exit status 1 when any run failed.

Machines of one type differ in speed (docs/benchmarks.md has the same commit timed on two). `reference_s`, the
median time of a fixed single-core Python workload taken before the runs (and before the busy loops), tells them
apart: compare suite times across machines only beside it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 8 * 60  # the README's test command on an idle 2-core machine


def readme_pytest_command() -> list[str]:
    """The pytest part of the README's test command (the install steps before it are not timed)."""
    lines = (REPO / "README.md").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "<!-- test-command -->" in line)
    command = lines[at + 2]  # the marker, the code fence, then the command (as .ci/run reads it)
    parts = [p.strip() for p in command.split("&&")]
    pytest = [p for p in parts if re.match(r"(python3? -m )?pytest\b", p)]
    if not pytest:
        raise SystemExit(f"README.md: no pytest command after the test-command marker: {command!r}")
    return shlex.split(pytest[-1])


def _counts(output: str) -> dict[str, int]:
    """passed / failed / errors / skipped from pytest's last summary line."""
    tail = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|error|errors)\b", line)]
    found = dict.fromkeys(("passed", "failed", "errors", "skipped"), 0)
    for n, word in re.findall(r"(\d+) (passed|failed|errors?|skipped)", tail[-1] if tail else ""):
        found["errors" if word.startswith("error") else word] = int(n)
    return found


def _slowest(output: str, n: int) -> list[str]:
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if "slowest" in line and "durations" in line), None)
    if start is None:
        return []
    return [line for line in lines[start + 1 :] if re.match(r"\s*\d+(\.\d+)?s (call|setup|teardown)", line)][:n]


def reference_seconds(repeats: int = 5) -> float:
    """Median wall time of a fixed single-core workload: bytecode, dicts and strings (most of the suite's own CPU
    time is Python, not native code) and some hashing. A machine speed figure, not a goal."""

    def work() -> None:
        table: dict[str, int] = {}
        for i in range(400_000):
            key = f"k{i % 5_000}"
            table[key] = table.get(key, 0) + len(key) * i
        hashlib.sha256(b"x" * 32_000_000).digest()

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_once(cmd: list[str], slowest: int) -> dict:
    """Run the command once from the repository root; its figures."""
    load0 = os.getloadavg()[0]
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run([*cmd, f"--durations={slowest}"], cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU time (user + sys of pytest and the processes it waited for): moves less than wall time on a shared machine.
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    out = res.stdout + res.stderr
    counts = _counts(out)
    if res.returncode not in (0, 1) and counts["failed"] + counts["errors"] == 0:
        counts["errors"] = 1  # interrupted, a usage error, or no test collected: a failure here
        print(out[-4000:], file=sys.stderr)
    # A failure under load must be diagnosable from this script's output alone: pytest's -ra summary names it.
    failures = [line for line in out.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    return {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), **counts, "returncode": res.returncode, "load_start": round(load0, 2),
            "load_end": round(os.getloadavg()[0], 2), "slowest": _slowest(out, slowest), "failures": failures,
            "output_tail": out[-6000:] if failures else ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--busy", type=int, default=0, help="busy loops to run beside the test runs")
    ap.add_argument("--slowest", type=int, default=20)
    args, extra = ap.parse_known_args(argv)
    cmd = [sys.executable if c in ("python", "python3") else c for c in readme_pytest_command()] + extra
    print("+", shlex.join(cmd), flush=True)
    reference = reference_seconds()
    print(f"machine reference (fixed single-core workload, median of 5): {reference:.3f} s", flush=True)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    runs = []
    try:
        for i in range(args.runs):
            r = run_once(cmd, args.slowest)
            runs.append(r)
            print(f"run {i + 1}/{args.runs}: {r['seconds']:.1f} s (CPU {r['cpu_seconds']:.1f} s), {r['passed']} passed, {r['failed']} failed, "
                  f"{r['errors']} errors, {r['skipped']} skipped (load {r['load_start']} → {r['load_end']}, "
                  f"{args.busy} busy loops)", flush=True)
            for line in r["slowest"]:
                print("   ", line.strip())
            if r["failures"]:
                print(r["output_tail"], flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    failed = max(r["failed"] + r["errors"] for r in runs)
    worst = max(r["seconds"] for r in runs)
    print(f"goal ≤ {GOAL_S} s on an idle machine: slowest run {worst:.1f} s")
    print(json.dumps({"seconds": worst, "passed": min(r["passed"] for r in runs), "failed": failed,
                      "reference_s": round(reference, 3), "runs": [{k: v for k, v in r.items() if k not in ("slowest", "output_tail")} for r in runs]}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
