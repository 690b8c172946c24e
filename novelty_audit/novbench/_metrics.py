"""NovBench metrics: each paper scored alone, then averaged over papers with seeded bootstrap intervals.

Per paper (reference items R, generated items G, novelty sentences S):
- coverage: share of R whose highest cosine (MiniLM) to any item of G is >= threshold (0.7).
- dist_acc: 1 - 1/2 * sum over labels of |share in R - share in G|.
- clarity_kc: share of G containing (case-insensitive substring) any word of S longer than 5 characters
  (words = runs of letters, digits and hyphens).
- clarity_ls: min(mean whitespace words per item of G / 20, 1).
- clarity_fs: mean over G of 1 / (1 + perplexity) under a causal LM; null (with a reason) without one.
- clarity: (kc + ls + fs) / 3, null when clarity_fs is null.
- relevance_cos: per item of G the max cosine to S, then the mean. A substitute for the study's IMS
  (`relevance_ims`), which needs a model that cannot be obtained here; it never carries IMS's name.
A paper whose output is invalid or has no item scores 0 on every metric and stays in the denominator.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import polars as pl

from ..artifacts import digest_obj
from ..metrics import Ratio, Resampler, bootstrap_weights, percentile_intervals, seeded_rng
from ._parse import LABELS

__all__ = [
    "COVERAGE_THRESHOLD",
    "PAPERS_SCHEMA",
    "FluencyScorer",
    "PaperScore",
    "ScoreSettings",
    "clarity_fs",
    "clarity_kc",
    "clarity_ls",
    "coverage",
    "dist_acc",
    "max_mean_cosine",
    "novelty_words",
    "score_datasets",
]

COVERAGE_THRESHOLD = 0.7
KC_MIN_CHARS = 5  # a word counts when it is longer than this
LS_WORDS = 20
_WORD = re.compile(r"(?:[^\W_]|-)+")
METRIC_KEYS = ("coverage", "dist_acc", "clarity_kc", "clarity_ls", "clarity_fs", "clarity")


class FluencyScorer(Protocol):
    """A causal LM giving each text's perplexity; `name` identifies the model (and enters the config digest)."""

    name: str

    def perplexities(self, texts: Sequence[str]) -> list[float]: ...


Encode = Callable[[Sequence[str]], np.ndarray]
"""Texts -> L2-normalized rows (a dot product is a cosine)."""


def novelty_words(sentences: Sequence[str]) -> set[str]:
    return {w.lower() for s in sentences for w in _WORD.findall(s) if len(w) > KC_MIN_CHARS}


def clarity_kc(items: Sequence[str], sentences: Sequence[str]) -> float:
    if not items:
        return 0.0
    words = novelty_words(sentences)
    return sum(any(w in t.lower() for w in words) for t in items) / len(items)


def clarity_ls(items: Sequence[str]) -> float:
    if not items:
        return 0.0
    return min(sum(len(t.split()) for t in items) / len(items) / LS_WORDS, 1.0)


def clarity_fs(perplexities: Sequence[float]) -> float:
    if not perplexities:
        return 0.0
    return float(np.mean([1.0 / (1.0 + p) for p in perplexities]))


def dist_acc(reference: Sequence[str], generated: Sequence[str]) -> float:
    """1 - total variation distance between the label distributions (0 when nothing was generated)."""
    if not reference or not generated:
        return 0.0
    ref = np.array([sum(lab == x for x in reference) / len(reference) for lab in LABELS])
    gen = np.array([sum(lab == x for x in generated) / len(generated) for lab in LABELS])
    return float(1.0 - 0.5 * np.abs(ref - gen).sum())


def coverage(ref_vecs: np.ndarray, gen_vecs: np.ndarray, threshold: float = COVERAGE_THRESHOLD) -> float:
    if len(ref_vecs) == 0 or len(gen_vecs) == 0:
        return 0.0
    best = (ref_vecs @ gen_vecs.T).max(axis=1)
    # Rounded so a self-match (cosine 1 - 1e-7 in float32) is never on the wrong side of the threshold.
    return float(np.mean(np.round(best, 6) >= threshold))


def max_mean_cosine(gen_vecs: np.ndarray, sent_vecs: np.ndarray) -> float:
    if len(gen_vecs) == 0 or len(sent_vecs) == 0:
        return 0.0
    return float((gen_vecs @ sent_vecs.T).max(axis=1).mean())


