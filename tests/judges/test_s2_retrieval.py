"""Semantic Scholar search as evidence, against a scripted mock of the Graph API on 127.0.0.1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml
from judge_items import idea, make_pairs
from mock_llm import MockLLM
from mock_s2 import paper

from novelty_audit.errors import ConfigError
from novelty_audit.judges._s2 import RetrievalError, S2Args, S2Retriever

KEY = "sk-test-SECRET123"
S2_KEY = "s2-test-KEY-987"

def benchmark_only(raw: dict) -> dict:
    """Pin only the benchmark splits the `project` fixture copies (other sources need their own data)."""
    raw["pin"]["datasets"] = {k: v for k, v in raw["pin"]["datasets"].items() if str(v.get("path", "")).startswith("data/novelty-judge-bench/")}
    return raw


def retriever(s2, tmp_path, **kw) -> S2Retriever:
    args = S2Args.model_validate({"source": "semantic-scholar", "base_url": s2.base_url, "backoff_s": 0.001, "requests_per_second": 1000, **kw})
    return S2Retriever(args, tmp_path / "cache")


def test_shows_k_papers_without_the_ideas_own_paper_or_papers_after_the_cutoff(s2, tmp_path):
    me = idea(1)
    s2.script(me.title, [
        paper("own", me.title.upper() + "!", 2025),                     # the idea's own paper: normalized title matches
        paper("late", "A later paper", 2025, date="2025-10-01"),       # after the cutoff
        paper("ok1", "Earlier paper one", 2019),
        paper("nodate", "Paper without a date", None),                 # no year, no date: cannot be shown to predate
        paper("ok2", "Earlier paper two", 2024, date="2024-05-02"),
        paper("ok3", "Earlier paper three", 2021),
    ])  # fmt: skip
    r = retriever(s2, tmp_path, k=2, cutoff="2025-09-19")
    docs = r.docs(me)
    assert [d["doc_id"] for d in docs] == ["ok1", "ok2"]
    assert r.block(me) == "- Earlier paper one (2019): Abstract of Earlier paper one.\n- Earlier paper two (2024): Abstract of Earlier paper two."
    (req,) = s2.requests
    assert req.params["query"] == me.title and req.params["publicationDateOrYear"] == ":2025-09-19"
    assert req.params["fields"] == "paperId,title,abstract,year,publicationDate"
    assert r.facts()["dropped_own_paper"] == 1


def test_responses_are_cached_by_content_and_a_second_process_sends_no_request(s2, tmp_path):
    ideas = [idea(n) for n in range(3)]
    first = [retriever(s2, tmp_path).block(i) for i in ideas]
    assert s2.count == 3
    again = retriever(s2, tmp_path)
    assert [again.block(i) for i in ideas] == first and s2.count == 3
    assert again.facts()["cache_hits"] == 3
    other_host = retriever(s2, tmp_path, limit=5)  # other parameters: another cache entry
    other_host.block(ideas[0])
    assert s2.count == 4


def test_a_damaged_cache_entry_is_moved_aside_and_queried_again(s2, tmp_path, caplog):
    me = idea(2)
    block = retriever(s2, tmp_path).block(me)
    (entry,) = [p for p in (tmp_path / "cache/s2").glob("??/*.json")]
    entry.write_bytes(entry.read_bytes().replace(b"Earlier work 0", b"Earlier work X"))
    assert retriever(s2, tmp_path).block(me) == block
    assert s2.count == 2 and len(list((tmp_path / "cache/s2/corrupt").glob("*.json"))) == 1


def test_429_and_5xx_are_retried_with_retry_after_and_a_dead_search_stops_with_a_clear_error(s2, tmp_path):
    s2.add_fault("Title 1", "429", times=2, retry_after=0.01)
    s2.add_fault("Title 2", "503", times=1)
    s2.add_fault("Title 3", "malformed", times=1)
    r = retriever(s2, tmp_path)
    for n in (1, 2, 3):
        assert r.docs(idea(n))
    assert r.facts()["retries"] == 4 and s2.count == 7
    s2.add_fault("Title 4", "500")
    with pytest.raises(RetrievalError, match=r"failed after 3 attempts \(HTTP 500\)"):
        retriever(s2, tmp_path, max_retries=2).docs(idea(4))
    s2.add_fault("Title 5", "403")
    with pytest.raises(ConfigError, match="refused the request"):
        retriever(s2, tmp_path).docs(idea(5))


def test_the_api_key_comes_from_the_environment_and_is_never_stored(s2, tmp_path, monkeypatch):
    retriever(s2, tmp_path).docs(idea(1))
    assert "x-api-key" not in s2.requests[-1].headers  # optional: no key, no header
    monkeypatch.setenv("S2_API_KEY", S2_KEY)
    retriever(s2, tmp_path, limit=7).docs(idea(1))
    assert s2.requests[-1].headers["x-api-key"] == S2_KEY
    for p in (tmp_path / "cache").rglob("*"):
        assert not p.is_file() or S2_KEY.encode() not in p.read_bytes()


def test_refresh_re_queries_and_keeps_the_replaced_response(s2, tmp_path):
    me = idea(3)
    before = retriever(s2, tmp_path).docs(me)
    s2.script(me.title, [paper("new", "A paper that appeared since", 2023)])
    assert retriever(s2, tmp_path).docs(me) == before  # cached: the drift is not seen
    after = retriever(s2, tmp_path, refresh=True).docs(me)
    assert [d["title"] for d in after] == ["A paper that appeared since"]
    assert len(list((tmp_path / "cache/s2/history").glob("*.json"))) == 1
    assert retriever(s2, tmp_path).docs(me) == after  # the refreshed answer is the cached one now


def test_a_10_mb_search_answer_puts_at_most_the_bound_into_the_prompt_and_counts_the_cut(s2, tmp_path):
    me = idea(1)
    huge = "w" * 10_000_000  # one "word"
    s2.script(me.title, [paper("big", huge, 2019), paper("small", "A short title", 2018)])
    r = retriever(s2, tmp_path, k=2, max_doc_chars=500, max_turn_chars=2000)
    (block,) = r.blocks((me,))
    assert len(block) < 1000 + 500  # one bounded paper, the short one, the quoting notice and markers
    assert "A short title" in block and block.startswith("Quoted material follows: related papers")
    docs = r.evidence_docs((me,), ("idea_0",))
    # the big paper's line (its 10 M title, its abstract cut at max_chars) shown as 499 characters and an ellipsis
    line = f"- {huge} (2019): " + f"Abstract of {huge}."[:600] + "…"
    assert [d.get("truncated_chars", 0) for d in docs] == [len(line) - 499, 0]


def test_an_llm_judge_shows_the_papers_and_lists_them_as_evidence(build, s2, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)
    with MockLLM() as llm:
        judge = build(
            "openai", model="mock", base_url=llm.base_url, api_key_env="MOCK_API_KEY", votes=1, tasks=("pairwise",),
            retrieval={"source": "semantic-scholar", "base_url": s2.base_url, "k": 2, "requests_per_second": 1000},
        )  # fmt: skip
        (row,) = judge.judge(make_pairs(1), []).pairwise
        users = [r.body["messages"][-1]["content"] for r in llm.requests]
    # each idea's papers quoted as data: a notice line, the QUOTED marker, then the papers
    quoted = r"Related prior work for Idea A:\nQuoted material follows: related papers[^\n]*\n<<<QUOTED \w+>>>\n- Earlier work 0 on Title {} \(2015\)"
    assert any(re.search(quoted.format(0), u) for u in users)  # forward order
    assert any(re.search(quoted.format(1), u) for u in users)  # reverse order
    docs = orjson.loads(row["evidence_docs"])
    assert [(d["slot"], d["rank"], d["source"]) for d in docs] == [("idea_0", 0, "semantic-scholar"), ("idea_0", 1, "semantic-scholar"),
                                                                   ("idea_1", 0, "semantic-scholar"), ("idea_1", 1, "semantic-scholar")]  # fmt: skip
    parts = orjson.loads(row["evidence_parts"])
    assert parts["idea_0_retrieved_1"] == docs[1]["digest"] and "retrieval" in parts
    cfg = judge.config()["retrieval"]
    assert cfg["method"] == "semantic-scholar" and "refresh" not in cfg and cfg["endpoint"] == s2.base_url
    assert s2.count == 2  # one search per distinct idea, however many calls show it


def test_a_bad_retrieval_config_fails_when_params_load(build):
    with pytest.raises(ConfigError, match="retrieval"):
        build("openai", model="mock", retrieval={"source": "semantic-scholar", "k": 0})
    with pytest.raises(ConfigError, match="cutoff"):
        build("openai", model="mock", api_key_env=None, retrieval={"source": "semantic-scholar", "cutoff": "Sept 2025"})


# -- result drift, end to end --------------------------------------------------------------------------


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCK_API_KEY": KEY}
    env.pop("S2_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


MARK = "ALREADY DONE"


def reads_the_evidence(body, nth):
    """Picks B when Idea A's related work shows a paper marked ALREADY DONE, else A."""
    user = body["messages"][-1]["content"]
    a_work = user.split("Related prior work for Idea A:", 1)[-1].split("Related prior work for Idea B:", 1)[0]
    return 'Checked the related work.\n{"answer": "%s"}' % ("B" if MARK in a_work else "A")


