"""Distance-to-prior-work judges: the corpus loader, embedding backends and cache, the scores
(Yin, kNN density, RND) with the leakage filter, and the registered `distance-*` backends.
Every disk cache entry is checked when read; `verify_distance_caches` lists the damaged ones.
See docs/design/distance.md.

The backend module (`_judge`: the judge class, its args models and factories) is resolved on first use (`_LAZY`),
so the judges package, whose corpus retrieval reads the corpus from here, imports no backend module.
"""

import importlib
from typing import Any

from ._cachefile import verify_distance_caches

from ._corpus import CORPUS_EXCLUSION_SCHEMA, CORPUS_SCHEMA, CORPUS_SUFFIXES, Corpus, CorpusExclusion, load_corpus, normalize_title, strip_html
from ._embed import MINILM_ALIASES, Embedder, EmbeddingCache, SentenceTransformerEmbedder, TfidfEmbedder, model_dir_digest, resolve_model_dir, text_digest
from ._shards import SHARD_TEXTS, Shard, ShardJob, ShardMap, embed_corpus, embed_shard, plan_shards
from ._shipped import EmbeddingsReport, build_embeddings, check_embeddings
from ._scores import (
    DECIMALS,
    Drop,
    Neighbours,
    after_cutoff,
    corpus_densities,
    cosine_matrix,
    knn_scores,
    nearest,
    parse_cutoff,
    rnd_scores,
    yin_scores,
)

__all__ = [
    "CORPUS_EXCLUSION_SCHEMA",
    "CORPUS_SCHEMA",
    "CORPUS_SUFFIXES",
    "Corpus",
    "CorpusExclusion",
    "load_corpus",
    "normalize_title",
    "strip_html",
    "MINILM_ALIASES",
    "Embedder",
    "EmbeddingCache",
    "SentenceTransformerEmbedder",
    "TfidfEmbedder",
    "model_dir_digest",
    "resolve_model_dir",
    "text_digest",
    "DROP_SCHEMA",
    "DistanceArgs",
    "DistanceJudge",
    "KnnArgs",
    "RndArgs",
    "TfidfSettings",
    "embedding_cache",
    "clear_memory_caches",
    "DECIMALS",
    "Drop",
    "Neighbours",
    "after_cutoff",
    "corpus_densities",
    "cosine_matrix",
    "knn_scores",
    "nearest",
    "parse_cutoff",
    "rnd_scores",
    "yin_scores",
    "verify_distance_caches",
    "SHARD_TEXTS",
    "Shard",
    "ShardJob",
    "ShardMap",
    "embed_corpus",
    "embed_shard",
    "plan_shards",
    "EmbeddingsReport",
    "build_embeddings",
    "check_embeddings",
]

_LAZY = {
    "DROP_SCHEMA": "._judge",
    "DistanceArgs": "._judge",
    "DistanceJudge": "._judge",
    "KnnArgs": "._judge",
    "RndArgs": "._judge",
    "TfidfSettings": "._judge",
    "clear_memory_caches": "._judge",
    "embedding_cache": "._judge",
}
"""Export name → the module defining it (relative to this package); the code digest follows it."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