PAPERS_SCHEMA = {"dataset": pl.String, "judge": pl.String, "paper_id": pl.String, "valid": pl.Boolean, "n_items": pl.Int64,
                 "coverage": pl.Float64, "dist_acc": pl.Float64, "clarity_kc": pl.Float64, "clarity_ls": pl.Float64,
                 "clarity_fs": pl.Float64, "relevance_cos": pl.Float64}
"""novbench_papers.parquet (artifacts/metrics): one row per (dataset, generator, paper)."""


@dataclass(frozen=True)
class PaperScore:
    paper_id: str
    valid: bool
    n_items: int
    coverage: float
    dist_acc: float
    clarity_kc: float
    clarity_ls: float
    clarity_fs: float | None
    relevance_cos: float


@dataclass(frozen=True)
class ScoreSettings:
    seed: int
    resamples: int
    confidence: float
    threshold: float = COVERAGE_THRESHOLD
    embedder_id: str = ""
    fluency: FluencyScorer | None = None
    fluency_unavailable: str | None = None
    """Why clarity_fs is null (recorded in novbench.json)."""

    def config(self) -> dict[str, Any]:
        """What decides the numbers (its digest is the metrics' config digest)."""
        return {
            "coverage_threshold": f"{self.threshold:.6f}",
            "embedder": self.embedder_id,
            "clarity_lm": self.fluency.name if self.fluency else None,
            "relevance": "cos",
            "seed": self.seed,
            "resamples": self.resamples,
            "confidence": f"{self.confidence:.6f}",
        }


@dataclass
class Scored:
    metrics: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    papers: pl.DataFrame | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _items(js: str) -> list[dict[str, str]]:
    import orjson

    return orjson.loads(js) if js else []


def score_papers(
    reviews: pl.DataFrame, references: dict[tuple[str, str], list[tuple[str, str]]], sentences: dict[tuple[str, str], list[str]],
    encode: Encode, fluency: FluencyScorer | None,
) -> list[tuple[str, str, PaperScore]]:
    """(dataset, generator, score) per review row, embedding every distinct text once."""
    rows = list(reviews.iter_rows(named=True))
    parsed = [(r, [(i["label"], i["text"]) for i in _items(r["items"])] if r["valid"] else []) for r in rows]
    texts: dict[str, None] = {}
    for r, gen in parsed:
        for _, t in references.get((r["dataset"], r["paper_id"]), []):
            texts[t] = None
        for t in sentences.get((r["dataset"], r["paper_id"]), []):
            texts[t] = None
        for _, t in gen:
            texts[t] = None
    order = list(texts)
    vecs = encode(order) if order else np.zeros((0, 1), np.float32)
    at = {t: vecs[i] for i, t in enumerate(order)}
    dim = vecs.shape[1] if vecs.ndim == 2 else 1

    def mat(ts: Sequence[str]) -> np.ndarray:
        return np.stack([at[t] for t in ts]).astype(np.float64) if ts else np.zeros((0, dim))

    ppl: dict[str, float] = {}
    if fluency is not None:
        gen_texts = sorted({t for _, gen in parsed for _, t in gen})
        ppl = dict(zip(gen_texts, fluency.perplexities(gen_texts)))
    out = []
    for r, gen in parsed:
        ref = references.get((r["dataset"], r["paper_id"]), [])
        sents = sentences.get((r["dataset"], r["paper_id"]), [])
        g_texts = [t for _, t in gen]
        g_vecs = mat(g_texts)
        score = PaperScore(
            paper_id=r["paper_id"], valid=bool(r["valid"]), n_items=len(gen),
            coverage=coverage(mat([t for _, t in ref]), g_vecs),
            dist_acc=dist_acc([lab for lab, _ in ref], [lab for lab, _ in gen]),
            clarity_kc=clarity_kc(g_texts, sents),
            clarity_ls=clarity_ls(g_texts),
            clarity_fs=clarity_fs([ppl[t] for t in g_texts]) if fluency is not None else None,
            relevance_cos=max_mean_cosine(g_vecs, mat(sents)),
        )
        out.append((r["dataset"], r["judge"], score))
    return out


