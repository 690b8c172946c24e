"""Shipped embeddings: a pinned file of embedding-cache entries that pre-fills the cache of a fresh clone.

A cold `dvc repro` spent most of its time embedding the default corpus, the ideas and the NovBench review
items with MiniLM on CPU. The file (`args.vectors` of a distance judge, sha256 pinned in params.yaml) holds
the entries such a run writes — each the vectors of one encode call, corpus shards and the other calls —
with their texts and the model id. Before the corpus is embedded, `install_shipped`:

- refuses the file unless its bytes match the pin (`PinMismatchError`, nothing from it is used), and
  unless every text's sha256 is its recorded digest and the vectors are finite unit rows (`BadInputError`);
- uses nothing when its model id differs from the judge's (other weights or library versions would give
  other vectors): a warning, a run fact, and the run embeds as if there were no file;
- otherwise writes each entry the cache lacks, under the key the cold run would have used. Entries are
  keyed by content, so a changed corpus reuses only the shards whose texts are unchanged, and an entry
  is used exactly as one computed on this machine would be.

`novelty-audit embeddings build` writes the file from a store's cache (after `dvc repro` on a fresh clone,
so it holds exactly what a cold run embeds); `novelty-audit embeddings check` recomputes every entry from
its texts and compares. The zip is written with fixed timestamps: the same entries give the same bytes.
"""

from __future__ import annotations

import io
import logging
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from ...artifacts import atomic_write_bytes, digest_bytes
from ...config import JudgeParams, PinnedFile
from ...errors import BadInputError, ConfigError, NoveltyAuditError, PinMismatchError
from ...progress import Progress
from ._embed import EmbeddingCache, SentenceTransformerEmbedder, pack_texts, text_digest, unpack_texts

__all__ = ["FORMAT", "CHECK_ATOL", "ShippedGroup", "ShippedEmbeddings", "EmbeddingsReport", "read_shipped", "shipped_model_id", "install_shipped",
           "build_embeddings", "check_embeddings"]  # fmt: skip

FORMAT = "novelty-audit-embeddings/1"
CHECK_ATOL = 1e-6
"""`check`: the largest difference per vector component still counted as the same vector (float32 kernels on
another CPU differ in the last bits; scores are rounded to 6 decimals for that reason)."""
_NORM_TOL = 1e-3
_DISTANCE_BACKENDS = ("distance-yin", "distance-knn", "distance-rnd")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
log = logging.getLogger("novelty_audit.judges.distance")


class ShippedGroup(NamedTuple):
    """One cache entry: `kind` corpus (a corpus shard) or texts (another encode call), texts in digest order."""

    kind: str
    digests: tuple[str, ...]
    texts: tuple[str, ...]
    vectors: np.ndarray


