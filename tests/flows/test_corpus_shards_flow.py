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
    # One split: the judge embeds each idea text once per project, and only the corpus's shards are under test.
    raw["judge"].update(judges=judges, datasets=["human-only"], probe_datasets=[], tasks=["pairwise"], progress=True)
    raw["flows"] = {**(raw.get("flows") or {}), "task_runner": "dask", "max_workers": 2, "dask_processes": False}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def test_missing_corpus_shards_fan_out_and_the_tables_equal_the_plain_stage(prefect_api, make_tiny_project_copy, monkeypatch, caplog):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("prefect_dask")
    from flows.evaluate import evaluate
    from novelty_audit.judges.distance import EmbeddingCache, _shards, clear_memory_caches

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(_shards, "SHARD_TEXTS", 8)  # several shards from 48 texts (thread workers share the patch)
    # Small copies: the judge embeds every idea text once per project; the shards are the corpus's, not the ideas'.
    plain, fanned = make_tiny_project_copy("plain"), make_tiny_project_copy("fanned")
    for project in (plain, fanned):
        _tiny_corpus_project(project)
    with contextlib.chdir(plain):
        run_stage("pin")
        run_stage("judge")
    clear_memory_caches()
    import logging
    import re
    import threading
    from collections import Counter

    from novelty_audit.judges.distance import SentenceTransformerEmbedder, text_digest

    # What was computed, not where or when: every shard stored and every text encoded, from any thread (patched
    # on the classes: Dask pickles a task's function by value, so a patched module global would not reach it),
    # and what each embed-shard task reported in its run log.
    lock = threading.Lock()
    stored_shards: list[tuple[str, ...]] = []
    encoded: Counter[str] = Counter()
    real_put, real_encode = EmbeddingCache.put_shard, SentenceTransformerEmbedder._encode_uncached

    def put_shard(self, model_id, digests, vectors, **kw):
        with lock:
            stored_shards.append(tuple(sorted(digests)))
        return real_put(self, model_id, digests, vectors, **kw)

    def recorded(self, texts, **kw):
        with lock:
            encoded.update(text_digest(t) for t in texts)
        return real_encode(self, texts, **kw)

    monkeypatch.setattr(EmbeddingCache, "put_shard", put_shard)
    monkeypatch.setattr(SentenceTransformerEmbedder, "_encode_uncached", recorded)

    def shards(project: Path) -> set[Path]:
        return set((project / ".novelty-audit" / "cache" / "embeddings").rglob("corpus/*.shard.chk"))

    before = shards(fanned)  # the project copy may bring other corpora's shards along
    task_log = logging.getLogger("prefect.task_runs")  # Prefect's run loggers do not propagate to root
    task_log.addHandler(caplog.handler)
    try:
        summary = evaluate(project_dir=str(fanned), stages=["pin", "judge"], dvc_commit=False)
    finally:
        task_log.removeHandler(caplog.handler)
    assert summary.totals()["failed"] == 0
    stored = shards(fanned) - before
    # Every missing shard was computed once, by an embed-shard task, and they are the shards the plain stage stored;
    # no corpus text was encoded twice.
    assert len(stored) > 2 and len(stored_shards) == len(set(stored_shards)) == len(stored), stored_shards
    assert {p.name for p in stored} == {p.name for p in shards(plain)} - {p.name for p in before}
    # One record per log call: where Prefect's run loggers do propagate (after another test in this process
    # reconfigured logging), caplog's root handler receives each record a second time.
    records = {id(r): r for r in caplog.records}.values()
    tasks = [re.fullmatch(r"embedding shard (\d+): (\d+) texts stored", r.getMessage()) for r in records]
    tasks = sorted((int(m[1]), int(m[2])) for m in tasks if m)
    assert len({i for i, _ in tasks}) == len(tasks) == len(stored), tasks
    assert sum(n for _, n in tasks) == sum(len(d) for d in stored_shards)
    assert all(encoded[d] == 1 for shard in stored_shards for d in shard), encoded
    for name in ("verdicts", "pointwise", "judges"):
        a = pl.read_parquet(plain / "artifacts" / "judge" / f"{name}.parquet")
        b = pl.read_parquet(fanned / "artifacts" / "judge" / f"{name}.parquet")
        assert b.equals(a), name