def _intervals(values: dict[str, np.ndarray], resampler: Resampler | None, confidence: float) -> dict[str, tuple[float, float]]:
    if resampler is None or not values:
        return {}
    names = list(values)
    samples = np.stack([Ratio(values[n], np.ones_like(values[n])).resample(resampler) for n in names])
    lo, hi = percentile_intervals(samples, confidence)
    return {n: (float(lo[i]), float(hi[i])) for i, n in enumerate(names)}


def aggregate(scores: list[tuple[str, str, PaperScore]], settings: ScoreSettings) -> Scored:
    """metrics.json entries {dataset: {generator: {...}}} and the per-paper table."""
    result = Scored()
    by: dict[tuple[str, str], list[PaperScore]] = {}
    for ds, gen, s in scores:
        by.setdefault((ds, gen), []).append(s)
    config_digest = digest_obj(settings.config())
    resamplers: dict[str, Resampler | None] = {}
    for (ds, gen), ss in sorted(by.items()):
        ss = sorted(ss, key=lambda s: s.paper_id)
        n = len(ss)
        if ds not in resamplers:
            # One weight matrix per dataset, over papers sorted by id: the bootstrap is paired across generators.
            resamplers[ds] = (Resampler(bootstrap_weights(n, settings.resamples, seeded_rng(settings.seed, ds, "novbench")))
                              if settings.resamples and n else None)
        rs = resamplers[ds]
        if rs is not None and rs.weights.shape[1] != n:
            raise ValueError(f"novbench {ds}: generator {gen} has {n} papers, others {rs.weights.shape[1]}")
        values = {
            "coverage": np.array([s.coverage for s in ss]),
            "dist_acc": np.array([s.dist_acc for s in ss]),
            "clarity_kc": np.array([s.clarity_kc for s in ss]),
            "clarity_ls": np.array([s.clarity_ls for s in ss]),
            "relevance_cos": np.array([s.relevance_cos for s in ss]),
        }
        if settings.fluency is not None:
            values["clarity_fs"] = np.array([s.clarity_fs or 0.0 for s in ss])
            values["clarity"] = (values["clarity_kc"] + values["clarity_ls"] + values["clarity_fs"]) / 3.0
        ci = _intervals(values, rs, settings.confidence)
        entry: dict[str, Any] = {}
        for name in ("coverage", "dist_acc", "clarity_kc", "clarity_ls", "clarity_fs", "clarity", "relevance_cos"):
            if name not in values:
                entry[name] = None
                continue
            entry[name] = float(values[name].mean()) if n else None
            if name in ci and not math.isnan(ci[name][0]):
                entry[f"{name}_ci_low"], entry[f"{name}_ci_high"] = ci[name]
        entry["n_papers"] = n
        entry["n_items"] = int(sum(s.n_items for s in ss))
        entry["n_invalid"] = int(sum(not s.valid for s in ss))
        result.metrics.setdefault(ds, {})[gen] = entry
    result.details = {
        "config": settings.config(),
        "config_digest": config_digest,
        "clarity_fs_unavailable": settings.fluency_unavailable if settings.fluency is None else None,
        "relevance": "relevance_cos (MiniLM cosine, max over novelty sentences, mean over items); "
                     "relevance_ims (the study's SPICED IMS) did not run: its model is not available here",
        "invalid_policy": "a paper whose output is invalid or has no item scores 0 on every metric and stays in the denominator",
    }
    result.papers = pl.DataFrame(
        [{"dataset": ds, "judge": gen, "paper_id": s.paper_id, "valid": s.valid, "n_items": s.n_items,
          "coverage": s.coverage, "dist_acc": s.dist_acc, "clarity_kc": s.clarity_kc, "clarity_ls": s.clarity_ls,
          "clarity_fs": s.clarity_fs, "relevance_cos": s.relevance_cos} for ds, gen, s in scores],
        schema=PAPERS_SCHEMA,
    ).sort("dataset", "judge", "paper_id")
    return result


def score_datasets(
    reviews: pl.DataFrame, references: dict[tuple[str, str], list[tuple[str, str]]], sentences: dict[tuple[str, str], list[str]],
    encode: Encode, settings: ScoreSettings,
) -> Scored:
    """Score every review row and aggregate per (dataset, generator). references/sentences are keyed by (dataset, paper_id)."""
    return aggregate(score_papers(reviews, references, sentences, encode, settings.fluency), settings)
