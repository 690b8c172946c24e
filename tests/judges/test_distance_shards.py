"""Corpus embedding in content-addressed shards: a shard depends only on its texts, a run killed between
shards resumes without embedding a finished shard again, and the neighbours equal the single-process path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from novelty_audit.judges.distance import EmbeddingCache, SentenceTransformerEmbedder, cosine_matrix, nearest, text_digest
from novelty_audit.judges.distance._shards import embed_corpus, plan_shards

TOPICS = ["graph neural networks", "protein folding", "sourdough fermentation", "sparse attention", "reinforcement learning",
          "climate models", "speech recognition", "compiler optimization"]  # fmt: skip
ASPECTS = ["for molecules", "with few labels", "at scale", "under noise", "on edge devices", "with theory"]
CORPUS = [f"A study of {t} {a}." for t in TOPICS for a in ASPECTS]  # 48 texts
QUERIES = ["Message passing on molecular graphs.", "Bread baking with wild yeast.", "Long documents with efficient attention."]


def test_a_shard_boundary_depends_only_on_the_text_at_it():
    digests = [text_digest(t) for t in CORPUS]
    before = plan_shards(digests, target=4)
    assert len(before) > 3 and sorted(d for s in before for d in s.digests) == sorted(set(digests))
    after = plan_shards(digests + [text_digest("A new paper on quantum error correction.")], target=4)
    changed = {s.digests for s in after} ^ {s.digests for s in before}
    assert len(changed) <= 3  # the shard it joins (old and new form), or that shard split in two


@pytest.mark.slow
def test_a_run_killed_between_shards_resumes_without_redoing_them_and_gives_the_same_neighbours(tmp_path: Path, monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = plan_shards([text_digest(t) for t in CORPUS], target=8)
    assert len(plan) >= 3

    killed = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "resumed"))
    real = killed._encode_uncached
    calls: list[int] = []

    def dies_after_the_first_shard(texts):
        if calls:
            raise KeyboardInterrupt("killed")  # what a kill between shards looks like from inside
        calls.append(len(texts))
        return real(texts)

    monkeypatch.setattr(killed, "_encode_uncached", dies_after_the_first_shard)
    with pytest.raises(KeyboardInterrupt):
        embed_corpus(killed, CORPUS, target=8, progress=False)
    shard_files = sorted((tmp_path / "resumed").rglob("corpus/*.shard.chk"))
    assert len(shard_files) == 1 and calls == [len(plan[0].digests)]
    first_bytes = shard_files[0].read_bytes()

    resumed = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "resumed"))
    vectors = embed_corpus(resumed, CORPUS, target=8, progress=False)
    assert resumed.texts_encoded == len(CORPUS) - calls[0]  # the finished shard was not embedded again
    assert shard_files[0].read_bytes() == first_bytes
    assert len(list((tmp_path / "resumed").rglob("corpus/*.shard.chk"))) == len(plan)

    # The same shards embedded in one go, in a fresh cache: the same bytes.
    uninterrupted = embed_corpus(SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "one-go")), CORPUS,
                                 target=8, progress=False)  # fmt: skip
    np.testing.assert_array_equal(vectors, uninterrupted)

    # The single-process, unsharded path (one encode call over the whole corpus): the same neighbours.
    single = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "single")).encode(CORPUS)
    np.testing.assert_allclose(vectors, single, atol=1e-5)
    q = resumed.encode(QUERIES)
    sharded_nb = nearest(cosine_matrix(q, vectors), 10, near_duplicate=None)
    single_nb = nearest(cosine_matrix(q, single), 10, near_duplicate=None)
    assert sharded_nb.index.tolist() == single_nb.index.tolist()
    np.testing.assert_allclose(sharded_nb.cosine, single_nb.cosine, atol=1e-5)

    # A later run reads everything and embeds nothing.
    again = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "resumed"))
    np.testing.assert_array_equal(embed_corpus(again, CORPUS, target=8, progress=False), vectors)
    assert again.texts_encoded == 0 and again._model is None


def test_progress_without_a_terminal_is_a_log_line_every_tenth(caplog):
    import logging

    from novelty_audit.judges.distance._shards import Progress

    with caplog.at_level(logging.INFO, logger="novelty_audit.progress"):
        bar = Progress("embed corpus (m)", 10)
        for _ in range(10):
            bar.advance(1)
        bar.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "novelty_audit.progress"]
    assert lines[0] == "embed corpus (m): 0/10 texts embedded (started)"
    assert lines[-1] == "embed corpus (m): 10/10 texts embedded (100%)" and len(lines) == 11
