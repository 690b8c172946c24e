"""Distance judges: Yin, kNN density and RND on hand-made vectors, the leakage filter, the embedding
cache, a TF-IDF judge end to end, and the real MiniLM model (slow)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import orjson
import polars as pl
import pytest

from judge_items import TOY_DOCS
from novelty_audit.errors import BadInputError, MissingDependencyError
from novelty_audit.judges import TIE, Idea, PairItem, PointItem
from novelty_audit.judges.distance import (
    DECIMALS,
    EmbeddingCache,
    Neighbours,
    SentenceTransformerEmbedder,
    after_cutoff,
    clear_memory_caches,
    corpus_densities,
    cosine_matrix,
    knn_scores,
    nearest,
    resolve_model_dir,
    rnd_scores,
    yin_scores,
)


def unit(*degrees: float) -> np.ndarray:
    """2-d unit vectors at the given angles: cos(a, b) = cos(angle difference)."""
    r = np.radians(degrees)
    return np.stack([np.cos(r), np.sin(r)], axis=1)


def cosd(deg: float) -> float:
    return math.cos(math.radians(deg))


# -- scores on hand-made vectors --------------------------------------------------------------------


def test_yin_is_one_minus_the_nearest_cosine():
    sims = cosine_matrix(unit(0, 90), unit(10, 40, 90, 180))
    nb = nearest(sims, 4, near_duplicate=None)
    assert nb.index.tolist() == [[0, 1, 2, 3], [2, 1, 0, 3]]
    assert yin_scores(nb).tolist() == [round(1 - cosd(10), DECIMALS), 0.0]


def test_knn_density_is_the_mean_distance_to_the_k_nearest():
    nb = nearest(cosine_matrix(unit(0), unit(10, 40, 90, 180)), 4, near_duplicate=None)
    assert knn_scores(nb, 2)[0] == round(((1 - cosd(10)) + (1 - cosd(40))) / 2, DECIMALS)
    # k beyond the admissible documents averages what is there.
    assert knn_scores(nb, 10)[0] == round(sum(1 - cosd(a) for a in (10, 40, 90, 180)) / 4, DECIMALS)


def test_corpus_densities_exclude_each_document_itself():
    # Documents at 0, 10, 40 degrees; k=1: nearest other document.
    dens = corpus_densities(unit(0, 10, 40), 1, near_duplicate=None)
    assert dens.tolist() == [round(1 - cosd(10), DECIMALS), round(1 - cosd(10), DECIMALS), round(1 - cosd(30), DECIMALS)]
    # Blocked computation gives the same numbers as one block.
    assert corpus_densities(unit(0, 10, 40), 1, near_duplicate=None, block_cells=3).tolist() == dens.tolist()


def test_rnd_is_the_mid_rank_percentile_among_the_neighbours_densities():
    doc_density = np.array([0.2, 0.5, 0.7, 0.9, 0.1])
    nb = Neighbours(np.array([[0, 1, 2, 3], [4, 0, -1, -1]]), np.zeros((2, 4)), [])
    got = rnd_scores(np.array([0.5, 0.3]), nb, doc_density)
    # idea 0: one neighbour below (0.2), one equal (0.5) → (1 + ½) / 4; idea 1: both below → 1.
    assert got.tolist() == [0.375, 1.0]


def test_rnd_on_vectors_ranks_the_idea_among_its_neighbours():
    corpus = unit(0, 5, 10, 15, 90, 135)
    dens = corpus_densities(corpus, 2, near_duplicate=None)
    ideas = unit(7, 60)
    nb = nearest(cosine_matrix(ideas, corpus), 4, near_duplicate=None)
    rnd = rnd_scores(knn_scores(nb, 2), nb, dens)
    # At 7°, inside the tight cluster, the idea is denser than its four neighbours (0, 5, 10, 15°).
    # At 60°, its density (30° and 45° away) is sparser than those of 15, 10 and 5°, but not of 90°
    # (whose two nearest lie 45° and 75° away): 3 of 4.
    assert rnd.tolist() == [0.0, 0.75]


def test_equal_scores_after_rounding_tie():
    sims = np.array([[0.5 + 1e-12, 0.1], [0.5, 0.1]])
    s = yin_scores(nearest(sims, 1, near_duplicate=None))
    assert s[0] == s[1]


# -- leakage filter ---------------------------------------------------------------------------------


def test_leakage_filter_drops_own_title_and_near_duplicates_and_logs_each():
    sims = cosine_matrix(unit(0, 60), unit(0, 2, 30, 60))  # doc 0: the same vector; doc 1: cos(2°) ≥ 0.95
    nb = nearest(sims, 4, idea_titles=["alpha", "beta"], doc_titles=["x", "y", "alpha", "z"], near_duplicate=0.95)
    drops = [(d.idea, d.doc, d.reason) for d in nb.drops]
    assert drops == [(0, 0, "near-duplicate"), (0, 1, "near-duplicate"), (0, 2, "own-title"), (1, 3, "near-duplicate")]
    assert nb.index[0].tolist() == [3, -1, -1, -1]  # only the document at 60° is left for idea 0
    assert yin_scores(nb)[0] == round(1 - cosd(60), DECIMALS)
    assert all(d.cosine is not None for d in nb.drops)


def test_an_idea_with_no_admissible_document_has_no_score():
    nb = nearest(cosine_matrix(unit(0), unit(0)), 3, near_duplicate=0.95)
    assert math.isnan(yin_scores(nb)[0]) and math.isnan(knn_scores(nb, 2)[0])


def test_cutoff_removes_documents_known_to_be_later():
    years = [2023, 2024, 2025, 2025, 2025]
    dates = [None, None, None, "2025-09", "2025-10-02"]
    assert after_cutoff(years, dates, "2024").tolist() == [False, False, True, True, True]
    assert after_cutoff(years, dates, "2025-09").tolist() == [False, False, False, False, True]
    assert after_cutoff(years, dates, None).tolist() == [False] * 5


# -- embedding cache --------------------------------------------------------------------------------


class _CountingModel:
    """Stands in for a SentenceTransformer: deterministic vectors, counts every encode call."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, texts, **kw):
        self.calls.append(list(texts))
        v = np.array([[len(t), t.count("a") + 1.0, 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def _minilm_without_torch(tmp_path: Path, monkeypatch) -> tuple[SentenceTransformerEmbedder, _CountingModel]:
    emb = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path / "emb"))
    model = _CountingModel()
    monkeypatch.setattr(emb, "_load", lambda: model)
    return emb, model


def test_the_second_encode_of_the_same_texts_hits_the_cache(tmp_path: Path, monkeypatch):
    emb, model = _minilm_without_torch(tmp_path, monkeypatch)
    first = emb.encode(["alpha", "beta", "alpha"])
    assert len(model.calls) == 1 and sorted(model.calls[0]) == ["alpha", "beta"]  # duplicates encoded once
    again = emb.encode(["beta", "alpha"])
    assert len(model.calls) == 1
    np.testing.assert_array_equal(again, first[[1, 0]])
    # A new process (new cache object, same directory) reads the shards from disk.
    emb2, model2 = _minilm_without_torch(tmp_path, monkeypatch)
    np.testing.assert_array_equal(emb2.encode(["alpha", "beta"]), first[:2])
    assert model2.calls == []
    emb2.encode(["alpha", "gamma"])
    assert model2.calls == [["gamma"]]


def test_vectors_are_cached_per_model(tmp_path: Path):
    cache = EmbeddingCache(tmp_path)
    cache.put("model-a@1", ["d1"], np.ones((1, 3), np.float32))
    assert set(cache.get("model-a@1", ["d1", "d2"])) == {"d1"}
    assert cache.get("model-b@1", ["d1"]) == {}
    assert not list(tmp_path.rglob("*.tmp"))


def test_the_packaged_model_id_names_the_weights(tmp_path: Path):
    name, path = resolve_model_dir("minilm")
    assert name == "sentence-transformers/all-MiniLM-L6-v2" and (path / "model.safetensors").exists()
    emb = SentenceTransformerEmbedder("minilm")
    assert emb.model_id.startswith("sentence-transformers/all-MiniLM-L6-v2@") and len(emb.model_id.split("@")[1]) == 16


def test_a_hub_name_resolves_offline_to_a_local_snapshot(monkeypatch, tmp_path: Path):
    hub = pytest.importorskip("huggingface_hub")
    seen = {}

    def fake_snapshot(repo_id, revision=None, local_files_only=False):
        seen.update(repo_id=repo_id, revision=revision, local_files_only=local_files_only)
        return str(resolve_model_dir("minilm")[1])

    monkeypatch.setattr(hub, "snapshot_download", fake_snapshot)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    name, path = resolve_model_dir("BAAI/bge-m3", revision="abc123")
    assert name == "BAAI/bge-m3" and (path / "modules.json").exists()
    assert seen == {"repo_id": "BAAI/bge-m3", "revision": "abc123", "local_files_only": True}


def test_an_unknown_model_name_fails_with_a_hint():
    with pytest.raises(BadInputError, match="not a known alias"):
        resolve_model_dir("no-such-model")


def test_a_missing_embed_extra_names_the_extra(build, monkeypatch, tmp_path: Path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sentence_transformers" else real(name, *a))
    corpus = _tiny_corpus(tmp_path)
    with pytest.raises(MissingDependencyError) as err:
        build("distance-yin", corpus=str(corpus))
    assert "embed" in err.value.hint


# -- a TF-IDF judge end to end ----------------------------------------------------------------------

_DOCS = [*TOY_DOCS, ("d6", "Future work on molecule graphs", "Graph networks predict molecular properties with message passing.", 2030)]


def _tiny_corpus(tmp_path: Path, docs=_DOCS, name: str = "corpus.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps([{"key": k, "title": t, "abstract": f"<p>{a}</p>", "year": y} for k, t, a, y in docs]))
    return path


def _idea(n: int, title: str, text: str) -> Idea:
    return Idea(f"i-{n:016x}", title, text, f"{n:064x}", "area")


def _items():
    close = _idea(1, "Message passing for molecules", "Message passing graph networks predict molecular properties.")
    far = _idea(2, "Music from weather", "We compose music from weather radar time series with cellular automata.")
    twin = _idea(3, "Sparse attention for long documents", "A method to read very long legal contracts quickly.")
    pairs = [PairItem("toy", "p-1", close, far, far.idea_id), PairItem("toy", "p-2", twin, twin, twin.idea_id)]
    points = [PointItem("toy", close, "NEGATIVE"), PointItem("toy", far, "POSITIVE")]
    return pairs, points, (close, far, twin)


@pytest.mark.parametrize("backend", ["distance-yin", "distance-knn", "distance-rnd"])
def test_a_tfidf_judge_prefers_the_idea_far_from_prior_work(build, tmp_path: Path, backend: str):
    corpus = _tiny_corpus(tmp_path)
    extra = {"k": 2} if backend != "distance-yin" else {}
    if backend == "distance-rnd":
        extra["neighbours"] = 3
    judge = build(backend, corpus=str(corpus), embedder="tfidf", cutoff="2025", evidence_n=2, **extra)
    pairs, points, (close, far, twin) = _items()
    out = judge.judge(pairs, points)
    row = out.pairwise[0]
    if backend != "distance-rnd":
        assert row["verdict"] == far.idea_id and row["score_1"] > row["score_0"]
        assert row["evidence_titles"][0] == "Graph neural networks for molecules"
    assert out.pairwise[1]["verdict"] == TIE  # the same idea on both sides
    assert len(row["evidence_titles"]) == 4  # two per idea
    assert "Future work on molecule graphs" not in row["evidence_titles"]  # after the cutoff
    parts = orjson.loads(row["evidence_parts"])
    assert {"idea_0_corpus", "idea_0_embedder", "idea_0_leakage", "idea_0_neighbours", "idea_1_corpus"} <= set(parts)
    if backend != "distance-rnd":
        assert [p["predicted"] for p in out.pointwise] == ["NEGATIVE", "POSITIVE"]  # median threshold
    assert out.facts["after_cutoff_dropped"] == 1
    cfg = judge.config()
    assert cfg["backend"] == backend and cfg["embedder"] == "tfidf" and cfg["cutoff"] == "2025"


def test_leakage_drops_are_returned_as_data_and_counted(build, tmp_path: Path):
    judge = build("distance-knn", corpus=str(_tiny_corpus(tmp_path)), embedder="tfidf", k=2)
    pairs, points, (close, far, twin) = _items()
    out = judge.judge(pairs, points)
    drops = judge.leakage_table()
    own = drops.filter(pl.col("reason") == "own-title")
    assert own["idea_id"].unique().to_list() == [twin.idea_id] and own["doc_id"].unique().to_list() == ["d3"]
    assert out.facts["leakage_drops_by_reason"]["own-title"] == 1  # one idea × one document, whatever the pair count
    assert len(out.facts["leakage_drops"]) == drops.height
    assert "Sparse attention for long documents" not in out.pairwise[1]["evidence_titles"]


def test_changing_the_corpus_changes_evidence_not_config(build, tmp_path: Path):
    pairs, points, _ = _items()
    corpus = _tiny_corpus(tmp_path)
    before = build("distance-yin", corpus=str(corpus), embedder="tfidf")
    a = before.judge(pairs, points)
    _tiny_corpus(tmp_path, [d if d[0] != "d4" else ("d4", "Robots", "Legged robots walk.", 2018) for d in _DOCS])
    after = build("distance-yin", corpus=str(corpus), embedder="tfidf")
    b = after.judge(pairs, points)
    assert before.config_digest == after.config_digest
    assert a.pairwise[0]["evidence_digest"] != b.pairwise[0]["evidence_digest"]
    pa, pb = orjson.loads(a.pairwise[0]["evidence_parts"]), orjson.loads(b.pairwise[0]["evidence_parts"])
    assert pa["idea_0_corpus"] != pb["idea_0_corpus"] and pa["idea_0_text"] == pb["idea_0_text"]


def test_a_judge_rerun_gives_identical_rows_from_its_disk_caches(build, tmp_path: Path):
    corpus = str(_tiny_corpus(tmp_path))
    pairs, points, _ = _items()
    first = build("distance-rnd", corpus=corpus, embedder="tfidf", k=2, neighbours=3)
    one = first.judge(pairs, points)
    assert first.embedder.fitted == 1
    clear_memory_caches()  # as in a new process: only the store's caches remain
    second = build("distance-rnd", corpus=corpus, embedder="tfidf", k=2, neighbours=3)
    two = second.judge(pairs, points)
    assert second.embedder.fitted == 0  # vocabulary, idf and corpus matrix came from the cache
    assert list((tmp_path / "store" / "cache" / "distance" / "densities").glob("*.npy.chk"))
    assert one.pairwise == two.pairwise and one.pointwise == two.pointwise


def test_misspelled_args_fail_naming_the_judge(build, tmp_path: Path):
    from novelty_audit.errors import ConfigError

    with pytest.raises(ConfigError, match="judge.judges.j.args"):
        build("distance-knn", corpus=str(_tiny_corpus(tmp_path)), embedder="tfidf", kk=3)
    with pytest.raises(ConfigError, match="cutoff"):
        build("distance-yin", corpus=str(_tiny_corpus(tmp_path)), embedder="tfidf", cutoff="last year")


# -- the real MiniLM model --------------------------------------------------------------------------


@pytest.mark.slow
def test_minilm_offline_embeds_normalized_and_caches(tmp_path: Path, monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    texts = [
        "Graph neural networks predict molecular properties.",
        "Message passing networks for chemistry and molecules.",
        "A recipe for sourdough bread with a long fermentation.",
        "Transformers with sparse attention read long documents.",
    ]
    emb = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path))
    v = emb.encode(texts)
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = cosine_matrix(v, v)
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[0, 3]
    assert emb.texts_encoded == 4
    again = SentenceTransformerEmbedder("minilm", cache=EmbeddingCache(tmp_path))
    np.testing.assert_array_equal(again.encode(texts[::-1]), v[::-1])
    assert again.texts_encoded == 0 and again._model is None  # never even loaded
