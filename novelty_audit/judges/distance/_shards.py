"""Corpus embedding in content-addressed shards: resumable, fan-out-able, with progress.

The corpus's distinct texts, sorted by their sha256, are cut into shards by content: a shard ends after
a text whose digest's first 32 bits are ≡ 0 modulo `target` (about `target` texts per shard), or at
`4 × target` texts. A boundary depends only on the text at it, so adding or removing a document changes
the one shard it falls in, never the others. A shard's cache key is (model id, digest of its sorted text
digests): the shard digest. Each finished shard is one checked cache entry under
`<embeddings>/<model>/corpus/`, written atomically, so a run killed midway resumes with the unfinished
shards only, and any worker (thread, Dask or Ray process) can embed any shard: `ShardJob` is picklable
and `embed_shard` builds its own model. The matrix is assembled from the entries in the caller's order.

A shard's vectors come from one encode call over its texts in digest order, so they never depend on
which process or run embedded it. (Vectors of a text may differ in the last float bits from an
encode call over a different set of texts: batching is part of the arithmetic. Scores are rounded to
6 decimals for that reason; see docs/design/distance.md.)

Progress: a rich bar on a terminal (stderr); otherwise a log line on the `novelty_audit.progress` logger
every 10% or 30 s (printed to stderr when no handler listens; flows forward it to the Prefect run log).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ...progress import Progress
from ._embed import EmbeddingCache, SentenceTransformerEmbedder, text_digest
from ._shipped import install_shipped

__all__ = ["SHARD_TEXTS", "Shard", "ShardJob", "ShardMap", "Progress", "plan_shards", "embed_shard", "embed_corpus"]

SHARD_TEXTS = 512
"""Target texts per shard (≈ 15 s of MiniLM on 2 cores): the unit of resumption, fan-out and progress."""
MAX_FACTOR = 4


@dataclass(frozen=True)
class Shard:
    """Texts (by sha256, sorted) embedded together and stored as one cache entry."""

    index: int
    digests: tuple[str, ...]


@dataclass(frozen=True)
class ShardJob:
    """Everything a worker needs to embed one shard (picklable)."""

    model: str
    revision: str | None
    batch_size: int
    cache_root: str
    model_id: str
    shard: Shard
    texts: tuple[str, ...]
    """The shard's texts, in its digest order."""


ShardMap = Callable[[list[ShardJob]], Iterable[int]]
"""Runs `embed_shard` on each job anywhere (threads, Dask, Ray); yields each finished job's text count."""


def plan_shards(digests: Iterable[str], target: int = SHARD_TEXTS) -> list[Shard]:
    """Content-defined shards of the distinct `digests` (see the module docstring)."""
    if target < 1:
        raise ValueError("target must be ≥ 1")
    out: list[Shard] = []
    cur: list[str] = []
    for d in sorted(set(digests)):
        cur.append(d)
        if int(d[:8], 16) % target == 0 or len(cur) >= MAX_FACTOR * target:
            out.append(Shard(len(out), tuple(cur)))
            cur = []
    if cur:
        out.append(Shard(len(out), tuple(cur)))
    return out


_workers: dict[tuple, SentenceTransformerEmbedder] = {}
_workers_lock = threading.Lock()


def _worker_embedder(job: ShardJob) -> SentenceTransformerEmbedder:
    key = (job.model, job.revision, job.batch_size, job.cache_root)
    with _workers_lock:
        emb = _workers.get(key)
        if emb is None:
            emb = _workers[key] = SentenceTransformerEmbedder(job.model, revision=job.revision, cache=EmbeddingCache(job.cache_root),
                                                              batch_size=job.batch_size)  # fmt: skip
        emb._load()  # once per process, not by several task threads at once
    if emb.model_id != job.model_id:
        # Other weights or library versions on this worker would give other vectors under the same key.
        raise RuntimeError(f"worker model id {emb.model_id} differs from the run's {job.model_id}: install the same versions on every worker")
    return emb


def embed_shard(job: ShardJob, embedder: SentenceTransformerEmbedder | None = None) -> int:
    """Embed one shard and store it (nothing to do when it is already stored); returns its text count."""
    emb = embedder if embedder is not None else _worker_embedder(job)
    cache = emb.cache if embedder is not None else EmbeddingCache(job.cache_root)
    assert cache is not None
    if not cache.has_shard(job.model_id, job.shard.digests):
        vecs = emb._encode_uncached(list(job.texts))
        cache.put_shard(job.model_id, job.shard.digests, vecs, texts=job.texts)
    return len(job.texts)


def embed_corpus(
    embedder: SentenceTransformerEmbedder,
    texts: Sequence[str],
    *,
    target: int = SHARD_TEXTS,
    map_shards: ShardMap | None = None,
    progress: bool = True,
    label: str = "embed corpus",
) -> np.ndarray:
    """The (len(texts), dim) float32 vectors of `texts`, embedding only the shards not stored yet.

    `map_shards` runs the missing shards' jobs (a flow's task runner); without it they run here, one
    after another. Either way each finished shard is stored at once, so a kill loses only unfinished ones.
    """
    cache = embedder.cache
    if cache is None:
        raise ValueError("embed_corpus needs an embedder with a cache")
    model_id = embedder.model_id
    if embedder.shipped is not None:
        embedder.shipped_facts = install_shipped(embedder)  # a pinned pre-filled cache: checked, then its entries written
    digests = [text_digest(t) for t in texts]
    by_digest = dict(zip(digests, texts))
    plan = plan_shards(by_digest, target)
    todo = [s for s in plan if not cache.has_shard(model_id, s.digests)]
    # Vectors cached before shards existed (one entry per encode call) still count: never embed them again.
    legacy = cache.get(model_id, [d for s in todo for d in s.digests]) if todo else {}
    todo = [s for s in todo if not all(d in legacy for d in s.digests)]
    total = len(by_digest)
    bar = Progress(f"{label} ({model_id.split('@')[0]})", total, progress, done=total - sum(len(s.digests) for s in todo))
    jobs = [ShardJob(embedder.name_or_path, embedder.revision, embedder.batch_size, str(cache.root), model_id, s,
                     tuple(by_digest[d] for d in s.digests)) for s in todo]  # fmt: skip
    try:
        if map_shards is not None and jobs:
            for n in map_shards(jobs):
                bar.advance(n)
        else:
            for job in jobs:
                bar.advance(embed_shard(job, embedder))
    finally:
        bar.close()

    out: np.ndarray | None = None
    rows: dict[str, list[int]] = {}
    for i, d in enumerate(digests):
        rows.setdefault(d, []).append(i)
    for s in plan:
        vecs = cache.read_shard(model_id, s.digests)
        if vecs is None:
            found = legacy if all(d in legacy for d in s.digests) else cache.get(model_id, s.digests)
            if all(d in found for d in s.digests):
                vecs = np.stack([found[d] for d in s.digests])
            else:  # a damaged entry was moved aside while reading: embed that shard again
                embed_shard(ShardJob(embedder.name_or_path, embedder.revision, embedder.batch_size, str(cache.root), model_id, s,
                                     tuple(by_digest[d] for d in s.digests)), embedder)  # fmt: skip
                vecs = cache.read_shard(model_id, s.digests)
                if vecs is None:
                    raise RuntimeError(f"embedding shard {s.index} of {model_id} could not be stored")
        if out is None:
            out = np.empty((len(digests), vecs.shape[1]), dtype=np.float32)
        for d, v in zip(s.digests, vecs):
            out[rows[d]] = v
    return out if out is not None else np.zeros((0, 0), np.float32)
