"""How much the published pairing moves a judge's accuracy: the Human-Only D+ and D- ideas re-paired by seed.

In a copy of the project (the repository's files are not touched), params.yaml gets `pools.repair: {dataset:
human-only, seeds: [...]}` and judge.datasets the published split plus each re-pairing `human-only-seed-<n>`; the
offline judges (the distance judges and the controls) judge them, pairwise only, through the stages' own `run`
(pin → signals → pools → judge → metrics). Prints one line per dataset with the strict accuracy of each distance
judge (correct / pairs), then one JSON object: per judge the accuracy on the published pairing and per seed, and
the min–max over the re-pairings.

    python benchmarks/bench_repairing.py [--seeds 1 2 3 4 5] [--judge distance-yin-minilm]

The published pairing is the split as pinned (its slot order and pairs); a re-pairing keeps every D+ idea once, with
a same-area D- idea drawn by the seed (D- ideas reused when an area has fewer), and a seeded slot order.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from project_copy import ignore_run_state  # noqa: E402


def configure(root: Path, seeds: list[int]) -> list[str]:
    raw = yaml.safe_load((root / "params.yaml").read_text())
    raw["pools"]["repair"] = {"dataset": "human-only", "seeds": seeds}
    names = ["human-only"] + [f"human-only-seed-{s}" for s in seeds]
    raw["judge"].update(datasets=names, probe_datasets=[], tasks=["pairwise"], progress=False)
    (root / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--judge", action="append", help="judges to report (default: every distance judge)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="repairing-") as tmp:
        root = Path(tmp) / "project"
        shutil.copytree(REPO, root, ignore=ignore_run_state)
        names = configure(root, args.seeds)
        os.chdir(root)
        from novelty_audit.artifacts import read_json
        from novelty_audit.pipeline import run_stage

        for stage in ("pin", "signals", "pools", "judge", "metrics"):
            run_stage(stage)
        metrics = read_json("artifacts/metrics/metrics.json")
    judges = args.judge or sorted(j for j in metrics["human-only"] if j.startswith("distance-"))
    out: dict[str, dict] = {}
    for j in judges:
        per = {ds: {"correct": round(metrics[ds][j]["strict_accuracy"] * metrics[ds][j]["n_pairs"]), "n": metrics[ds][j]["n_pairs"],
                    "accuracy": metrics[ds][j]["strict_accuracy"]} for ds in names}  # fmt: skip
        seeds = [per[ds]["accuracy"] for ds in names[1:]]
        out[j] = {"published_pairing": per["human-only"], "repairings": {ds: per[ds] for ds in names[1:]},
                  "repairing_min": min(seeds), "repairing_max": max(seeds)}  # fmt: skip
        for ds in names:
            print(f"{j:24} {ds:22} accuracy {per[ds]['accuracy']:.4f}  ({per[ds]['correct']}/{per[ds]['n']})")
    print(json.dumps({"seeds": args.seeds, "judges": out}, sort_keys=True))


if __name__ == "__main__":
    main()
