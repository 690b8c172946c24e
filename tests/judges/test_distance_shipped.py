"""Shipped embeddings (args.vectors): a pinned file of cache entries pre-fills the embedding cache.

Used, it replaces embedding and changes no verdict; tampered, it is refused before any vector of it is read;
built with another model id, it is ignored and everything is embedded; a changed corpus reuses only the
shards whose texts are unchanged; `check` recomputes every entry and names a file whose vectors differ.
A fake model stands in for MiniLM (no torch): it counts the texts it is asked to encode.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from judge_items import TOY_DOCS, three_ideas, toy_corpus_file
from novelty_audit.artifacts import digest_bytes
from novelty_audit.config import PinnedFile
from novelty_audit.errors import BadInputError, ConfigError, PinMismatchError
from novelty_audit.judges import Idea, JudgeParams, PairItem, build_judges
from novelty_audit.judges.distance import EmbeddingCache, SentenceTransformerEmbedder, clear_memory_caches, embed_corpus, plan_shards, text_digest
from novelty_audit.judges.distance import _shipped
from novelty_audit.judges.distance._shipped import ShippedEmbeddings, ShippedGroup, build_embeddings, check_embeddings

LOGGER = "novelty_audit.judges.distance"


class FakeModel:
    """Deterministic unit vectors from letter counts; `scale` tilts them (another model's vectors)."""

    def __init__(self, scale: float = 1.0) -> None:
        self.texts: list[str] = []
        self.scale = scale

    def encode(self, texts, **kw):
        self.texts.extend(texts)
        v = np.array([[len(t), self.scale * (t.count("a") + 1.0), t.count("e") + 1.0, t.count("o") + 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def model(monkeypatch) -> FakeModel:
    m = FakeModel()
    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", lambda self: m)
    clear_memory_caches()
    monkeypatch.setattr(_shipped, "_installed", {})  # each test is a new process for the install memo
    return m


def corpus_file(tmp_path: Path) -> str:
    return toy_corpus_file(tmp_path, TOY_DOCS)


def items():
    return three_ideas()


def params(corpus: str, vectors: dict | None = None) -> JudgeParams:
    args = {"corpus": corpus, "embedder": "sentence-transformers", "model": "minilm", **({"vectors": vectors} if vectors else {})}
    return JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False, "judges": {"yin": {"backend": "distance-yin", "args": args}}})


def run(jp: JudgeParams, store: Path):
    clear_memory_caches()  # a new process: only disk caches remain
    (judge,) = build_judges(jp, store_root=store).judges
    return judge.judge(*items())


def shipped_from_cold_run(tmp_path: Path, model: FakeModel) -> tuple[str, Path, object]:
    """(corpus, file, output of the cold run the file was built from)."""
    corpus = corpus_file(tmp_path)
    cold = run(params(corpus), tmp_path / "cold")
    out = tmp_path / "shipped.npz"
    build_embeddings(params(corpus), store_root=tmp_path / "cold", out=out)
    model.texts.clear()
    return corpus, out, cold


def pin(path: Path) -> dict:
    return {"path": str(path), "sha256": digest_bytes(path.read_bytes())}


def cached_entries(store: Path) -> list[Path]:
    return sorted((store / "cache" / "embeddings").rglob("*.shard.chk"))


def test_shipped_vectors_replace_embedding_and_change_no_verdict(model, tmp_path: Path):
    corpus, file, cold = shipped_from_cold_run(tmp_path, model)
    warm = run(params(corpus, pin(file)), tmp_path / "fresh")
    assert model.texts == []  # nothing embedded: corpus shard and ideas came from the file
    assert warm.pairwise == cold.pairwise and warm.pointwise == cold.pointwise
    facts = warm.facts["shipped_vectors"]
    assert facts["used"] is True and facts["installed"] == facts["groups"] == 2 and facts["texts"] == len(TOY_DOCS) + 3


def test_a_tampered_file_is_refused_and_none_of_its_vectors_is_used(model, tmp_path: Path):
    corpus, file, _ = shipped_from_cold_run(tmp_path, model)
    jp = params(corpus, pin(file))
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0x01
    file.write_bytes(bytes(data))
    with pytest.raises(PinMismatchError) as err:
        run(jp, tmp_path / "fresh")
    assert "judge.judges.yin.args.vectors" in err.value.message and str(file) in err.value.message
    assert cached_entries(tmp_path / "fresh") == []


def test_a_pinned_file_whose_text_is_not_its_digest_is_refused(model, tmp_path: Path, monkeypatch):
    corpus, file, _ = shipped_from_cold_run(tmp_path, model)
    good = ShippedEmbeddings.from_bytes(file.read_bytes(), "test")
    g = good.groups[0]
    forged = ShippedGroup(g.kind, g.digests, (g.texts[0] + " (edited)", *g.texts[1:]), g.vectors)
    with monkeypatch.context() as m:
        m.setattr(_shipped, "_check_group", lambda *a: None)  # write what the writer would refuse
        file.write_bytes(ShippedEmbeddings(good.model_id, (forged, *good.groups[1:])).to_bytes())
    with pytest.raises(BadInputError) as err:
        run(params(corpus, pin(file)), tmp_path / "fresh")
    assert "its sha256 is" in err.value.message and str(file) in err.value.message
    assert cached_entries(tmp_path / "fresh") == []


def test_a_file_of_another_model_id_is_ignored_with_a_note_and_everything_is_embedded(model, tmp_path: Path, caplog):
    corpus, file, cold = shipped_from_cold_run(tmp_path, model)
    good = ShippedEmbeddings.from_bytes(file.read_bytes(), "test")
    file.write_bytes(ShippedEmbeddings("sentence-transformers/all-MiniLM-L6-v2@0000000000000000", good.groups).to_bytes())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        out = run(params(corpus, pin(file)), tmp_path / "fresh")
    assert len(model.texts) == len(TOY_DOCS) + 3  # corpus and ideas embedded from scratch
    assert out.pairwise == cold.pairwise
    facts = out.facts["shipped_vectors"]
    assert facts["used"] is False and facts["installed"] == 0 and "@0000000000000000" in facts["reason"]
    assert any("nothing of it is used" in r.getMessage() for r in caplog.records)


def test_a_changed_corpus_embeds_only_the_shards_the_file_lacks(model, tmp_path: Path):
    texts = [f"paper {i}: {'a' * (i % 5)} on {'e' * (i % 3)} topics {'o' * (i % 7)}" for i in range(40)]
    first = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "a"))
    before = embed_corpus(first, texts, target=4, progress=False)
    groups = EmbeddingCache(tmp_path / "a").groups(first.model_id)
    file = tmp_path / "shipped.npz"
    file.write_bytes(ShippedEmbeddings(first.model_id, tuple(ShippedGroup(g.kind, tuple(g.digests), tuple(g.texts), g.vectors) for g in groups)).to_bytes())
    model.texts.clear()

    changed = [*texts, "a paper nobody embedded before"]
    emb = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "b"), shipped=PinnedFile(**pin(file)))
    after = embed_corpus(emb, changed, target=4, progress=False)
    shipped = {s.digests for s in plan_shards(map(text_digest, texts), 4)}
    lacking = {d for s in plan_shards(map(text_digest, changed), 4) if s.digests not in shipped for d in s.digests}
    assert sorted(map(text_digest, model.texts)) == sorted(lacking)  # exactly the shards whose texts changed
    assert 0 < len(model.texts) < len(texts) / 2 and emb.shipped_facts["used"] is True
    kept = [i for i, t in enumerate(texts) if text_digest(t) not in lacking]
    np.testing.assert_array_equal(after[kept], before[kept])


