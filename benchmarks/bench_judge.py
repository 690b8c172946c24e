"""Judge-stage throughput against a bare AsyncOpenAI client, and the cached rerun.

154 pairs × 2 orders × 3 votes = 924 calls to the mock OpenAI-compatible server (its own process,
100 ms latency), concurrency 32. The bare client sends the same 924 request bodies with a semaphore
of 32: the floor for Python on this machine (ideal: 924 × 0.1 s / 32 = 2.9 s).

    python benchmarks/bench_judge.py [--repeats 3] [--pairs 154] [--latency 0.1] [--concurrency 32]

Prints medians, judge wall / bare wall (goal ≤ 1.10) and the cached rerun (goal < 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import bare, start_server

from novelty_audit.artifacts import write_table
from novelty_audit.judges import (
    PAIRWISE_SCHEMA,
    Idea,
    JudgeParams,
    PairItem,
    build_judges,
)


def synthetic_pairs(n: int) -> list[PairItem]:
    words = ["graph", "retrieval", "benchmark", "transformer", "curriculum", "sparse", "causal", "agent", "reward", "tokenizer"]
    pairs = []
    for k in range(n):
        ideas = []
        for s in range(2):
            i = 2 * k + s
            body = " ".join(words[(i * 7 + j) % len(words)] for j in range(220))
            ideas.append(Idea(f"i-{i:016x}", f"Idea {i}", f"Idea {i}: we propose {body}.", f"{i:064x}", "area"))
        pairs.append(PairItem("bench", f"p-{k:016x}", ideas[0], ideas[1], ideas[k % 2].idea_id))
    return pairs


def judge_params(url: str, concurrency: int) -> JudgeParams:
    return JudgeParams.model_validate(
        {
            "tasks": ["pairwise"],
            "progress": True,
            "judges": {
                "bench": {
                    "backend": "openai",
                    "args": {"model": "mock", "base_url": url, "api_key_env": "BENCH_KEY", "votes": 3, "orders": "both", "concurrency": concurrency},
                }
            },
        }
    )


def run_judge(jp: JudgeParams, store: Path, pairs: list[PairItem], out: Path) -> tuple[float, dict]:
    import polars as pl

    started = time.perf_counter()
    judge = build_judges(jp, store_root=store).judges[0]
    result = judge.judge(pairs, [])
    write_table(out, pl.DataFrame(result.pairwise, schema=PAIRWISE_SCHEMA))
    return time.perf_counter() - started, result.facts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=154)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=32)
    a = ap.parse_args()
    os.environ["BENCH_KEY"] = "bench"
    pairs = synthetic_pairs(a.pairs)
    proc, url = start_server(a.latency)
    tmp = Path(tempfile.mkdtemp(prefix="bench-judge-"))
    try:
        jp = judge_params(url, a.concurrency)
        probe = build_judges(jp, store_root=tmp / "probe").judges[0]
        calls = probe.plan(pairs, [])
        s = probe.args.sampling
        bodies = [
            {"model": "mock", "messages": probe._prepare(c)[0], "max_tokens": s.max_tokens, "temperature": s.temperature}
            for c in calls
        ]
        print(f"{len(calls)} calls · latency {a.latency * 1000:.0f} ms · concurrency {a.concurrency} · "
              f"ideal {len(calls) * a.latency / a.concurrency:.2f} s")  # fmt: skip
        # Warm the server, the connection path and the imports once, untimed, so repeat 1 is comparable.
        asyncio.run(bare(url, bodies[: a.concurrency * 2], a.concurrency))
        run_judge(jp, tmp / "warm", pairs[:8], tmp / "warm.parquet")
        judge_walls, bare_walls, cached_walls = [], [], []
        for r in range(a.repeats):
            os.sync()
            bare_walls.append(asyncio.run(bare(url, bodies, a.concurrency)))
            store = tmp / f"store-{r}"
            # Flush the earlier repeats' writes first, so this one does not pay for their write-back.
            os.sync()
            wall, facts = run_judge(jp, store, pairs, tmp / f"v-{r}.parquet")
            assert facts["calls"] == len(calls), facts
            judge_walls.append(wall)
            wall, facts = run_judge(jp, store, pairs, tmp / f"v-{r}-cached.parquet")
            assert facts["calls"] == 0 and facts["cache_hits"] == len(calls), facts
            assert (tmp / f"v-{r}.parquet").read_bytes() == (tmp / f"v-{r}-cached.parquet").read_bytes()
            cached_walls.append(wall)
            # Each repeat's store is kept until the end: deleting its ~1,900 files here slowed file creation
            # in the next repeat several-fold (measured on this machine type), a cost of the clean-up, not the judge.
            print(f"  repeat {r + 1}: bare {bare_walls[-1]:.2f} s · judge {judge_walls[-1]:.2f} s · cached {cached_walls[-1]:.2f} s")
        jw, bw, cw = (statistics.median(x) for x in (judge_walls, bare_walls, cached_walls))
        print(f"median bare AsyncOpenAI wall : {bw:.2f} s")
        print(f"median judge wall            : {jw:.2f} s")
        print(f"judge / bare                 : {jw / bw:.2f}×  (goal ≤ 1.10)")
        print(f"median cached rerun          : {cw:.2f} s  (goal < 1 s; 0 calls, byte-identical verdicts)")
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
