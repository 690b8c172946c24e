"""Distance-judge caches are checked when read.

Embedding shards, TF-IDF fits and corpus densities each carry their key and the sha256 of their
payload. One changed byte, a truncated file or a file under the wrong name is discarded with a
warning naming it and recomputed — never used, never a traceback — and `verify_distance_caches`
lists it for `novelty-audit verify`.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np

from judge_items import TOY_DOCS, three_ideas, toy_corpus_file
from novelty_audit.judges.distance import EmbeddingCache, SentenceTransformerEmbedder, clear_memory_caches, verify_distance_caches
from novelty_audit.judges.distance._cachefile import entry_path, read_entry, write_entry

DOCS = [*TOY_DOCS, ("d6", "Graph transformers for chemistry", "Transformers over molecular graphs predict reaction outcomes.", 2023)]
LOGGER = "novelty_audit.judges.distance"


def corpus_file(tmp_path: Path) -> str:
    return toy_corpus_file(tmp_path, DOCS)


def items():
    return three_ideas()


def cache_root(tmp_path: Path) -> Path:
    return tmp_path / "store" / "cache"


def flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))


def rnd_run(build, tmp_path: Path):
    clear_memory_caches()  # as in a new process: only the disk caches remain
    judge = build("distance-rnd", corpus=corpus_file(tmp_path), embedder="tfidf", k=2, neighbours=4)
    return judge, judge.judge(*items())


def test_a_flipped_byte_in_a_density_entry_is_reported_discarded_and_recomputed(build, tmp_path: Path, caplog):
    _, first = rnd_run(build, tmp_path)
    (entry,) = (cache_root(tmp_path) / "distance" / "densities").glob("*.chk")
    assert verify_distance_caches(cache_root(tmp_path)) == []
    flip_last_byte(entry)  # the last byte of the last stored density
    assert verify_distance_caches(cache_root(tmp_path)) == [(str(entry), "sha256 of the payload differs from its header")]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _, second = rnd_run(build, tmp_path)
    assert second.pairwise == first.pairwise and second.pointwise == first.pointwise
    assert any(str(entry) in r.getMessage() and "corrupt" in r.getMessage() for r in caplog.records)
    assert entry.exists() and verify_distance_caches(cache_root(tmp_path)) == []  # rewritten, good again
    assert len(list((entry.parent / "corrupt").iterdir())) == 1  # the damaged one is kept aside, out of use


def test_a_damaged_tfidf_fit_is_refitted(build, tmp_path: Path, caplog):
    _, first = rnd_run(build, tmp_path)
    (entry,) = (cache_root(tmp_path) / "distance" / "tfidf").glob("*.chk")
    entry.write_bytes(entry.read_bytes()[:100])  # cut short, as by a full disk
    assert verify_distance_caches(cache_root(tmp_path)) == [(str(entry), "header is cut off")]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        judge, second = rnd_run(build, tmp_path)
    assert judge.embedder.fitted == 1
    assert second.pairwise == first.pairwise
    assert any(str(entry) in r.getMessage() for r in caplog.records)


class _FakeModel:
    """Deterministic vectors without torch; counts the texts it encodes."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts, **kw):
        self.texts.extend(texts)
        v = np.array([[len(t), t.count("a") + 1.0, t.count("e") + 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def embedder(tmp_path: Path, monkeypatch) -> tuple[SentenceTransformerEmbedder, _FakeModel]:
    emb = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(cache_root(tmp_path) / "embeddings"))
    model = _FakeModel()
    monkeypatch.setattr(emb, "_load", lambda: model)
    return emb, model


def test_a_damaged_embedding_shard_is_never_used_and_its_texts_are_embedded_again(tmp_path: Path, monkeypatch, caplog):
    emb, _ = embedder(tmp_path, monkeypatch)
    good = emb.encode(["alpha", "beta"])
    (shard,) = (cache_root(tmp_path) / "embeddings").rglob("*.shard.chk")
    data = bytearray(shard.read_bytes())
    data[-200] ^= 0x40  # somewhere inside the stored vectors or their zip directory
    shard.write_bytes(bytes(data))
    assert [p for p, _ in verify_distance_caches(cache_root(tmp_path))] == [str(shard)]
    again, model = embedder(tmp_path, monkeypatch)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        vectors = again.encode(["alpha", "beta"])
    assert sorted(model.texts) == ["alpha", "beta"]  # recomputed, not read from the damaged shard
    np.testing.assert_array_equal(vectors, good)
    assert any(str(shard) in r.getMessage() for r in caplog.records)
    assert verify_distance_caches(cache_root(tmp_path)) == []


def test_a_legacy_or_foreign_file_with_a_checked_name_is_rejected_without_a_traceback(tmp_path: Path, monkeypatch, caplog):
    emb, _ = embedder(tmp_path, monkeypatch)
    emb.encode(["alpha"])
    (shard,) = (cache_root(tmp_path) / "embeddings").rglob("*.shard.chk")
    buf = io.BytesIO()
    np.savez(buf, digests=np.array(["x"]), vectors=np.ones((1, 3), np.float32))
    shard.write_bytes(buf.getvalue())  # a bare .npz, no header: what np.load alone would accept
    assert verify_distance_caches(cache_root(tmp_path)) == [(str(shard), "not a checked cache entry (bad magic)")]
    again, model = embedder(tmp_path, monkeypatch)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        again.encode(["alpha"])
    assert model.texts == ["alpha"]


def test_an_entry_must_hold_the_key_its_name_stands_for(tmp_path: Path, caplog):
    d = tmp_path / "distance" / "densities"
    key_a, key_b = {"cache": "densities", "k": 1}, {"cache": "densities", "k": 2}
    buf = io.BytesIO()
    np.save(buf, np.arange(3, dtype=np.float64))
    write_entry(entry_path(d, key_a, "npy"), key_a, buf.getvalue())
    moved = entry_path(d, key_b, "npy")
    entry_path(d, key_a, "npy").rename(moved)  # a valid entry under another key's name
    assert verify_distance_caches(tmp_path) == [(str(moved), "file name does not match the key in its header")]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert read_entry(moved, key_b, lambda b: np.load(io.BytesIO(b))) is None
    assert not moved.exists()


def test_a_payload_that_does_not_decode_is_discarded_not_raised(tmp_path: Path, caplog):
    key = {"cache": "tfidf", "model_id": "x"}
    path = entry_path(tmp_path / "distance" / "tfidf", key, "npz")
    write_entry(path, key, b"PK\x03\x04 not really a zip archive")  # a valid checksum over garbage: BadZipFile
    assert verify_distance_caches(tmp_path)[0][1].startswith("payload does not decode (BadZipFile")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert read_entry(path, key, lambda b: np.load(io.BytesIO(b))["terms"]) is None
    assert "BadZipFile" in caplog.text and str(path) in caplog.text


def test_verify_on_a_missing_or_empty_cache_finds_nothing(tmp_path: Path):
    assert verify_distance_caches(tmp_path / "nowhere") == []
    (tmp_path / "embeddings").mkdir()
    assert verify_distance_caches(tmp_path) == []
