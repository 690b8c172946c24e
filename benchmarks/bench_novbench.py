"""NovBench metrics: 100 papers × 10 generators, embeddings cached (goal < 10 s on 2 cores).

Ten generators are made from the shipped file's reference items (all of them, every second one, labels
rotated, the novelty sentences themselves as items, …) so their texts differ; a first pass fills the
embedding cache, then the median of the timed warm passes (MiniLM from the cache, 10,000 bootstrap
resamples, clarity_fs off) is printed.

    python benchmarks/bench_novbench.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from novelty_audit.config import MetricsParams  # noqa: E402
from novelty_audit.novbench._generate import REVIEWS_SCHEMA, Generator, review_row  # noqa: E402
from novelty_audit.novbench._papers import load_papers  # noqa: E402
from novelty_audit.novbench._parse import LABELS, Item, render_items  # noqa: E402
from novelty_audit.novbench._stage import score_reviews  # noqa: E402
from novelty_audit.novbench._tables import TABLE_KEYS, normalize_novbench  # noqa: E402


def variants(p) -> dict[str, list[Item]]:
    ref = list(p.reference)
    rot = {a: b for a, b in zip(LABELS, LABELS[1:] + LABELS[:1])}
    sents = [Item("positive", s) for s in p.sentences]
    return {
        "g-all": ref, "g-half": ref[::2], "g-rest": ref[1::2], "g-rotated": [Item(rot[i.label], i.text) for i in ref],
        "g-positive": [Item("positive", i.text) for i in ref], "g-sentences": sents, "g-first": ref[:1],
        "g-mix": ref[:2] + sents[:2], "g-upper": [Item(i.label, i.text.upper()) for i in ref], "g-empty": [],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        t = normalize_novbench(REPO / "data" / "novbench" / "Final_data_change.json", "nb")
        (root / "pin" / "nb").mkdir(parents=True)
        for name in TABLE_KEYS:
            getattr(t, name).write_parquet(root / "pin" / "nb" / f"{name}.parquet")
        papers = load_papers(root / "pin", "nb")
        rows = []
        for p in papers:
            for gname, items in variants(p).items():
                g = Generator(gname)
                rows.append(review_row(g, p, text=render_items(items), items=items, valid=bool(items),
                                       evidence_parts={"novelty_sentences": p.novelty_digest}))
        (root / "judge").mkdir()
        pl.DataFrame(rows, schema=REVIEWS_SCHEMA).write_parquet(root / "judge" / "reviews.parquet")
        mp = MetricsParams()
        started = time.perf_counter()
        score_reviews(root / "judge", root / "pin", mp, root / "store", fluency=None)
        print(f"cold (embeds every text once): {time.perf_counter() - started:.2f} s")
        times = []
        for _ in range(a.repeats):
            started = time.perf_counter()
            out = score_reviews(root / "judge", root / "pin", mp, root / "store", fluency=None)
            times.append(time.perf_counter() - started)
        n = len(out.metrics["nb"])
        print(f"warm, {len(papers)} papers × {n} generators, {mp.bootstrap_resamples} resamples: "
              f"median {statistics.median(times):.2f} s over {a.repeats} (goal < 10 s)")


if __name__ == "__main__":
    main()
