"""The `evidence_docs` column (docs/design/tables.md): a readable list of the documents each verdict rests on.
Distance judges fill it with the neighbours their score uses; judges using no document give "[]"; it never
enters `evidence_digest`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson
import pytest

from novelty_audit.judges import Idea, JudgeParams, PairItem, PointItem, build_judges, evidence_digest
from novelty_audit.judges._base import EVIDENCE_DOC_KEYS, evidence_docs_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judges"))
from judge_items import TOY_DOCS  # noqa: E402

CLOSE = Idea("i-close", "Message passing for molecules", "Message passing graph networks predict molecular properties.", "a" * 64)
FAR = Idea("i-far", "Music from weather", "We compose music from weather radar time series with cellular automata.", "b" * 64)


def _judge(tmp_path: Path, backend: str, **args):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"key": k, "title": t, "abstract": a, "year": y} for k, t, a, y in TOY_DOCS]))
    jp = JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False,
                                     "judges": {"j": {"backend": backend, "args": {"corpus": str(corpus), **args}}}})
    return build_judges(jp, store_root=tmp_path / "store").judges[0]


@pytest.mark.parametrize(("backend", "args", "per_slot"), [
    ("distance-yin", {"embedder": "tfidf"}, 1),
    ("distance-knn", {"embedder": "tfidf", "k": 2}, 2),
    ("distance-rnd", {"embedder": "tfidf", "k": 2, "neighbours": 3}, 3),  # the 3 it is ranked among (≥ k)
])
def test_distance_judges_list_the_neighbours_their_score_uses(tmp_path, backend, args, per_slot):
    out = _judge(tmp_path, backend, **args).judge([PairItem("toy", "p-1", CLOSE, FAR, FAR.idea_id)], [PointItem("toy", CLOSE, "NEGATIVE")])
    row = out.pairwise[0]
    docs = orjson.loads(row["evidence_docs"])
    neighbours = [d for d in docs if "role" not in d]
    assert [(d["slot"], d["rank"]) for d in neighbours] == [(s, r) for s in ("idea_0", "idea_1") for r in range(per_slot)]
    assert all(set(EVIDENCE_DOC_KEYS) <= set(d) and d["source"] == "corpus" for d in neighbours)
    nearest = neighbours[0]
    assert (nearest["doc_id"], nearest["title"], nearest["year"]) == ("d1", "Graph neural networks for molecules", 2019)
    assert row["evidence_titles"][0] == nearest["title"]
    if backend == "distance-yin":
        assert nearest["similarity"] == pytest.approx(1 - row["score_0"], abs=1e-6)  # Yin = 1 − the nearest cosine
    # One `score` entry per slot: what else decides the score (corpus, its size, the embedder; RND: the idea's own
    # density, and each ranked neighbour's).
    scores = {d["slot"]: d for d in docs if d.get("role") == "score"}
    assert set(scores) == {"idea_0", "idea_1"} and scores["idea_0"]["score"] == row["score_0"]
    assert scores["idea_0"]["corpus_docs"] == len(TOY_DOCS) and scores["idea_0"]["embedder"].startswith("tfidf@")
    if backend == "distance-rnd":
        assert all(isinstance(d["density"], float) for d in neighbours) and isinstance(scores["idea_0"]["density"], float)
    # A readable view only: the evidence digest is still the digest of the parts.
    assert row["evidence_digest"] == evidence_digest(orjson.loads(row["evidence_parts"]))
    assert row["evidence_docs"] == evidence_docs_json(docs)  # canonical: sorted keys, (slot, rank) order
    point_docs = orjson.loads(out.pointwise[0]["evidence_docs"])
    assert [d["slot"] for d in point_docs if "role" not in d] == ["idea"] * per_slot


def test_leakage_drops_are_listed_per_idea_with_rule_and_cosine(tmp_path):
    copy = Idea("i-copy", "Graph neural networks for molecules", "A text of its own about sourdough bread and ovens.", "c" * 64)
    twin = Idea("i-twin", "Twin", "Graph neural networks for molecules. We learn molecular property prediction with message passing "
                "graph networks.", "d" * 64)  # d1's very text
    out = _judge(tmp_path, "distance-yin", embedder="tfidf").judge([PairItem("toy", "p-1", copy, twin, copy.idea_id)], [])
    docs = orjson.loads(out.pairwise[0]["evidence_docs"])
    dropped = {(d["slot"], d["doc_id"]): d for d in docs if d.get("role") == "dropped"}
    assert dropped[("idea_0", "d1")]["reason"] == "own-title"  # the idea's own title
    assert dropped[("idea_1", "d1")]["reason"] == "near-duplicate" and dropped[("idea_1", "d1")]["similarity"] >= 0.95
    assert all(d["title"] == "Graph neural networks for molecules" and d["digest"] for d in dropped.values())
    # Never a neighbour: the nearest admissible document of each idea is another one.
    assert all(d["doc_id"] != "d1" for d in docs if "role" not in d)


def test_a_median_threshold_is_recorded_and_moves_the_evidence_digest_not_the_score(tmp_path):
    judge = _judge(tmp_path, "distance-knn", embedder="tfidf", k=2)
    alone = judge.judge([], [PointItem("toy", CLOSE, "NEGATIVE"), PointItem("toy", FAR, "POSITIVE")])
    third = Idea("i-third", "Robots", "Robots learn locomotion with reinforcement learning.", "e" * 64)
    more = judge.judge([], [PointItem("toy", CLOSE, "NEGATIVE"), PointItem("toy", FAR, "POSITIVE"), PointItem("toy", third, "POSITIVE")])
    a, b = alone.pointwise[0], more.pointwise[0]
    assert a["idea_id"] == b["idea_id"] == "i-close" and a["score"] == b["score"]
    cut = lambda row: next(d for d in orjson.loads(row["evidence_docs"]) if d.get("role") == "score")  # noqa: E731
    assert (cut(a)["threshold_from"], cut(a)["threshold_of"], cut(b)["threshold_of"]) == ("median", 2, 3)
    assert cut(a)["threshold"] == pytest.approx((alone.pointwise[0]["score"] + alone.pointwise[1]["score"]) / 2)
    # The idea's own evidence held; only the cut it was judged against moved, and that is evidence.
    assert cut(a)["threshold"] != cut(b)["threshold"] and a["evidence_digest"] != b["evidence_digest"]
    fixed = _judge(tmp_path, "distance-knn", embedder="tfidf", k=2, threshold=0.5)
    f1 = fixed.judge([], [PointItem("toy", CLOSE, "NEGATIVE")]).pointwise[0]
    f2 = fixed.judge([], [PointItem("toy", CLOSE, "NEGATIVE"), PointItem("toy", third, "POSITIVE")]).pointwise[0]
    assert cut(f1)["threshold_from"] == "fixed" and f1["evidence_digest"] == f2["evidence_digest"]


def test_a_judge_that_uses_no_document_gives_an_empty_list(tmp_path):
    jp = JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False,
                                     "judges": {"first": {"backend": "always-first", "args": {}}}})
    judge = build_judges(jp, store_root=tmp_path / "store").judges[0]
    out = judge.judge([PairItem("toy", "p-1", CLOSE, FAR, FAR.idea_id)], [PointItem("toy", CLOSE, "NEGATIVE")])
    assert out.pairwise[0]["evidence_docs"] == "[]" and out.pointwise[0]["evidence_docs"] == "[]"


def test_an_entry_missing_a_key_is_refused():
    with pytest.raises(ValueError, match="lacks"):
        evidence_docs_json([{"slot": "idea_0", "rank": 0, "doc_id": "d1"}])
