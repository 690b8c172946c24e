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
    ("distance-rnd", {"embedder": "tfidf", "k": 2, "neighbours": 3}, 2),
])
def test_distance_judges_list_the_neighbours_their_score_uses(tmp_path, backend, args, per_slot):
    out = _judge(tmp_path, backend, **args).judge([PairItem("toy", "p-1", CLOSE, FAR, FAR.idea_id)], [PointItem("toy", CLOSE, "NEGATIVE")])
    row = out.pairwise[0]
    docs = orjson.loads(row["evidence_docs"])
    assert [(d["slot"], d["rank"]) for d in docs] == [(s, r) for s in ("idea_0", "idea_1") for r in range(per_slot)]
    assert all(set(d) == set(EVIDENCE_DOC_KEYS) and d["source"] == "corpus" for d in docs)
    nearest = docs[0]
    assert (nearest["doc_id"], nearest["title"], nearest["year"]) == ("d1", "Graph neural networks for molecules", 2019)
    assert row["evidence_titles"][0] == nearest["title"]
    if backend == "distance-yin":
        assert nearest["similarity"] == pytest.approx(1 - row["score_0"], abs=1e-6)  # Yin = 1 − the nearest cosine
    # A readable view only: the evidence digest is still the digest of the parts.
    assert row["evidence_digest"] == evidence_digest(orjson.loads(row["evidence_parts"]))
    assert row["evidence_docs"] == evidence_docs_json(docs)  # canonical: sorted keys, (slot, rank) order
    point_docs = orjson.loads(out.pointwise[0]["evidence_docs"])
    assert [d["slot"] for d in point_docs] == ["idea"] * per_slot


def test_a_judge_that_uses_no_document_gives_an_empty_list(tmp_path):
    jp = JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False,
                                     "judges": {"first": {"backend": "always-first", "args": {}}}})
    judge = build_judges(jp, store_root=tmp_path / "store").judges[0]
    out = judge.judge([PairItem("toy", "p-1", CLOSE, FAR, FAR.idea_id)], [PointItem("toy", CLOSE, "NEGATIVE")])
    assert out.pairwise[0]["evidence_docs"] == "[]" and out.pointwise[0]["evidence_docs"] == "[]"


def test_an_entry_missing_a_key_is_refused():
    with pytest.raises(ValueError, match="lacks"):
        evidence_docs_json([{"slot": "idea_0", "rank": 0, "doc_id": "d1"}])
