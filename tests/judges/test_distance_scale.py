"""Neighbour search and RND densities in bounded memory: the blocked search finds the neighbours and drops
of the whole-matrix search, and densities computed for a few documents equal the all-documents ones."""

from __future__ import annotations

import numpy as np
import pytest

from novelty_audit.judges.distance import (
    _scores,
    corpus_densities,
    cosine_matrix,
    nearest,
    normalize_title,
)
from novelty_audit.judges.distance._scores import doc_densities, nearest_blocked


def _unit(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _setup():
    rng = np.random.default_rng(7)
    corpus = _unit(rng, 3000)
    corpus[10] = corpus[2020]  # a duplicate pair: a near-duplicate drop for the idea equal to it
    ideas = np.vstack([_unit(rng, 40), corpus[[2020, 77]]])
    doc_titles = [normalize_title(f"Paper {i % 700}") for i in range(3000)]  # repeated titles across blocks
    idea_titles = [normalize_title(f"Paper {i}") for i in range(42)]
    return corpus, ideas, doc_titles, idea_titles


def test_the_blocked_search_finds_the_neighbours_and_drops_of_the_whole_matrix_search():
    corpus, ideas, doc_titles, idea_titles = _setup()
    whole = nearest(cosine_matrix(ideas, corpus), 50, idea_titles=idea_titles, doc_titles=doc_titles)
    blocked = nearest_blocked(ideas, corpus, 50, idea_titles=idea_titles, doc_titles=doc_titles, block=512)
    assert blocked.index.tolist() == whole.index.tolist()
    # Cosines may differ in the last float32 bit (BLAS over another block shape); scores are rounded to 6 decimals.
    np.testing.assert_allclose(blocked.cosine, whole.cosine, rtol=0, atol=1e-6)
    assert [(d.idea, d.doc, d.reason) for d in blocked.drops] == [(d.idea, d.doc, d.reason) for d in whole.drops]
    assert {d.reason for d in whole.drops} == {"own-title", "near-duplicate"}


@pytest.mark.parametrize("seed_docs", [64, _scores.SEED_DOCS])
def test_the_blocked_search_keeps_the_whole_matrix_order_under_ties_and_sparse_first_blocks(seed_docs, monkeypatch):
    monkeypatch.setattr(_scores, "SEED_DOCS", seed_docs)  # 64: the seeding block is smaller than the others
    rng = np.random.default_rng(11)
    corpus = _unit(rng, 2000, dim=8)
    corpus[1500:1700] = corpus[100:300]  # exact copies in a later block: equal cosines, the earlier row must win
    ideas = np.vstack([_unit(rng, 30, dim=8), corpus[[5, 1600]]])
    # Idea 0's title is on most of the first block: it has fewer than m neighbours after that block.
    doc_titles = [normalize_title("Crowded") if i < 480 else normalize_title(f"Paper {i}") for i in range(2000)]
    idea_titles = [normalize_title("Crowded")] + [normalize_title(f"Idea {i}") for i in range(31)]
    for m in (1, 7, 40):
        whole = nearest(cosine_matrix(ideas, corpus), m, idea_titles=idea_titles, doc_titles=doc_titles, near_duplicate=0.9)
        blocked = nearest_blocked(ideas, corpus, m, idea_titles=idea_titles, doc_titles=doc_titles, near_duplicate=0.9, block=500)
        assert blocked.index.tolist() == whole.index.tolist(), m
        np.testing.assert_allclose(blocked.cosine, whole.cosine, rtol=0, atol=1e-6)
        assert [(d.idea, d.doc, d.reason) for d in blocked.drops] == [(d.idea, d.doc, d.reason) for d in whole.drops]
        # A copy is kept only beside its original (same cosine, lower row), never instead of it
        # (idea 0 excepted: its title removes the originals).
        for row in whole.index.tolist()[1:]:
            assert all(j - 1400 in row for j in row if 1500 <= j < 1700), (m, row)


def test_a_cosine_is_the_same_wherever_its_document_falls_in_the_product():
    """Identical corpus rows tie exactly, and a block of the corpus has the whole matrix's cosines: the float32
    GEMM of OpenBLAS on an AVX-512 EPYC rounded a cell by its place in the product, and broke both."""
    rng = np.random.default_rng(3)
    corpus = _unit(rng, 20_000, dim=384)
    corpus[15_000:17_000] = corpus[1_000:3_000]
    ideas = _unit(rng, 308, dim=384)
    whole = cosine_matrix(ideas, corpus)
    assert np.array_equal(whole[:, 1_000:3_000], whole[:, 15_000:17_000])
    assert np.array_equal(cosine_matrix(ideas, corpus[15_000:]), whole[:, 15_000:])
    assert np.array_equal(cosine_matrix(ideas[100:], corpus[:8_192]), whole[100:, :8_192])


def test_a_corpus_within_one_block_takes_the_whole_matrix_path_bit_for_bit():
    corpus, ideas, doc_titles, idea_titles = _setup()
    whole = nearest(cosine_matrix(ideas, corpus), 10, idea_titles=idea_titles, doc_titles=doc_titles)
    one = nearest_blocked(ideas, corpus, 10, idea_titles=idea_titles, doc_titles=doc_titles, block=3000)
    assert one.index.tolist() == whole.index.tolist() and np.array_equal(one.cosine, whole.cosine, equal_nan=True)
    assert one.drops == whole.drops


def test_densities_of_a_few_documents_equal_the_all_documents_densities():
    corpus, _, doc_titles, _ = _setup()
    everything = corpus_densities(corpus, 10, doc_titles=doc_titles)
    rows = np.array([0, 10, 2020, 511, 512, 2999])
    few = doc_densities(corpus, rows, 10, doc_titles=doc_titles, block=512, row_block=4)
    assert few.tolist() == everything[rows].tolist()


def test_rnd_on_a_corpus_above_the_full_density_limit_gives_the_same_rows_and_caches_by_content(build, tmp_path, monkeypatch):
    from test_distance import _items, _tiny_corpus

    from novelty_audit.judges.distance import _judge, clear_memory_caches

    corpus = str(_tiny_corpus(tmp_path))
    pairs, points, _ = _items()
    full = build("distance-rnd", corpus=corpus, embedder="tfidf", k=2, neighbours=3).judge(pairs, points)
    clear_memory_caches()
    monkeypatch.setattr(_judge, "FULL_DENSITY_DOCS", 0)  # every corpus counts as large: densities only where needed
    needed = build("distance-rnd", corpus=corpus, embedder="tfidf", k=2, neighbours=3).judge(pairs, points)
    assert needed.pairwise == full.pairwise and needed.pointwise == full.pointwise
    entries = list((tmp_path / "store" / "cache" / "distance" / "densities").rglob("*.rows.chk"))
    assert len(entries) == 1
    clear_memory_caches()  # a new process reads the rows' densities back and computes none
    monkeypatch.setattr(_judge, "doc_densities", lambda *a, **k: (_ for _ in ()).throw(AssertionError("recomputed")))
    again = build("distance-rnd", corpus=corpus, embedder="tfidf", k=2, neighbours=3).judge(pairs, points)
    assert again.pairwise == full.pairwise
