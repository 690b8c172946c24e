"""Score judges look scores up by content, never by idea id.

The same idea id can hold different texts in two datasets (an idea edited in one split only). Each
split must be scored on its own text, exactly as a run over that split alone would score it, and the
`idea_*_text` evidence of a row must be the digest of the text behind that row's score.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import orjson
import polars as pl
import pytest

from judge_items import TOY_DOCS
from novelty_audit.judges import Idea, PointItem
from novelty_audit.judges._retrieval import Retriever
from novelty_audit.judges._run import load_items
from novelty_audit.judges.distance import clear_memory_caches

DOCS = list(TOY_DOCS)

SHARED_ID = "i-shared"
CLOSE = "Message passing graph networks learn molecular property prediction for new molecules."
FAR = "We compose music from weather radar time series with cellular automata."
OTHER = "Robots explore kitchens and learn cooking skills from video demonstrations."


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps([{"key": k, "title": t, "abstract": a, "year": y} for k, t, a, y in DOCS]))
    return path


def pin_dataset(pin_dir: Path, name: str, shared_text: str) -> None:
    """A pinned split with one pair (shared idea vs. another) and both ideas as pointwise items."""
    d = pin_dir / name
    d.mkdir(parents=True)
    ideas = [
        {"idea_id": SHARED_ID, "title": "Shared idea", "text": shared_text, "text_digest": sha(shared_text), "area": "ml"},
        {"idea_id": "i-other", "title": "Other idea", "text": OTHER, "text_digest": sha(OTHER), "area": "ml"},
    ]
    pl.DataFrame(ideas).write_parquet(d / "ideas.parquet")
    pl.DataFrame([{"pair_id": "p-1", "idea_0": SHARED_ID, "idea_1": "i-other", "gold_idea_id": "i-other", "context": None}],
                 schema={"pair_id": pl.String, "idea_0": pl.String, "idea_1": pl.String, "gold_idea_id": pl.String,
                         "context": pl.String}).write_parquet(d / "pairs.parquet")
    pl.DataFrame([{"idea_id": SHARED_ID, "label": "POSITIVE"}, {"idea_id": "i-other", "label": "NEGATIVE"}]).write_parquet(d / "pointwise.parquet")


def run(build, corpus: Path, pin_dir: Path, datasets: list[str], backend: str = "distance-yin"):
    """A fresh judge (as in a new process) over the pinned splits, through the judge stage's item loader."""
    clear_memory_caches()
    judge = build(backend, corpus=str(corpus), embedder="tfidf", **({"k": 2} if backend == "distance-knn" else {}))
    pairs, points = load_items(pin_dir, datasets)
    return judge.judge(pairs, points)


def rows_of(out, dataset: str) -> tuple[list[dict], list[dict]]:
    return [r for r in out.pairwise if r["dataset"] == dataset], [r for r in out.pointwise if r["dataset"] == dataset]


@pytest.mark.parametrize("backend", ["distance-yin", "distance-knn"])
def test_one_idea_id_with_two_texts_gets_each_splits_own_score(build, tmp_path: Path, backend: str):
    corpus, pin = write_corpus(tmp_path), tmp_path / "pin"
    pin_dataset(pin, "split-a", CLOSE)
    pin_dataset(pin, "split-b", FAR)
    both = run(build, corpus, pin, ["split-a", "split-b"], backend)
    alone_a = run(build, corpus, pin, ["split-a"], backend)
    alone_b = run(build, corpus, pin, ["split-b"], backend)
    assert rows_of(both, "split-a") == (alone_a.pairwise, alone_a.pointwise)
    assert rows_of(both, "split-b") == (alone_b.pairwise, alone_b.pointwise)
    (a,), (b,) = rows_of(both, "split-a")[0], rows_of(both, "split-b")[0]
    assert a["score_0"] != b["score_0"] and a["score_0"] < b["score_0"]  # the far text is farther from prior work
    assert a["score_1"] == b["score_1"]  # the unchanged idea scores the same in both


