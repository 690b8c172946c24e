"""Metrics for 50 judge configurations × 308 items with 10,000 bootstrap resamples (goal: median < 5 s).

    python benchmarks/bench_metrics.py [--runs 5] [--judges 50] [--items 308] [--resamples 10000]

Synthetic tables in the judge stage's schema: every judge answers 308 pairs in both orders with
3 votes each (ties, `none`, invalid votes mixed in) and 308 pointwise ideas; half the judges emit
scores (AUROC), and they form 5 backbones × 10 prompt variants (prompt sensitivity). One run is
`compute_metrics` with the default comparisons: every metric with bootstrap and Wilson intervals,
all 1,225 judge pairs (flips, McNemar, paired bootstrap) and the prompt-sensitivity summary.
Prints the median of the runs, the split between metrics and comparisons, and the ratio to the goal.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import orjson
import polars as pl

from novelty_audit.metrics import MetricsParams, compute_metrics

GOAL_S = 5.0


def majority(votes: list[str]) -> str:
    if not votes:
        return "none"
    top = sorted(set(votes), key=lambda v: (-votes.count(v), v))
    return "tie" if len(top) > 1 and votes.count(top[0]) == votes.count(top[1]) else top[0]


def tables(n_judges: int, n_items: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    pair_rows, point_rows, judge_rows = [], [], []
    for j in range(n_judges):
        name = f"judge-{j:02d}"
        skill, tie_p, fail_p = 0.55 + 0.35 * rng.random(), 0.1 * rng.random(), 0.05 * rng.random()
        judge_rows.append({
            "judge": name, "backend": "openai", "config_digest": name,
            "config": orjson.dumps({"backend": "openai", "model": f"model-{j % 5}", "prompt": f"p{j // 5}"}).decode(),
        })
        for i in range(n_items):
            a, b = f"i-{i:04d}a", f"i-{i:04d}b"
            gold = a if i % 2 else b
            other = b if gold == a else a

            def vote() -> str:
                u = rng.random()
                return "invalid" if u < fail_p else (gold if rng.random() < skill else other)

            vf, vr = [vote() for _ in range(3)], [vote() for _ in range(3)]
            valid = [v for v in vf + vr if v != "invalid"]
            verdict = "tie" if valid and rng.random() < tie_p else majority(valid)
            pair_rows.append({
                "dataset": "bench", "judge": name, "pair_id": f"p-{i:04d}", "idea_0": a, "idea_1": b,
                "gold_idea_id": gold, "verdict": verdict,
                "verdict_forward": majority([v for v in vf if v != "invalid"]),
                "verdict_reverse": majority([v for v in vr if v != "invalid"]),
                "votes_forward": vf, "votes_reverse": vr, "n_valid": len(valid),
                "n_invalid": 6 - len(valid), "n_refusal": 0, "n_error": 0, "cost_usd": 1e-4, "latency_s": 0.3,
            })
        for i in range(n_items):
            label = "POSITIVE" if i % 2 else "NEGATIVE"
            score = rng.normal(skill if label == "POSITIVE" else 0.0)
            point_rows.append({
                "dataset": "bench", "judge": name, "idea_id": f"i-{i:04d}", "gold_label": label,
                "predicted": "POSITIVE" if score > 0.3 else "NEGATIVE", "score": float(score) if j % 2 else None,
            })
    return (
        pl.DataFrame(pair_rows, infer_schema_length=None),
        pl.DataFrame(point_rows, infer_schema_length=None),
        pl.DataFrame(judge_rows),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--judges", type=int, default=50)
    ap.add_argument("--items", type=int, default=308)
    ap.add_argument("--resamples", type=int, default=10_000)
    args = ap.parse_args()
    verdicts, pointwise, judges = tables(args.judges, args.items)
    full = MetricsParams(bootstrap_resamples=args.resamples)
    no_comparisons = full.model_copy(update={"compare": "listed", "prompt_sensitivity": False})
    compute_metrics(verdicts.head(50), params=MetricsParams(bootstrap_resamples=10))  # warm imports
    runs: dict[str, list[float]] = {"all (metrics + comparisons)": [], "metrics only": []}
    outs = {}
    for _ in range(args.runs):
        for label, params in (("all (metrics + comparisons)", full), ("metrics only", no_comparisons)):
            t = time.perf_counter()
            outs[label] = compute_metrics(verdicts, pointwise, judges, params)
            runs[label].append(time.perf_counter() - t)
    out = outs["all (metrics + comparisons)"]
    print(
        f"{args.judges} judges × {args.items} items, {args.resamples} resamples: {out.metrics.height} metric rows, "
        f"{out.comparisons.height} comparisons, {out.prompt_sensitivity.height} prompt-sensitivity groups"
    )
    for label, times in runs.items():
        print(f"  {label:<28} median {statistics.median(times):6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times)})")
    med = statistics.median(runs["all (metrics + comparisons)"])
    print(f"goal < {GOAL_S:.0f} s: median {med:.2f} s, ratio {med / GOAL_S:.2f} → {'MET' if med < GOAL_S else 'NOT MET'}")


if __name__ == "__main__":
    main()
