"""A failed LLM call of the signals stage is an incomplete output, not a stop: the stage exits 3 listing each
failed review with its reason, and the next run asks only the failed calls."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.artifacts import load_manifest
from novelty_audit.signals import ChatClient, LLMSpec, llm_extract

REPO = Path(__file__).resolve().parents[2]
FAILING = "The game has a clear ground truth that allows computing baselines"
"""Text of one review of the shipped AsymPuzl paper: its extraction call is the one that fails."""


def _answer(body: dict, nth: int) -> str:
    return '{"positive": [], "negative": []}'


@pytest.fixture
def mock():
    with MockLLM(answer=_answer) as m:
        yield m


@pytest.fixture
def llm_project(project: Path, mock: MockLLM) -> Path:
    """The `project` copy with the shipped reviews and the LLM extractor on the mock (no benchmark, no sentence
    scoring: one call per review)."""
    shutil.copytree(REPO / "data" / "raw-reviews", project / "data" / "raw-reviews")
    for p in (project / "data").rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    doc = yaml.safe_load(Path("params.yaml").read_text(encoding="utf-8"))
    sig = doc["signals"]
    sig.update(extractors=["rules", "llm"], benchmark_datasets=[], review_sentences_novelty=None, review_sentences_other=None)
    sig["llm"].update(enabled=True, model="mock-extractor", base_url=mock.base_url, api_key_env="NOVELTY_AUDIT_TEST_UNSET_KEY",
                      max_retries=0)
    Path("params.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return project


def _failed_rows() -> pl.DataFrame:
    rej = pl.read_parquet("artifacts/signals/llm_rejections.parquet")
    return rej.filter(pl.col("reason").str.starts_with("call failed"))


def test_failed_calls_exit_3_listing_each_item_and_the_rerun_asks_only_those(llm_project: Path, mock: MockLLM, run_main) -> None:
    mock.add_rule(FAILING, "500")
    code, out, err = run_main("stage", "signals")
    assert code == 3, out + err
    assert "signals: 1 call failed: HTTP 500" in err and "llm_rejections.parquet" in err, err
    reviews = pl.read_parquet("artifacts/signals/reviews.parquet")
    asked = mock.count
    assert asked == reviews.height  # every review asked once; the failed one not twice in one run
    failed = _failed_rows()
    assert failed["reason"].to_list() == ["call failed: HTTP 500"]
    (review_id,) = failed["review_id"].to_list()
    assert FAILING in reviews.filter(pl.col("review_id") == review_id)["strengths"][0]
    manifest = load_manifest(Path("artifacts/signals"))
    assert not manifest.complete and manifest.incomplete_reason == "1 call failed: HTTP 500"

    mock.reset()  # the fault is gone
    code, out, err = run_main("stage", "signals")
    assert code == 0, out + err
    assert mock.count == 1 and FAILING in str(mock.requests[0].body["messages"])  # only the failed call is asked
    assert _failed_rows().height == 0 and load_manifest(Path("artifacts/signals")).complete


def test_a_call_malformed_every_time_is_a_failure_with_its_reason_and_the_pools_client_stops(mock: MockLLM, tmp_path: Path) -> None:
    from novelty_audit.errors import NoveltyAuditError

    mock.add_rule("routing credit", "html")
    spec = LLMSpec(enabled=True, model="mock-extractor", base_url=mock.base_url, api_key_env="NOVELTY_AUDIT_TEST_UNSET_KEY", max_retries=1)
    client = ChatClient(spec, tmp_path / "calls", "signals.llm")
    got = llm_extract(client, {"strengths": "- The routing credit along a graph is novel."})
    assert (got.failed, got.accepted, got.rejected) == ("malformed response", [], [])
    assert mock.count == 2 and list(client.failures.values()) == ["malformed response"]
    assert not list((tmp_path / "calls").glob("??/*.json"))  # nothing cached: the next run asks it again
    # `complete` (the pools' use) still stops the run naming the call and its reason.
    with pytest.raises(NoveltyAuditError, match=r"signals\.llm: the call to model 'mock-extractor' failed: malformed response"):
        client.complete([{"role": "user", "content": "routing credit"}])


def test_a_failed_scoring_call_is_listed_with_its_sentence_and_counted(mock: MockLLM, tmp_path: Path) -> None:
    from novelty_audit.signals import SignalsParams, build_signals

    review = tmp_path / "paper.md"
    review.write_text(
        "# A Paper\n\n- Decision: Accept (Poster)\n\n## Abstract\nWe do things.\n\n## Human Reviews\n\n"
        "## Human Reviewer 1\n\n### Rating\n8\n\n### Contribution\n3\n\n### Strengths\n- Clear.\n\n### Weaknesses\n- Small.\n",
        encoding="utf-8",
    )
    bench = pl.DataFrame({"idea_id": ["i-x"], "source": ["human"], "area": ["rl"],
                          "positive_signals": [["The routing idea is novel."]], "negative_signals": [["FAILME is not new."]]})
    mock.add_rule("FAILME", "500")
    sp = SignalsParams(extractors=["llm"], benchmark_datasets=["ds"],
                       llm=LLMSpec(enabled=True, model="mock-extractor", base_url=mock.base_url,
                                   api_key_env="NOVELTY_AUDIT_TEST_UNSET_KEY", max_retries=0))
    out = build_signals(sp, files={"markdown": [review], "openreview": [], "sentences": []}, benchmark={"ds": bench},
                        cache_root=tmp_path / "calls", root=tmp_path)
    failed = out.rejections.filter(pl.col("reason").str.starts_with("call failed"))
    assert failed.select("paper_id", "snippet", "reason").rows() == [(None, "FAILME is not new.", "call failed: HTTP 500")]
    assert out.failed == {"HTTP 500": 1} and out.scores["extractors"]["llm"]["llm_failed"] == {"total": 1, "reasons": {"HTTP 500": 1}}
    assert out.scores["extractors"]["llm"]["llm_rejected"]["total"] == 0  # a failed call is not a rejected snippet
