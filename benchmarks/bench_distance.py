"""Distance judges on Human+Generated (308 ideas: 154 pairs + 308 pointwise items) × the default corpus, warm.

Usage: python benchmarks/bench_distance.py [--runs 5] [--store .novelty-audit] [--dataset human-plus-generated]

Builds every enabled distance judge of params.yaml (`distance-*` backends) and times build + judge
for all of them together, as the judge stage does. "Warm" means the store's disk caches (embeddings,
TF-IDF fit, corpus densities) are filled: one untimed run fills them first (the cold MiniLM pass over
the 3,023 abstracts takes ~1.5 min on 2 idle cores). Before each timed run the in-process memos are
cleared, so each run does what a new stage process does, minus interpreter start-up.
Prints per-judge medians of `--runs` runs and the total against the 5 s goal.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from novelty_audit.datasets import load_dataset
from novelty_audit.judges import JUDGES, Idea, JudgeContext, PairItem, PointItem
from novelty_audit.judges.distance import clear_memory_caches
from novelty_audit.params import load_params

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 5.0


def items(params, dataset: str) -> tuple[list[PairItem], list[PointItem]]:
    norm = load_dataset(dataset, params.pin.datasets[dataset])
    ideas = {r["idea_id"]: Idea(r["idea_id"], r["title"], r["text"], r["text_digest"], r["area"]) for r in norm.ideas.to_dicts()}
    pairs = [PairItem(dataset, r["pair_id"], ideas[r["idea_0"]], ideas[r["idea_1"]], r["gold_idea_id"], r["context"])
             for r in norm.pairs.sort("pair_id").to_dicts()]
    points = [PointItem(dataset, ideas[r["idea_id"]], r["label"]) for r in norm.pointwise.sort("idea_id").to_dicts()]
    return pairs, points


def run_once(specs: dict, cache_dir: Path, pairs, points) -> dict[str, float]:
    clear_memory_caches()
    out = {}
    for name, spec in specs.items():
        t = time.perf_counter()
        judge = JUDGES.create(spec.backend, ctx=JudgeContext(name=name, cache_dir=cache_dir, progress=False), **spec.args)
        res = judge.judge(pairs, points)
        out[name] = time.perf_counter() - t
        assert len(res.pairwise) == len(pairs) and len(res.pointwise) == len(points)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--store", default=None, help="store root holding the caches (default: params store.root)")
    ap.add_argument("--dataset", default="human-plus-generated")
    a = ap.parse_args()

    import os

    os.chdir(REPO)  # params paths (corpus, benchmark files) are relative to the project
    params = load_params(REPO / "params.yaml")
    cache_dir = Path(a.store or params.store.root) / "cache"
    specs = {n: s for n, s in sorted(params.judge.judges.items()) if s.enabled and s.backend.startswith("distance-")}
    pairs, points = items(params, a.dataset)
    n_ideas = len({i.idea_id for p in pairs for i in p.ideas} | {p.idea.idea_id for p in points})
    print(f"{len(specs)} distance judges × {a.dataset}: {len(pairs)} pairs, {len(points)} pointwise, {n_ideas} ideas; cache {cache_dir}")

    t = time.perf_counter()
    run_once(specs, cache_dir, pairs, points)
    print(f"warm-up (fills the caches if empty): {time.perf_counter() - t:.2f} s")

    runs = [run_once(specs, cache_dir, pairs, points) for _ in range(a.runs)]
    for name in specs:
        print(f"  {name:<24} median {statistics.median(r[name] for r in runs):6.2f} s")
    totals = [sum(r.values()) for r in runs]
    total = statistics.median(totals)
    print(f"all distance judges, warm: median {total:.2f} s over {a.runs} runs "
          f"(min {min(totals):.2f}, max {max(totals):.2f}); goal < {GOAL_S:.0f} s → ratio {total / GOAL_S:.2f} "
          f"{'OK' if total < GOAL_S else 'OVER'}")


if __name__ == "__main__":
    main()
