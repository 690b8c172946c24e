"""No-op `dvc repro` of this pipeline against DVC's own floor (a trivial one-stage pipeline).

Usage: python benchmarks/bench_dvc_noop.py [--runs 11]
Prints the median wall time of each (runs interleaved) and the ratio; the goal is ratio <= 1.3.
The project copy is made in a temp dir and fully reproduced once before timing.

A third pipeline separates DVC's cost of this pipeline's shape from the cost of its real deps and outs:
the same stages, the same edges between them and the same `params:` on a copy of params.yaml, but one
small file stands for all of a stage's data and code deps and a one-line file for its outs. Its ratio to
the floor is what no layout of deps and outs can go below while every stage keeps `params:`.
The last line is one JSON object with the medians and ratios.
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

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from project_copy import environments  # a venv inside the checkout is not copied

GOAL = 1.3
TOP_LEVEL_SKIP = {".git", ".dvc", ".novelty-audit", "artifacts", "reports", ".pytest_cache"}


def _ignore(directory: str, names: list[str]) -> set[str]:
    # Skip run state at the top level only: novelty_audit/artifacts is a package, not run state.
    top = TOP_LEVEL_SKIP if Path(directory) == REPO else set()
    skip = {n for n in names if n in top or n == "__pycache__" or n.endswith(".egg-info")}
    return skip | environments(directory, names)


def sh(*cmd: str, cwd: Path) -> None:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{res.stdout}\n{res.stderr}")


def init_repo(root: Path) -> None:
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "init"]):
        sh(*cmd, cwd=root)


def write_shaped(root: Path) -> None:
    """The project's stages, edges and `params:` with one-line files for deps and outs (see the module doc)."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    shutil.copy(REPO / "params.yaml", root / "params.yaml")
    (root / "in.txt").write_text("x\n")
    shaped = {}
    for name, spec in stages.items():
        # An `artifacts/<stage>` dep is an edge from that stage: keep it, as that stage's one-line out.
        upstream = [f"{d.split('/')[1]}.txt" for d in spec.get("deps", []) if d.startswith("artifacts/")]
        deps = ["in.txt", *upstream]
        shaped[name] = {"cmd": f"cat {' '.join(deps)} > {name}.txt", "deps": deps, "outs": [f"{name}.txt"]}
        if spec.get("params"):
            shaped[name]["params"] = spec["params"]
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": shaped}, sort_keys=False))


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

        shaped = Path(tmp) / "shaped"
        shaped.mkdir()
        write_shaped(shaped)
        init_repo(shaped)
        sh("dvc", "repro", cwd=shaped)

        proj = Path(tmp) / "project"
        shutil.copytree(REPO, proj, ignore=_ignore)
        cache = REPO / ".novelty-audit" / "cache"
        if cache.exists():
            shutil.copytree(cache, proj / ".novelty-audit" / "cache")
        init_repo(proj)
        sh("dvc", "repro", cwd=proj)

        f, s, p = time_noop([floor, shaped, proj], args.runs)
    mf, ms, mp = statistics.median(f), statistics.median(s), statistics.median(p)
    print(f"dvc floor (1 trivial stage)      no-op repro: median {mf:.3f} s over {args.runs} runs")
    print(f"same shape, trivial deps and outs no-op repro: median {ms:.3f} s ({ms / mf:.2f}x the floor)")
    print(f"novelty-audit pipeline           no-op repro: median {mp:.3f} s over {args.runs} runs")
    print(f"ratio {mp / mf:.2f}x (goal <= {GOAL}x) -> {'OK' if mp / mf <= GOAL else 'ABOVE GOAL'}; "
          f"{mp / ms:.2f}x the same shape")
    print(json.dumps({"runs": args.runs, "floor_s": round(mf, 3), "shaped_s": round(ms, 3), "project_s": round(mp, 3),
                      "ratio": round(mp / mf, 3), "shaped_ratio": round(ms / mf, 3), "ratio_to_shaped": round(mp / ms, 3)}))


if __name__ == "__main__":
    main()
