"""Corpus records a judge cannot use (no abstract, a bad date) are counted by reason in the judge stage's
manifest summary and said in one line on stderr; a corpus without any adds nothing, and the records left out
never change a verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from mock_llm import MockLLM

pytestmark = pytest.mark.slow  # every test here runs stages: seconds each

TOPICS = ["graph networks for molecules", "protein folding with attention", "sparse attention for long documents",
          "reinforcement learning for robots", "retrieval augmented generation"]  # fmt: skip
GOOD = [{"id": f"d{i}-{t}", "title": f"{t.capitalize()} ({i})", "abstract": f"We study {t} in setting {i}.", "year": 2018 + i}
        for i in range(3) for t in TOPICS]  # fmt: skip
BAD = [
    {"id": "no-abstract-1", "title": "A title alone", "year": 2020},
    {"id": "no-abstract-2", "title": "Another title alone", "abstract": "", "year": 2021},
    {"id": "bad-date", "title": "Undated", "abstract": "Some abstract.", "date": "May 2020"},
]
EXPECTED = {"records": 3, "by_reason": {"abstract empty": 1, "abstract missing": 1, "date not an ISO date": 1}}
LINE = "judge: corpus data/prior-work/mini-corpus.json: 3 records left out (1 abstract empty, 1 abstract missing, 1 date not an ISO date)"


def write_corpus(project: Path, records: list[dict]) -> None:
    path = project / "data" / "prior-work" / "mini-corpus.json"  # under the judge stage's declared dep
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records), encoding="utf-8")


def set_judges(project: Path, judges: dict) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise", "pointwise"], "limit": 4, "progress": False, "judges": judges}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")


def run(name: str):
    from novelty_audit.pipeline import run_stage

    return run_stage(name)


DISTANCE = {
    "yin": {"backend": "distance-yin", "args": {"corpus": "data/prior-work/mini-corpus.json", "embedder": "tfidf"}},
    "knn": {"backend": "distance-knn", "args": {"corpus": "data/prior-work/mini-corpus.json", "embedder": "tfidf", "k": 2}},
}


def test_dropped_records_are_counted_in_the_manifest_and_said_once_and_change_no_verdict(project, capsys):
    run("pin")
    set_judges(project, DISTANCE)
    write_corpus(project, GOOD + BAD)
    capsys.readouterr()
    m = run("judge")
    assert m.summary["corpus_exclusions"] == {"data/prior-work/mini-corpus.json": {**EXPECTED, "judges": ["knn", "yin"]}}
    err = capsys.readouterr().err
    said = [ln for ln in err.splitlines() if "mini-corpus.json" in ln]
    assert len(said) == 1 and said[0].startswith(LINE), err  # one line for the corpus both judges read
    verdicts = (project / "artifacts/judge/verdicts.parquet").read_bytes()
    pointwise = (project / "artifacts/judge/pointwise.parquet").read_bytes()

    # The same usable records without the bad ones: the same corpus digest, so the same verdicts byte for byte;
    # the summary loses only its count, and nothing is said.
    write_corpus(project, GOOD)
    clean = run("judge")
    assert "corpus_exclusions" not in clean.summary and "left out" not in capsys.readouterr().err
    assert {k: v for k, v in m.summary.items() if k != "corpus_exclusions"} == clean.summary
    assert (project / "artifacts/judge/verdicts.parquet").read_bytes() == verdicts
    assert (project / "artifacts/judge/pointwise.parquet").read_bytes() == pointwise


def test_an_llm_judges_retrieval_corpus_is_counted_too_and_each_record_is_in_its_facts(project, monkeypatch, capsys):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-SECRET123")
    run("pin")
    write_corpus(project, GOOD + BAD)
    with MockLLM() as mock:
        set_judges(project, {"rag": {"backend": "openai", "args": {
            "model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY", "local": True, "votes": 1,
            "backoff_s": 0.001, "retrieval": {"corpus": "data/prior-work/mini-corpus.json", "k": 1}}}})  # fmt: skip
        capsys.readouterr()
        m = run("judge")
    assert m.summary["corpus_exclusions"] == {"data/prior-work/mini-corpus.json": {**EXPECTED, "judges": ["rag"]}}
    assert LINE in capsys.readouterr().err
    from novelty_audit.judges import JudgeParams, build_judges

    built = build_judges(JudgeParams.model_validate(yaml.safe_load((project / "params.yaml").read_text())["judge"]), store_root=project / "s")
    listed = built.judges[0].retriever.facts()["corpus_exclusions"]  # what the judge's run-log facts carry
    assert sorted((r["record"], r["field"], r["reason"]) for r in listed) == [
        ("record 15", "abstract", "missing"),
        ("record 16", "abstract", "empty after stripping HTML and whitespace"),
        ("record 17", "date", "not an ISO date (YYYY, YYYY-MM or YYYY-MM-DD): 'May 2020'"),
    ]
