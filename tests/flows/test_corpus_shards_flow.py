"""Corpus embedding inside the evaluate flow: missing shards run as `embed-shard` tasks on the flow's task
runner, and the judge's tables equal the plain stage's."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from novelty_audit.pipeline import run_stage

pytestmark = pytest.mark.slow

TOPICS = ["graph neural networks", "protein folding", "sourdough fermentation", "sparse attention", "reinforcement learning",
          "climate models", "speech recognition", "compiler optimization"]  # fmt: skip
ASPECTS = ["for molecules", "with few labels", "at scale", "under noise", "on edge devices", "with theory"]


def _tiny_corpus_project(project: Path) -> None:
    """The project's corpus replaced by 48 abstracts, and one MiniLM RND judge beside the controls."""
    corpus = project / "data" / "prior-work"
    for f in corpus.iterdir():
        f.unlink()
    docs = [{"id": f"d{i}", "title": f"{t} {a}", "abstract": f"A study of {t} {a}.", "year": 2020}
            for i, (t, a) in enumerate((t, a) for t in TOPICS for a in ASPECTS)]  # fmt: skip
    (corpus / "corpus.json").write_text(json.dumps(docs))
    raw = yaml.safe_load((project / "params.yaml").read_text())
    judges = {k: v for k, v in raw["judge"]["judges"].items() if v.get("backend") in ("always-first", "random")}
    judges["rnd-minilm"] = {"backend": "distance-rnd", "args": {"corpus": "data/prior-work", "k": 3, "neighbours": 8}}
    raw["judge"].update(judges=judges, tasks=["pairwise"], progress=True)
    raw["flows"] = {**(raw.get("flows") or {}), "task_runner": "dask", "max_workers": 2, "dask_processes": False}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def test_missing_corpus_shards_fan_out_and_the_tables_equal_the_plain_stage(prefect_api, make_project, monkeypatch):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("prefect_dask")
    from flows.evaluate import evaluate
    from novelty_audit.judges.distance import EmbeddingCache, _shards, clear_memory_caches

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(_shards, "SHARD_TEXTS", 8)  # several shards from 48 texts (thread workers share the patch)
    plain, fanned = make_project("plain"), make_project("fanned")
    for project in (plain, fanned):
        _tiny_corpus_project(project)
    with contextlib.chdir(plain):
        run_stage("pin")
        run_stage("judge")
    clear_memory_caches()
    import threading
    from collections import Counter

    import flows._fanout as fanout
    from novelty_audit.judges.distance import SentenceTransformerEmbedder

    # What was computed, not where or when: the shard jobs the flow's embed-shard tasks ran, and every text
    # encoded (from any thread; a lock, since task threads append at once).
    lock = threading.Lock()
    jobs, encoded = [], Counter()
    real_task_body, real_encode = fanout.embed_shard, SentenceTransformerEmbedder._encode_uncached

    def task_body(job):
        with lock:
            jobs.append(job)
        return real_task_body(job)

    def recorded(self, texts):
        with lock:
            encoded.update(texts)
        return real_encode(self, texts)

    monkeypatch.setattr(fanout, "embed_shard", task_body)
    monkeypatch.setattr(SentenceTransformerEmbedder, "_encode_uncached", recorded)
    def shards(project: Path) -> set[Path]:
        return set((project / ".novelty-audit" / "cache" / "embeddings").rglob("corpus/*.shard.chk"))

    before = shards(fanned)  # the project copy may bring other corpora's shards along
    summary = evaluate(project_dir=str(fanned), stages=["pin", "judge"], dvc_commit=False)
    assert summary.totals()["failed"] == 0
    stored = shards(fanned) - before
    # Every missing shard ran as one embed-shard task, once: the same shards the plain stage stored, each file
    # holding the shard its task was given, and no corpus text encoded twice.
    assert len(jobs) > 2, jobs
    assert len({j.shard.digests for j in jobs}) == len(jobs), "a shard was computed twice"
    assert {p.name for p in stored} == {p.name for p in shards(plain)} - {p.name for p in before}
    assert {EmbeddingCache(j.cache_root).shard_path(j.model_id, j.shard.digests) for j in jobs} == stored
    corpus_texts = [t for j in jobs for t in j.texts]
    assert all(encoded[t] == 1 for t in corpus_texts), {t: encoded[t] for t in corpus_texts if encoded[t] != 1}
    for name in ("verdicts", "pointwise", "judges"):
        a = pl.read_parquet(plain / "artifacts" / "judge" / f"{name}.parquet")
        b = pl.read_parquet(fanned / "artifacts" / "judge" / f"{name}.parquet")
        assert b.equals(a), name
