"""Long local work says how far it is: embedding new texts, the in-process GGUF judge, NovBench generators and the
clarity LM share one progress (novelty_audit/progress.py): a rich bar on a terminal, a line every tenth otherwise."""

from __future__ import annotations

import logging

import numpy as np

from novelty_audit.progress import Progress


def test_without_a_terminal_progress_is_a_line_per_tenth_naming_unit_and_verb(caplog):
    with caplog.at_level(logging.INFO, logger="novelty_audit.progress"):
        bar = Progress("judge gguf-gemma3-270m", 20, unit="prompts", verb="scored")
        for _ in range(20):
            bar.advance()
        bar.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "novelty_audit.progress"]
    assert lines[0] == "judge gguf-gemma3-270m: 0/20 prompts scored (started)"
    assert lines[-1] == "judge gguf-gemma3-270m: 20/20 prompts scored (100%)" and len(lines) == 11


def test_disabled_or_nothing_to_do_is_silent(caplog):
    with caplog.at_level(logging.INFO, logger="novelty_audit.progress"):
        Progress("x", 5, enabled=False).advance()
        Progress("y", 0).close()
    assert not [r for r in caplog.records if r.name == "novelty_audit.progress"]


class CountingModel:
    def encode(self, texts, **kw):
        v = np.array([[len(t) + 1.0, t.count("a") + 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_embedding_new_texts_with_progress_on_says_how_many_and_how_long(monkeypatch, capsys, tmp_path):
    from novelty_audit.judges.distance import EmbeddingCache, SentenceTransformerEmbedder

    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", lambda self: CountingModel())
    emb = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path), batch_size=2)
    emb.progress_label = "judge distance-yin-minilm"
    emb.encode([f"idea text {i}" for i in range(20)])
    err = capsys.readouterr().err
    assert "judge distance-yin-minilm: embedding 20 new texts with sentence-transformers/all-MiniLM-L6-v2" in err
    assert "judge distance-yin-minilm: 20 texts embedded in" in err
    emb.encode([f"idea text {i}" for i in range(20)])  # cached: nothing to say
    assert capsys.readouterr().err == ""


def test_a_few_new_texts_or_progress_off_print_nothing(monkeypatch, capsys, tmp_path):
    from novelty_audit.judges.distance import EmbeddingCache, SentenceTransformerEmbedder

    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", lambda self: CountingModel())
    emb = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path), batch_size=64)
    emb.progress_label = "judge x"
    emb.encode(["one", "two"])
    off = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "off"), batch_size=1)
    off.encode([f"t{i}" for i in range(20)])
    assert capsys.readouterr().err == ""