def test_a_decisive_edit_in_one_split_changes_that_split_only(build, tmp_path: Path):
    corpus = write_corpus(tmp_path)
    before_pin, after_pin = tmp_path / "before", tmp_path / "after"
    pin_dataset(before_pin, "human-only", CLOSE)
    pin_dataset(before_pin, "human-plus-generated", CLOSE)
    pin_dataset(after_pin, "human-only", CLOSE)
    pin_dataset(after_pin, "human-plus-generated", FAR)  # edited in this split only
    datasets = ["human-only", "human-plus-generated"]
    before = run(build, corpus, before_pin, datasets)
    after = run(build, corpus, after_pin, datasets)
    assert rows_of(after, "human-only") == rows_of(before, "human-only")
    (old,), (new,) = rows_of(before, "human-plus-generated")[0], rows_of(after, "human-plus-generated")[0]
    assert (old["verdict"], new["verdict"]) == ("i-other", SHARED_ID)
    po, pn = orjson.loads(old["evidence_parts"]), orjson.loads(new["evidence_parts"])
    assert (po["idea_0_text"], pn["idea_0_text"]) == (sha(CLOSE), sha(FAR))
    assert po["idea_1_text"] == pn["idea_1_text"]


def test_the_text_evidence_of_a_row_is_the_text_behind_its_score(build, tmp_path: Path):
    corpus, pin = write_corpus(tmp_path), tmp_path / "pin"
    pin_dataset(pin, "split-a", CLOSE)
    pin_dataset(pin, "split-b", FAR)
    out = run(build, corpus, pin, ["split-a", "split-b"])
    texts = {sha(t): t for t in (CLOSE, FAR, OTHER)}
    single = build("distance-yin", "single", corpus=str(corpus), embedder="tfidf")

    def score_of(digest: str, title: str) -> float:
        one = Idea("i-probe", title, texts[digest], digest, "ml")
        return single.judge([], [PointItem("probe", one, "POSITIVE")]).pointwise[0]["score"]

    titles = {SHARED_ID: "Shared idea", "i-other": "Other idea"}
    for row in out.pairwise:
        parts = orjson.loads(row["evidence_parts"])
        assert row["score_0"] == score_of(parts["idea_0_text"], titles[row["idea_0"]])
        assert row["score_1"] == score_of(parts["idea_1_text"], titles[row["idea_1"]])
    shared = {"split-a": sha(CLOSE), "split-b": sha(FAR)}
    for row in out.pointwise:
        digest = shared[row["dataset"]] if row["idea_id"] == SHARED_ID else sha(OTHER)
        assert row["score"] == score_of(digest, titles[row["idea_id"]])
    by_split = {r["dataset"]: orjson.loads(r["evidence_parts"])["idea_0_text"] for r in out.pairwise}
    assert by_split == {"split-a": sha(CLOSE), "split-b": sha(FAR)}


def test_the_title_is_part_of_the_score_key_only_when_the_own_title_filter_reads_it(build, tmp_path: Path):
    corpus = write_corpus(tmp_path)
    text = "Efficient sparse attention lets transformers read long legal contracts."
    plain = Idea("i-1", "A method for contracts", text, sha(text), "ml")
    titled = Idea("i-2", "Sparse attention for long documents", text, sha(text), "ml")  # a corpus title
    points = [PointItem("toy", plain, "POSITIVE"), PointItem("toy", titled, "POSITIVE")]
    filtered = build("distance-yin", corpus=str(corpus), embedder="tfidf").judge([], points)
    s_plain, s_titled = (r["score"] for r in filtered.pointwise)
    assert s_titled > s_plain  # its own paper is not prior work for it
    unfiltered = build("distance-yin", "nofilter", corpus=str(corpus), embedder="tfidf", own_title=False, near_duplicate=None)
    assert unfiltered.score_key(plain) == unfiltered.score_key(titled)
    a, b = (r["score"] for r in unfiltered.judge([], points).pointwise)
    assert a == b


def test_retrieval_blocks_follow_the_idea_text_not_its_id(tmp_path: Path):
    corpus = write_corpus(tmp_path)
    retriever = Retriever(SimpleNamespace(corpus=str(corpus), k=1, max_chars=400, max_doc_chars=2000, max_turn_chars=20000))
    close = Idea(SHARED_ID, "Shared idea", CLOSE, sha(CLOSE), "ml")
    robots = Idea(SHARED_ID, "Shared idea", OTHER, sha(OTHER), "ml")
    first = retriever.block(close)
    assert "Graph neural networks for molecules" in first
    assert "Reinforcement learning for robots" in retriever.block(robots)
    assert retriever.block(close) == first