@pytest.mark.slow
def test_drifting_search_results_show_in_the_audit_as_evidence_with_the_entering_titles(project, s2):
    from novelty_audit.params import load_params
    from novelty_audit.pipeline import record_run

    def configure(refresh: bool) -> None:
        raw = benchmark_only(yaml.safe_load((project / "params.yaml").read_text()))
        retrieval = {"source": "semantic-scholar", "base_url": s2.base_url, "k": 2, "cutoff": "2025-09-19",
                     "requests_per_second": 1000, "backoff_s": 0.001, "refresh": refresh}  # fmt: skip
        args = {"model": "mock", "base_url": llm.base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "orders": "forward", "retrieval": retrieval}
        raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "limit": 6, "seed": 1,
                        "judges": {"rag": {"backend": "openai", "args": args}}}  # fmt: skip
        (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))

    def judge_stage(*extra: str) -> pl.DataFrame:
        done = cli("stage", "judge", *extra, cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
        record_run(load_params(project / "params.yaml"), project / "dvc.yaml")
        return pl.read_parquet(project / "artifacts/judge/verdicts.parquet")

    with MockLLM(answer=reads_the_evidence) as llm:
        configure(refresh=False)
        assert cli("stage", "pin", cwd=project).returncode == 0
        before = judge_stage()
        assert before.height == 6 and (before["verdict"] == before["idea_0"]).all()
        ideas = pl.read_parquet(project / "artifacts/pin/human-only/ideas.parquet")
        title = dict(zip(ideas["idea_id"], ideas["title"]))
        drifted = before.sort("pair_id")[:2]
        for k, r in enumerate(drifted.iter_rows(named=True)):
            s2.script(title[r["idea_0"]], [paper(f"new-{k}", f"{MARK}: a {2024 - k} paper on the same idea", 2024 - k)])
        searches = s2.count

        unchanged = judge_stage("--force")  # cached responses: the drift is not seen, nothing is asked
        assert s2.count == searches and unchanged.equals(before)

        configure(refresh=True)  # a drift check of the literature
        after = judge_stage()
        assert s2.count > searches
    moved = after.filter(pl.col("verdict") != pl.col("idea_0"))
    assert sorted(moved["pair_id"]) == sorted(drifted["pair_id"])

    res = cli("audit", "--json", cwd=project)
    assert res.returncode == 0, res.stdout + res.stderr
    changes = orjson.loads(res.stdout)["changes"]
    assert sorted(c["pair"] for c in changes) == sorted(drifted["pair_id"])
    for c in changes:
        assert c["cause"] == "evidence"
        entered = [d["title"] for d in c["evidence"]["docs"] if d["movement"] == "entered"]
        assert len(entered) == 1 and entered[0].startswith(MARK)
        assert all(d["source"] == "semantic-scholar" for d in c["evidence"]["docs"])