def test_the_file_is_the_same_bytes_when_built_twice(model, tmp_path: Path):
    corpus, file, _ = shipped_from_cold_run(tmp_path, model)
    again = tmp_path / "again.npz"
    build_embeddings(params(corpus), store_root=tmp_path / "cold", out=again)
    assert again.read_bytes() == file.read_bytes()


def test_check_recomputes_every_entry_and_names_a_file_whose_vectors_differ(model, tmp_path: Path):
    corpus, file, _ = shipped_from_cold_run(tmp_path, model)
    ok = check_embeddings(params(corpus, pin(file)))
    assert ok.ok and ok.files[0]["identical"] == ok.files[0]["texts"] == len(TOY_DOCS) + 3, ok.lines()
    assert len(model.texts) == len(TOY_DOCS) + 3
    model.scale = 1.01  # the installed model now computes slightly other vectors
    bad = check_embeddings(params(corpus, pin(file)))
    assert not bad.ok and bad.files[0]["identical"] < bad.files[0]["texts"]
    assert any(str(file) in p and "differ by more than" in p for p in bad.problems), bad.problems


def test_build_refuses_a_cache_without_vectors_and_tfidf_refuses_shipped_vectors(model, tmp_path: Path):
    corpus = corpus_file(tmp_path)
    with pytest.raises(BadInputError, match="run `dvc repro` first"):
        build_embeddings(params(corpus), store_root=tmp_path / "empty", out=tmp_path / "x.npz")
    jp = JudgeParams.model_validate({"judges": {"t": {"backend": "distance-yin", "args": {"corpus": corpus, "embedder": "tfidf",
                                                                                           "vectors": {"path": "x", "sha256": "0" * 64}}}}})
    with pytest.raises(ConfigError, match="args.vectors"):
        build_judges(jp, store_root=tmp_path / "store")


