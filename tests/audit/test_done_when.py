"""The evidence audit end to end, on a tiny corpus with a real TF-IDF Yin judge (the `dvc repro` version is run by hand):
a near-paraphrase of an idea the judge gets right enters the corpus → an `evidence` change naming that record's
title as decisive; adjudicated `incorrect`; a different paraphrase with another title → the same pair/verdict
change is `unadjudicated`; adjudicating a pair that does not exist exits 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson
import polars as pl
import pytest
from worlds import DocLedger, write_params

from novelty_audit.judges import PAIRWISE_SCHEMA, POINTWISE_SCHEMA, Idea, JudgeParams, PairItem, PointItem, build_judges
from novelty_audit.judges._base import judges_row

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judges"))
from judge_items import TOY_DOCS  # noqa: E402

CLOSE = Idea("i-close", "Message passing for molecules", "Message passing graph networks predict molecular properties.", "a" * 64)
FAR = Idea("i-far", "Music from weather", "We compose music from weather radar time series with cellular automata.", "b" * 64)
PAIRS = [PairItem("toy", "p-1", CLOSE, FAR, FAR.idea_id)]
POINTS = [PointItem("toy", FAR, "POSITIVE"), PointItem("toy", CLOSE, "NEGATIVE")]
PARAPHRASE_1 = ("n1", "Weather sonification", "We compose music from weather radar series using automata.", 2020)
PARAPHRASE_2 = ("n2", "Radar songs", "Composing music from radar weather time series with cellular automata rules.", 2021)


def _run(project: DocLedger, corpus: Path, extra: list[tuple]) -> str:
    """Judge with the corpus holding TOY_DOCS + extra (same path: only the evidence changes) and record the run."""
    corpus.write_text(json.dumps([{"key": k, "title": t, "abstract": a, "year": y} for k, t, a, y in [*TOY_DOCS, *extra]]))
    jp = JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False,
                                     "judges": {"yin-tfidf": {"backend": "distance-yin", "args": {"corpus": str(corpus), "embedder": "tfidf"}}}})
    judge = build_judges(jp, store_root=project.root / "cache").judges[0]
    out = judge.judge(PAIRS, POINTS)
    ideas = pl.DataFrame([{"dataset": "toy", "idea_id": i.idea_id, "title": i.title, "text": i.text} for i in (CLOSE, FAR)])
    tables = {"verdicts.parquet": pl.DataFrame(out.pairwise, schema=PAIRWISE_SCHEMA),
              "pointwise.parquet": pl.DataFrame(out.pointwise, schema=POINTWISE_SCHEMA),
              "judges.parquet": pl.DataFrame([judges_row(judge)])}
    return project.record_tables(ideas, tables, dataset="toy")


@pytest.fixture
def project(tmp_path, monkeypatch):
    write_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    return DocLedger(tmp_path)


def test_a_paraphrase_entering_the_corpus_is_decisive_and_a_decision_does_not_carry_over_to_another_paraphrase(project, run_main):
    corpus = project.root / "corpus.json"
    first = _run(project, corpus, [])
    _run(project, corpus, [PARAPHRASE_1])
    code, out, err = run_main("audit", "--json")
    assert code == 0, err
    audit = orjson.loads(out)
    change = next(c for c in audit["changes"] if c["kind"] == "pairwise")
    assert (change["pair"], change["cause"], change["status"]) == ("p-1", "evidence", "unadjudicated")
    assert (change["outcome_before"]["label"], change["outcome_before"]["correct"]) == ("Music from weather", True)
    assert (change["outcome_after"]["label"], change["outcome_after"]["correct"]) == ("Message passing for molecules", False)
    (decisive,) = change["evidence"]["decisive"]
    assert (decisive["title"], decisive["year"], decisive["slot"]) == ("Weather sonification", 2020, "idea_1")
    # Yin's score now rests on the paraphrase: it entered at rank 0 with its cosine.
    entered = next(d for d in change["evidence"]["docs"] if d["movement"] == "entered")
    assert entered["rank_after"] == 0 and 0.5 < entered["similarity_after"] < 0.95
    # The pointwise prediction of the same idea moved for the same reason, in the same group.
    point = next(c for c in audit["changes"] if c["kind"] == "pointwise" and c["pair"] == "i-far")
    assert point["group"] == change["group"] and point["evidence"]["decisive"][0]["title"] == "Weather sonification"
    # The other idea's prediction flipped only because the median threshold moved (i-far's score fell): no
    # document entered or left, its kept neighbour is shown as moved, and the threshold is what decides.
    other = next(c for c in audit["changes"] if c["kind"] == "pointwise" and c["pair"] == "i-close")
    assert [d["movement"] for d in other["evidence"]["docs"]] == ["moved"]
    (why,) = other["evidence"]["decisive"]
    assert why["kind"] == "threshold" and why["before"] > why["after"] and "other ideas' scores moved" in why["text"]
    assert other["group"] == change["group"]  # one cause: the record added to the corpus
    (group,) = audit["groups"]
    assert 'added "Weather sonification" (id n1)' in group["label"]

    code, _, err = run_main("adjudicate", "toy", "yin-tfidf", "p-1", "--from", "i-far", "--to", "i-close",
                            "--decision", "incorrect", "--who", "ana", "--reason", "a paraphrase of the idea is not prior work")
    assert code == 0, err

    _run(project, corpus, [PARAPHRASE_2])  # the record is replaced by another paraphrase with another title
    code, out, err = run_main("audit", "--json", "--from", first, "--pair", "p-1")
    assert code == 0, err
    (again,) = orjson.loads(out)["changes"]
    assert (again["before"], again["after"], again["cause"]) == ("i-far", "i-close", "evidence")
    assert again["status"] == "unadjudicated" and again["adjudication"] is None
    assert again["evidence"]["decisive"][0]["title"] == "Radar songs"

    adjudications = (project.root / "data/adjudications.csv").read_bytes()
    code, _, err = run_main("adjudicate", "toy", "yin-tfidf", "p-999", "--from", "i-far", "--to", "i-close",
                            "--decision", "incorrect", "--who", "ana", "--from-run", first)
    assert code == 2 and "pair 'p-999'" in err
    assert (project.root / "data/adjudications.csv").read_bytes() == adjudications  # nothing appended
