"""No-op `dvc repro` of this pipeline against DVC's own floor (a trivial one-stage pipeline).

Usage: python benchmarks/bench_dvc_noop.py [--runs 11]
Prints the median wall time of each (runs interleaved) and the ratio; the goal is ratio <= 1.3.
The project copy is made in a temp dir and fully reproduced once before timing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL = 1.3
TOP_LEVEL_SKIP = {".git", ".dvc", ".novelty-audit", "artifacts", "reports", ".pytest_cache"}


def _ignore(directory: str, names: list[str]) -> set[str]:
    # Skip run state at the top level only: novelty_audit/artifacts is a package, not run state.
    top = TOP_LEVEL_SKIP if Path(directory) == REPO else set()
    return {n for n in names if n in top or n == "__pycache__" or n.endswith(".egg-info")}


def sh(*cmd: str, cwd: Path) -> None:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{res.stdout}\n{res.stderr}")


def init_repo(root: Path) -> None:
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "init"]):
        sh(*cmd, cwd=root)


def time_noop(roots: list[Path], runs: int) -> list[list[float]]:
    """Wall times of `dvc repro` in each root, the roots interleaved run by run: a machine whose speed drifts
    (a shared VM) then slows both sides alike instead of whichever ran during the slow spell."""
    out: list[list[float]] = [[] for _ in roots]
    for _ in range(runs):
        for times, root in zip(out, roots):
            t = time.perf_counter()
            sh("dvc", "repro", cwd=root)
            times.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        floor = Path(tmp) / "floor"
        floor.mkdir()
        (floor / "in.txt").write_text("x\n")
        (floor / "dvc.yaml").write_text(
            "stages:\n  copy:\n    cmd: cp in.txt out.txt\n    deps: [in.txt]\n    outs: [out.txt]\n"
        )
        init_repo(floor)
        sh("dvc", "repro", cwd=floor)

        proj = Path(tmp) / "project"
        shutil.copytree(REPO, proj, ignore=_ignore)
        cache = REPO / ".novelty-audit" / "cache"
        if cache.exists():
            shutil.copytree(cache, proj / ".novelty-audit" / "cache")
        init_repo(proj)
        sh("dvc", "repro", cwd=proj)

        f, p = time_noop([floor, proj], args.runs)
    mf, mp = statistics.median(f), statistics.median(p)
    print(f"dvc floor (1 trivial stage) no-op repro: median {mf:.3f} s over {args.runs} runs")
    print(f"novelty-audit pipeline       no-op repro: median {mp:.3f} s over {args.runs} runs")
    print(f"ratio {mp / mf:.2f}x (goal <= {GOAL}x) -> {'OK' if mp / mf <= GOAL else 'ABOVE GOAL'}")


if __name__ == "__main__":
    main()
