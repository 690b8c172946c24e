"""The metrics stage's NovBench part: score artifacts/judge/reviews.parquet against the pinned references."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..config import MetricsParams
from ._metrics import PAPERS_SCHEMA, ScoreSettings, score_datasets
from ._papers import load_papers

__all__ = ["NOVBENCH_OUTPUTS", "NovbenchScoring", "novbench_inputs", "resolve_fluency", "score_reviews"]

NOVBENCH_OUTPUTS: dict[str, list[str] | None] = {"novbench.json": None, "novbench_papers.parquet": ["dataset", "judge", "paper_id"]}
_PIN_TABLES = ("papers.parquet", "sentences.parquet", "reference_items.parquet", "retrieved.parquet")


def _review_datasets(reviews_path: Path) -> list[str]:
    if not reviews_path.exists():
        return []
    return sorted(pl.read_parquet(reviews_path, columns=["dataset"])["dataset"].unique().to_list())


def novbench_inputs(judge_dir: Path, pin_dir: Path) -> list[Path]:
    """reviews.parquet and the pinned NovBench tables of every dataset it reviews (the references)."""
    reviews = Path(judge_dir) / "reviews.parquet"
    if not reviews.exists():
        return []
    return [reviews] + [Path(pin_dir) / ds / t for ds in _review_datasets(reviews) for t in _PIN_TABLES]


@dataclass
class NovbenchScoring:
    metrics: dict[str, dict[str, dict[str, Any]]]
    papers: pl.DataFrame
    details: dict[str, Any]


def resolve_fluency(store_root: str | Path, model: str | None) -> tuple[Any, str | None]:
    """The clarity_fs language model, or (None, why not). Its name (or the reason) belongs in the stage
    identity: installing the model later must recompute, not reuse outputs with a null clarity_fs."""
    cache_root = Path(store_root) / "cache"
    if model is None:
        return None, "no language model: metrics.novbench_clarity_lm is null, so clarity_fs and clarity are null"
    if importlib.util.find_spec("llama_cpp") is None:
        return None, "no language model: llama_cpp is not installed (extra gguf), so clarity_fs and clarity are null"
    from ._fluency import GgufFluency

    try:
        return GgufFluency(cache_root, model), None
    except Exception as exc:  # noqa: BLE001  a broken optional model must leave the metric null, said why
        return None, f"no language model: the GGUF model could not be loaded ({type(exc).__name__}: {exc})"


def score_reviews(judge_dir: Path, pin_dir: Path, mp: MetricsParams, store_root: str | Path, *, encode: Any = None,
                  fluency: Any = "auto") -> NovbenchScoring:
    reviews_path = Path(judge_dir) / "reviews.parquet"
    reviews = pl.read_parquet(reviews_path) if reviews_path.exists() else None
    if reviews is None or reviews.height == 0:
        return NovbenchScoring({}, pl.DataFrame(schema=PAPERS_SCHEMA), {})
    references: dict[tuple[str, str], list[tuple[str, str]]] = {}
    sentences: dict[tuple[str, str], list[str]] = {}
    for ds in sorted(reviews["dataset"].unique().to_list()):
        for p in load_papers(pin_dir, ds):
            references[(ds, p.paper_id)] = [(i.label, i.text) for i in p.reference]
            sentences[(ds, p.paper_id)] = list(p.sentences)
    embedder_id = "custom"
    if encode is None:
        from ..judges.distance import EmbeddingCache, SentenceTransformerEmbedder

        emb = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(Path(store_root) / "cache" / "embeddings"))
        encode, embedder_id = emb.encode, emb.model_id
    reason = None
    if fluency == "auto":
        fluency, reason = resolve_fluency(store_root, mp.novbench_clarity_lm)
    elif isinstance(fluency, tuple):
        fluency, reason = fluency
    elif fluency is None:
        reason = "no language model configured"
    settings = ScoreSettings(seed=mp.seed, resamples=mp.bootstrap_resamples, confidence=mp.confidence,
                             embedder_id=embedder_id, fluency=fluency, fluency_unavailable=reason)
    scored = score_datasets(reviews, references, sentences, encode, settings)
    assert scored.papers is not None
    return NovbenchScoring(scored.metrics, scored.papers, scored.details)