@dataclass(frozen=True)
class ShippedEmbeddings:
    """The entries of one model id, groups ordered by (kind, first digest)."""

    model_id: str
    groups: tuple[ShippedGroup, ...]

    @property
    def n_texts(self) -> int:
        return sum(len(g.digests) for g in self.groups)

    def to_bytes(self) -> bytes:
        """The file: a zip of .npy arrays (meta JSON, digests, vectors, texts), byte-identical for the same entries."""
        groups = sorted(self.groups, key=lambda g: (g.kind, g.digests[0]))
        for g in groups:
            _check_group(g, "to write")
        dims = {g.vectors.shape[1] for g in groups}
        if len(dims) != 1:
            raise ValueError(f"vectors of several widths: {sorted(dims)}")
        meta = {"format": FORMAT, "model_id": self.model_id, "dim": dims.pop(), "groups": [{"kind": g.kind, "n": len(g.digests)} for g in groups]}
        texts = [t for g in groups for t in g.texts]
        blob, offsets = pack_texts(texts)
        arrays = {
            "meta": np.frombuffer(orjson.dumps(meta, option=orjson.OPT_SORT_KEYS), dtype=np.uint8),
            "digests": np.array([d.encode("ascii") for g in groups for d in g.digests], dtype="S64"),
            "vectors": np.ascontiguousarray(np.concatenate([g.vectors for g in groups]), dtype="<f4"),
            "text_bytes": blob,
            "text_offsets": offsets.astype("<i8"),
        }
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, arr in arrays.items():
                one = io.BytesIO()
                np.lib.format.write_array(one, arr, allow_pickle=False)
                info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME)
                info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
                zf.writestr(info, one.getvalue())
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> "ShippedEmbeddings":
        """Decode and check a file's bytes; BadInputError naming `where` and the field at fault."""

        def bad(what: str) -> BadInputError:
            return BadInputError(f"{where}: {what}", hint="rebuild it with `novelty-audit embeddings build`, then re-pin its sha256")

        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                arrays = {name: z[name] for name in ("meta", "digests", "vectors", "text_bytes", "text_offsets")}
            meta = orjson.loads(arrays["meta"].tobytes())
        except Exception as exc:  # zipfile/numpy/orjson raise many types on a damaged file; all mean "not usable"
            raise bad(f"not a shipped-embeddings file ({type(exc).__name__}: {exc})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise bad(f"meta.format: expected {FORMAT!r}")
        model_id, sizes = meta.get("model_id"), meta.get("groups")
        if not isinstance(model_id, str) or not isinstance(sizes, list) or not sizes:
            raise bad("meta: model_id or groups missing")
        digests, vectors = arrays["digests"], arrays["vectors"]
        n = len(digests)
        if digests.dtype != np.dtype("S64") or digests.ndim != 1:
            raise bad(f"digests: dtype {digests.dtype}, expected S64")
        if vectors.dtype != np.dtype("<f4") or vectors.ndim != 2 or vectors.shape != (n, meta.get("dim")):
            raise bad(f"vectors: {vectors.dtype} {vectors.shape}, expected float32 ({n}, {meta.get('dim')})")
        try:
            texts = unpack_texts(arrays["text_bytes"], arrays["text_offsets"])
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad(f"texts: {exc}") from None
        if len(texts) != n:
            raise bad(f"texts: {len(texts)} texts for {n} digests")
        groups, at = [], 0
        for i, g in enumerate(sizes):
            if not isinstance(g, dict) or g.get("kind") not in ("corpus", "texts") or not isinstance(g.get("n"), int) or g["n"] < 1:
                raise bad(f"meta.groups[{i}]: expected {{kind: corpus|texts, n ≥ 1}}")
            end = at + g["n"]
            if end > n:
                raise bad(f"meta.groups: {end} rows listed, the file holds {n}")
            group = ShippedGroup(g["kind"], tuple(d.decode("ascii") for d in digests[at:end].tolist()), tuple(texts[at:end]),
                                 np.array(vectors[at:end], dtype=np.float32))  # fmt: skip
            try:
                _check_group(group, f"group {i}")
            except ValueError as exc:
                raise bad(str(exc)) from None
            groups.append(group)
            at = end
        if at != n:
            raise bad(f"meta.groups: {at} rows listed, the file holds {n}")
        return cls(model_id, tuple(groups))


def _check_group(g: ShippedGroup, where: str) -> None:
    """Digests distinct and sorted (one encode call's order), each the sha256 of its text; finite unit vectors."""
    n = len(g.digests)
    if n == 0 or len(g.texts) != n or g.vectors.ndim != 2 or len(g.vectors) != n:
        raise ValueError(f"{where}: {n} digests, {len(g.texts)} texts, vectors {g.vectors.shape}")
    if any(a >= b for a, b in zip(g.digests, g.digests[1:])):
        raise ValueError(f"{where}: digests are not distinct and sorted")
    for d, t in zip(g.digests, g.texts):
        if text_digest(t) != d:
            raise ValueError(f"{where}: text {d[:16]}…: its sha256 is {text_digest(t)[:16]}…, not its digest")
    if not np.all(np.isfinite(g.vectors)):
        raise ValueError(f"{where}: vectors hold NaN or infinity")
    norms = np.linalg.norm(g.vectors.astype(np.float64), axis=1)
    if np.any(np.abs(norms - 1.0) > _NORM_TOL):
        raise ValueError(f"{where}: vectors are not L2-normalized (norms {norms.min():.4f}..{norms.max():.4f})")


def shipped_model_id(pinned: PinnedFile, where: str) -> str:
    """The model id recorded in the pinned file (checked as `read_shipped` checks it): the id of the vectors an
    install without sentence-transformers reads from it."""
    return read_shipped(pinned, where).model_id


def read_shipped(pinned: PinnedFile, where: str) -> ShippedEmbeddings:
    """The file `pinned` names, after its bytes matched the pin and its entries their checks."""
    path = Path(pinned.path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInputError(f"{where}: {path}: cannot read it ({type(exc).__name__})",
                            hint="restore it (git checkout), rebuild it (`novelty-audit embeddings build`), or remove args.vectors") from None
    actual = digest_bytes(data)
    if actual != pinned.sha256:
        raise PinMismatchError(
            f"{where}: {path} does not match its pin; none of its vectors is used\n  expected sha256 {pinned.sha256}\n  actual   sha256 {actual}",
            hint="restore the file (git checkout), or rebuild it (`novelty-audit embeddings build`) and pin the new sha256",
        )
    return ShippedEmbeddings.from_bytes(data, f"{where}: {path}")


_installed: dict[tuple[str, str, str], dict[str, Any]] = {}
_install_lock = threading.Lock()


def install_shipped(embedder: SentenceTransformerEmbedder) -> dict[str, Any]:
    """Write the entries of `embedder.shipped` that its cache lacks; the run facts of what was used (see the module)."""
    pinned, cache = embedder.shipped, embedder.cache
    if pinned is None or cache is None:
        raise ValueError("install_shipped needs an embedder with a cache and a shipped file")
    where = getattr(embedder, "shipped_where", "args.vectors")
    key = (str(cache.root), str(Path(pinned.path).resolve()), pinned.sha256)
    with _install_lock:  # judges in threads share one cache: one install, one warning
        if key in _installed:
            return _installed[key]
        shipped = read_shipped(pinned, where)
        facts: dict[str, Any] = {"path": pinned.path, "sha256": pinned.sha256, "model_id": shipped.model_id,
                                 "groups": len(shipped.groups), "texts": shipped.n_texts}  # fmt: skip
        if shipped.model_id != embedder.model_id:
            reason = (f"built with model id {shipped.model_id}; this install computes {embedder.model_id} "
                      "(other weights or library versions): nothing of it is used")  # fmt: skip
            log.warning("%s: %s: %s; embedding from scratch (`novelty-audit embeddings build` makes one for this install)", where, pinned.path, reason)
            facts.update(used=False, reason=reason, installed=0)
        else:
            installed = 0
            for g in shipped.groups:
                if g.kind == "corpus":
                    if not cache.has_shard(embedder.model_id, g.digests):
                        cache.put_shard(embedder.model_id, g.digests, g.vectors, texts=g.texts)
                        installed += 1
                elif not cache.has_entry(embedder.model_id, g.digests):
                    cache.put(embedder.model_id, g.digests, g.vectors, texts=g.texts)
                    installed += 1
            cache.record_shipped(shipped.model_id)
            facts.update(used=True, installed=installed)
        _installed[key] = facts
        return facts


# -- the `novelty-audit embeddings` command ----------------------------------------------------------------


@dataclass
class EmbeddingsReport:
    """What `embeddings build` wrote or `embeddings check` found; `ok` is False when a file is unusable or differs."""

    action: str
    files: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action, "ok": self.ok, "files": self.files, "problems": self.problems}

    def lines(self) -> list[str]:
        out = []
        for f in self.files:
            head = f"{f['path']}: {f['texts']} texts in {f['groups']} entries of {f['model_id']}"
            if self.action == "build":
                out.append(f"wrote {head}, sha256 {f['sha256']}")
                out.extend(f"  pin it: params.yaml judge.judges.{j}.args.vectors.sha256: {f['sha256']}" for j in f["repin"])
                if f["skipped_without_texts"]:
                    out.append(f"  left out {f['skipped_without_texts']} cache entries written before entries held their texts")
            elif "identical" in f:
                out.append(f"{head}: {f['identical']} recomputed vectors identical, {f['within_atol']} within {CHECK_ATOL:g}, "
                           f"largest difference {f['max_abs_diff']:.3g} ({f['seconds']:.0f} s)")  # fmt: skip
        out.extend(f"PROBLEM {p}" for p in self.problems)
        if self.action == "check" and self.ok:
            out.append("every pinned embedding file matches its recomputation")
        return out


def _embedding_judges(jp: JudgeParams) -> list[tuple[str, Any]]:
    """(name, typed args) of the enabled distance judges that embed with sentence-transformers."""
    from .._backends import JUDGES
    from .._base import parse_args

    out = []
    for name, spec in sorted(jp.judges.items()):
        if spec.enabled and spec.backend in _DISTANCE_BACKENDS:
            args = parse_args(JUDGES.args_model(spec.backend), spec.args, name)  # type: ignore[arg-type]
            if args.embedder == "sentence-transformers":
                out.append((name, args))
    return out


def build_embeddings(jp: JudgeParams, *, store_root: str | Path, out: Path | None = None) -> EmbeddingsReport:
    """Write the cached entries (with texts) of the distance judges' sentence-transformers model as one file.

    Run it after `dvc repro` on a fresh clone with an empty store: the file then holds exactly the entries a cold
    run writes. `out` defaults to the judges' `args.vectors.path` (one path for all of them).
    """
    judges = _embedding_judges(jp)
    if not judges:
        raise ConfigError("params.yaml judge.judges: no enabled distance judge embeds with sentence-transformers; nothing to build")
    models = sorted({(a.model, a.revision or "") for _, a in judges})
    if len(models) > 1:
        raise ConfigError(f"params.yaml judge.judges: the distance judges use {len(models)} models ({', '.join(m for m, _ in models)}); "
                          "one file holds one model's vectors", hint="build one model at a time (disable the others)")  # fmt: skip
    paths = sorted({a.vectors.path for _, a in judges if a.vectors is not None})
    if out is None:
        if len(paths) != 1:
            raise ConfigError(f"embeddings build: the judges' args.vectors name {len(paths)} paths ({', '.join(paths) or 'none'})",
                              hint="give the file to write with --out")  # fmt: skip
        out = Path(paths[0])
    model, revision = models[0]
    emb = SentenceTransformerEmbedder(model, revision=revision or None)
    cache = EmbeddingCache(Path(store_root) / "cache" / "embeddings")
    groups = cache.groups(emb.model_id)
    usable = [g for g in groups if g.texts is not None]
    if not usable:
        raise BadInputError(f"{cache.root}: no cached vectors of {emb.model_id} with their texts",
                            hint="run `dvc repro` first, on a fresh clone with an empty store (then the file holds what a cold run embeds)")  # fmt: skip
    shipped = ShippedEmbeddings(emb.model_id, tuple(ShippedGroup(g.kind, tuple(g.digests), tuple(g.texts or ()), g.vectors) for g in usable))
    data = shipped.to_bytes()
    atomic_write_bytes(out, data)
    sha = digest_bytes(data)
    repin = [name for name, a in judges if a.vectors is not None and Path(a.vectors.path) == out and a.vectors.sha256 != sha]
    return EmbeddingsReport("build", [{"path": str(out), "sha256": sha, "model_id": emb.model_id, "groups": len(usable),
                                       "texts": shipped.n_texts, "skipped_without_texts": len(groups) - len(usable), "repin": repin}])  # fmt: skip


def check_embeddings(jp: JudgeParams) -> EmbeddingsReport:
    """Recompute every entry of each pinned file (`args.vectors`) from its texts with the judge's model and compare."""
    pins: dict[tuple[str, str], list[tuple[str, Any]]] = {}
    for name, a in _embedding_judges(jp):
        if a.vectors is not None:
            pins.setdefault((a.vectors.path, a.vectors.sha256), []).append((name, a))
    if not pins:
        raise ConfigError("params.yaml judge.judges: no enabled distance judge pins an embeddings file (args.vectors); nothing to check")
    report = EmbeddingsReport("check")
    for (path, sha), users in sorted(pins.items()):
        name, a = users[0]
        where = f"params.yaml judge.judges.{name}.args.vectors"
        try:
            shipped = read_shipped(PinnedFile(path=path, sha256=sha), where)
        except NoveltyAuditError as exc:
            report.problems.append(exc.message)
            continue
        emb = SentenceTransformerEmbedder(a.model, revision=a.revision, batch_size=a.batch_size)
        if emb.model_id != shipped.model_id:
            report.problems.append(f"{path}: built with model id {shipped.model_id}, the judges compute {emb.model_id}: "
                                   "judges ignore it (compared anyway below)")  # fmt: skip
        started, identical, within, worst = time.perf_counter(), 0, 0, 0.0
        bar = Progress(f"embeddings check {path}", shipped.n_texts)
        try:
            for g in shipped.groups:
                fresh = emb._encode_uncached(list(g.texts))  # one encode call in digest order, as the entry was made
                diff = np.abs(fresh.astype(np.float64) - g.vectors.astype(np.float64)).max(axis=1)
                identical += int(np.sum(np.all(fresh == g.vectors, axis=1)))
                within += int(np.sum(diff <= CHECK_ATOL))
                worst = max(worst, float(diff.max()))
                bar.advance(len(g.texts))
        finally:
            bar.close()
        n = shipped.n_texts
        report.files.append({"path": path, "sha256": sha, "model_id": shipped.model_id, "judges": [u for u, _ in users], "groups": len(shipped.groups),
                             "texts": n, "identical": identical, "within_atol": within, "max_abs_diff": worst,
                             "seconds": round(time.perf_counter() - started, 1)})  # fmt: skip
        if within < n:
            report.problems.append(f"{path}: {n - within} of {n} recomputed vectors differ by more than {CHECK_ATOL:g} (largest {worst:.3g})")
    return report
