"""The distance judges at the published study's corpus size: 576,000 × 384 normalized float32 vectors.

Usage: python benchmarks/bench_corpus_scale.py [--docs 576000] [--ideas 308] [--sample 64] [--skip-rnd-cold]
No embedding for the corpus (synthetic vectors, seeded): times the scoring path the judges run
(`nearest_blocked` → Yin / kNN / RND, with the own-title and near-duplicate filters on), per judge, and
the process's peak RSS. RND needs the densities of the documents it ranks ideas among: computed once
(`doc_densities`, cached by content in a real run: "rnd cold") and read from that cache afterwards
("rnd"). Goal: every judge < 5 s and peak RSS < 2.5 GB on 2 cores. Then the real MiniLM model's
embedding throughput on one worker (one torch thread) on a sample of the default corpus.
Last line: one JSON object (n_docs, seconds_max, peak_rss_gb of the scoring, per-judge seconds and peak RSS,
texts_per_s_per_worker).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from novelty_audit.judges.distance import knn_scores, normalize_title, rnd_scores, yin_scores
from novelty_audit.judges.distance._scores import doc_densities, nearest_blocked

REPO = Path(__file__).resolve().parents[1]
GOAL_S, GOAL_GB = 5.0, 2.5


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


def unit_rows(rng: np.random.Generator, n: int, dim: int, chunk: int = 65_536) -> np.ndarray:
    out = np.empty((n, dim), dtype=np.float32)
    for s in range(0, n, chunk):  # in chunks: no full-size temporaries
        block = rng.standard_normal((min(chunk, n - s), dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[s : s + len(block)] = block
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=576_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--ideas", type=int, default=308)
    ap.add_argument("--sample", type=int, default=64, help="texts for the real-model throughput (0: skip)")
    ap.add_argument("--skip-rnd-cold", action="store_true", help="skip the one-off density computation")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    corpus = unit_rows(rng, args.docs, args.dim)
    # Ideas near some documents (as real ideas are): a document plus noise, renormalized.
    ideas = corpus[rng.choice(args.docs, args.ideas, replace=False)] + 0.6 * unit_rows(rng, args.ideas, args.dim)
    ideas /= np.linalg.norm(ideas, axis=1, keepdims=True)
    doc_titles = [normalize_title(f"Paper {i}") for i in range(args.docs)]
    idea_titles = [normalize_title(f"Idea {i}") for i in range(args.ideas)]
    print(f"corpus {args.docs:,} × {args.dim} float32 ({corpus.nbytes / 1024**3:.2f} GB), {args.ideas} ideas; peak RSS so far {rss_gb():.2f} GB")

    k, m_rnd, evidence_n = 10, 50, 3
    seconds: dict[str, float] = {}

    def search(m: int):
        return nearest_blocked(ideas, corpus, m, idea_titles=idea_titles, doc_titles=doc_titles, near_duplicate=0.95)

    rss: dict[str, float] = {}  # peak RSS of the process once each judge has run (ru_maxrss only grows)
    t = time.perf_counter()
    yin_scores(search(max(1, evidence_n)))
    seconds["yin"] = time.perf_counter() - t
    rss["yin"] = rss_gb()
    t = time.perf_counter()
    knn_scores(search(max(k, evidence_n)), k)
    seconds["knn"] = time.perf_counter() - t
    rss["knn"] = rss_gb()

    t = time.perf_counter()
    nb = search(max(k, m_rnd, evidence_n))
    needed = np.unique(nb.index[:, :m_rnd][nb.index[:, :m_rnd] >= 0])
    search_s = time.perf_counter() - t
    dens = np.full(args.docs, np.nan)
    if not args.skip_rnd_cold:
        t = time.perf_counter()
        dens[needed] = doc_densities(corpus, needed, k, doc_titles=doc_titles, near_duplicate=0.95)
        seconds["rnd_cold_densities"] = time.perf_counter() - t
        print(f"rnd: densities of the {len(needed):,} documents ranked against, computed once: {seconds['rnd_cold_densities']:.1f} s")
    else:
        dens[needed] = 0.5
    t = time.perf_counter()
    ranked = type(nb)(nb.index[:, :m_rnd], nb.cosine[:, :m_rnd], [])
    rnd_scores(knn_scores(nb, k), ranked, dens)
    seconds["rnd"] = search_s + time.perf_counter() - t  # warm: densities from the cache
    rss["rnd"] = peak = rss_gb()
    for name in ("yin", "knn", "rnd"):
        print(f"{name:4s} {args.ideas} ideas × {args.docs:,} docs: {seconds[name]:.2f} s, peak RSS {rss[name]:.2f} GB")
    judged = max(seconds[n] for n in ("yin", "knn", "rnd"))
    print(f"slowest judge {judged:.2f} s (goal < {GOAL_S} s), peak RSS {peak:.2f} GB (goal < {GOAL_GB} GB) -> "
          f"{'OK' if judged < GOAL_S and peak < GOAL_GB else 'ABOVE GOAL'}")  # fmt: skip

    throughput = None
    if args.sample:
        from novelty_audit.judges.distance import SentenceTransformerEmbedder, load_corpus

        texts = load_corpus(REPO / "data" / "prior-work").texts[: args.sample]
        emb = SentenceTransformerEmbedder("minilm", threads=1)
        emb._encode_uncached(texts[:8])  # load and warm up
        t = time.perf_counter()
        emb._encode_uncached(texts)
        throughput = len(texts) / (time.perf_counter() - t)
        print(f"MiniLM embedding, one worker (1 torch thread): {throughput:.1f} texts/s on {len(texts)} abstracts "
              f"→ {args.docs / throughput / 3600:.1f} worker-hours for {args.docs:,}")  # fmt: skip
    # peak_rss_gb is the scoring's (the goal's); loading torch and the model for the throughput sample comes after.
    print(json.dumps({"n_docs": args.docs, "dim": args.dim, "n_ideas": args.ideas, "seconds_max": round(judged, 3),
                      "peak_rss_gb": round(peak, 3), "peak_rss_gb_per_judge": {n: round(v, 3) for n, v in rss.items()},
                      "peak_rss_gb_with_embedding_sample": round(rss_gb(), 3),
                      "seconds": {n: round(v, 3) for n, v in seconds.items()},
                      "texts_per_s_per_worker": None if throughput is None else round(throughput, 2)}))  # fmt: skip


if __name__ == "__main__":
    main()