def test_the_embeddings_command_names_its_actions_on_a_usage_error(tmp_path: Path):
    import subprocess
    import sys

    for args in (["embeddings", "verify"], ["embeddings", "check", "--out", "x.npz"]):
        res = subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=tmp_path, capture_output=True, text=True)
        assert res.returncode == 2, res.stdout + res.stderr
        assert "expected `check` or `build [--out FILE]`" in res.stderr and "Traceback" not in res.stderr, res.stderr


def without_sentence_transformers(monkeypatch) -> None:
    """This install as `pip install -e .` leaves it: no sentence-transformers, no model package, no torch."""
    from novelty_audit.judges.distance import _embed

    monkeypatch.setattr(_embed, "can_embed", lambda model: False)
    monkeypatch.setattr(_embed, "resolve_model_dir", lambda *a, **k: pytest.fail("resolved a model without the libraries"))
    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", lambda self: pytest.fail("loaded a model without the libraries"))
    from novelty_audit.judges.distance import _judge

    monkeypatch.setattr(_judge, "can_embed", lambda model: False)


def test_without_the_embed_extra_the_shipped_vectors_give_the_same_verdicts_under_their_model_id(model, tmp_path: Path, monkeypatch):
    corpus, file, cold = shipped_from_cold_run(tmp_path, model)
    recorded = ShippedEmbeddings.from_bytes(file.read_bytes(), "test").model_id
    without_sentence_transformers(monkeypatch)
    light = run(params(corpus, pin(file)), tmp_path / "fresh")
    assert light.pairwise == cold.pairwise and light.pointwise == cold.pointwise
    assert light.facts["embedder_model_id"] == recorded and light.facts["shipped_vectors"]["used"] is True
    # A later reader of the same store without the libraries (the metrics stage's NovBench scoring) finds the id too.
    later = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "fresh" / "cache" / "embeddings"))
    assert later.model_id == recorded


def test_without_the_embed_extra_a_text_the_shipped_vectors_lack_stops_the_run_naming_the_extra(model, tmp_path: Path, monkeypatch):
    from novelty_audit.errors import MissingDependencyError

    corpus, file, _ = shipped_from_cold_run(tmp_path, model)
    without_sentence_transformers(monkeypatch)
    (judge,) = build_judges(params(corpus, pin(file)), store_root=tmp_path / "fresh").judges
    pairs, _ = items()
    first = pairs[0]
    edited = Idea(first.idea_0.idea_id, first.idea_0.title, first.idea_0.text + " An edit.", f"{9:064x}", first.idea_0.area)
    with pytest.raises(MissingDependencyError) as err:
        judge.judge([PairItem("toy", "p-1", edited, first.idea_1, first.idea_1.idea_id)], [])
    assert "1 text(s) are not among the shipped or cached vectors" in err.value.message and "embed extra" in err.value.hint
    # No shipped file and no library: refused when the judge is built, naming the extra.
    with pytest.raises(MissingDependencyError) as err:
        build_judges(params(corpus), store_root=tmp_path / "other")
    assert "sentence-transformers" in err.value.message and "embed extra" in err.value.hint
