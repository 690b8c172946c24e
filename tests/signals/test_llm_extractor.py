"""The LLM extractor keeps only verbatim snippets, counts the rest, and never pays twice for one call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mock_llm import MockLLM

from novelty_audit.errors import NoveltyAuditError
from novelty_audit.llm import CallCache
from novelty_audit.signals import ChatClient, LLMSpec, SignalsParams, build_signals, llm_extract, parse_json_answer

REVIEW = {
    "strengths": "- The idea of routing credit along a learned graph is novel.\n- The paper is clearly written.",
    "weaknesses": "- The compute cost is not reported.\n- Limited novelty in the exploration bonus.",
}
ANSWER = {
    "positive": ["The idea of routing credit along a learned graph is novel.", "The approach is highly original."],
    "negative": ["Limited novelty in the exploration bonus.", "", 42],
}


def _answer(body: dict, nth: int) -> str:
    return "```json\n" + json.dumps(ANSWER) + "\n```"


@pytest.fixture
def mock():
    with MockLLM(answer=_answer) as m:
        yield m


def _client(mock: MockLLM, tmp_path: Path) -> ChatClient:
    spec = LLMSpec(enabled=True, model="mock-extractor", base_url=mock.base_url, api_key_env="NOVELTY_AUDIT_TEST_UNSET_KEY")
    return ChatClient(spec, tmp_path / "cache" / "calls", "signals.llm")


def test_only_verbatim_snippets_are_kept_and_the_rest_are_counted(mock: MockLLM, tmp_path: Path) -> None:
    got = llm_extract(_client(mock, tmp_path), REVIEW)
    assert [(p, s, sec) for p, s, sec, _ in got.accepted] == [
        ("positive", "The idea of routing credit along a learned graph is novel.", "strengths"),
        ("negative", "Limited novelty in the exploration bonus.", "weaknesses"),
    ]
    for pol, snippet, section, start in got.accepted:
        assert REVIEW[section][start : start + len(snippet)] == snippet
    reasons = sorted(r for _, _, r in got.rejected)
    assert reasons == ["empty", "not a string", "not verbatim in the review"]
    assert ("positive", "The approach is highly original.", "not verbatim in the review") in got.rejected


def test_a_repeated_call_is_answered_from_the_cache(mock: MockLLM, tmp_path: Path) -> None:
    client = _client(mock, tmp_path)
    llm_extract(client, REVIEW)
    llm_extract(client, REVIEW)
    assert mock.count == 1
    assert (client.stats.calls, client.stats.cache_hits) == (1, 1)
    fresh = _client(mock, tmp_path)  # a new run, same cache directory
    llm_extract(fresh, REVIEW)
    assert mock.count == 1 and fresh.stats.cache_hits == 1


def test_the_cache_key_covers_the_model_and_the_prompt(mock: MockLLM, tmp_path: Path) -> None:
    a = _client(mock, tmp_path)
    b = ChatClient(a.spec.model_copy(update={"model": "other-model"}), a.cache_root, "signals.llm")
    msgs = [{"role": "user", "content": "x"}]
    assert a.key(msgs) != b.key(msgs)
    assert a.key(msgs) != a.key([{"role": "user", "content": "y"}])
    assert a.key(msgs) == a.key(msgs, 0) != a.key(msgs, 1)
    spec_retry = a.spec.model_copy(update={"max_retries": 9, "timeout_s": 1.0})
    assert ChatClient(spec_retry, a.cache_root, "x").key(msgs) == a.key(msgs)
    elsewhere = a.spec.model_copy(update={"base_url": "http://elsewhere/v1"})  # another server's answers
    assert ChatClient(elsewhere, a.cache_root, "x").key(msgs) != a.key(msgs)


def test_unparseable_answers_are_rejected_not_guessed(tmp_path: Path) -> None:
    with MockLLM(answer=lambda body, nth: "I think the review is positive overall.") as m:
        got = llm_extract(_client(m, tmp_path), REVIEW)
    assert got.accepted == [] and got.rejected == [("", "", "answer is not a JSON object")]
    assert parse_json_answer('Sure: {"positive": [], "negative": ["a"]} done') == {"positive": [], "negative": ["a"]}


def test_the_signals_build_counts_rejected_snippets_per_extractor(mock: MockLLM, tmp_path: Path) -> None:
    review = tmp_path / "paper.md"
    review.write_text(
        "# A Paper\n\n- Decision: Accept (Poster)\n\n## Abstract\nWe do things.\n\n## Human Reviews\n\n"
        "## Human Reviewer 1\n\n### Rating\n8\n\n### Contribution\n3\n\n### Strengths\n" + REVIEW["strengths"]
        + "\n\n### Weaknesses\n" + REVIEW["weaknesses"] + "\n",
        encoding="utf-8",
    )
    sp = SignalsParams(
        extractors=["rules", "llm"],
        benchmark_datasets=[],
        llm=LLMSpec(enabled=True, model="mock-extractor", base_url=mock.base_url, api_key_env="NOVELTY_AUDIT_TEST_UNSET_KEY"),
    )
    out = build_signals(sp, files={"markdown": [review], "openreview": [], "sentences": []}, benchmark={},
                        cache_root=tmp_path / "cache", root=tmp_path)
    llm = out.snippets.filter(out.snippets["extractor"] == "llm:mock-extractor")
    assert sorted(llm["polarity"].to_list()) == ["negative", "positive"]
    assert out.scores["extractors"]["llm"]["llm_rejected"] == {"total": 3, "not_verbatim": 1}
    assert out.rejections.height == 3
    assert set(out.snippets["review_digest"].to_list()) == set(out.reviews["review_digest"].to_list())


@pytest.mark.parametrize("fault", ["truncated", "html", "empty_choices", "no_message", "wrong_types"])
def test_a_malformed_http_200_is_retried_and_then_answered(mock: MockLLM, tmp_path: Path, fault: str) -> None:
    mock.add_rule("routing credit", fault, times=1)
    got = llm_extract(_client(mock, tmp_path), REVIEW)
    assert len(got.accepted) == 2 and mock.count == 2


def test_the_cache_entry_records_the_finish_reason(mock: MockLLM, tmp_path: Path) -> None:
    client = _client(mock, tmp_path)
    llm_extract(client, REVIEW)
    (path,) = (tmp_path / "cache" / "calls").glob("??/*.json")
    assert CallCache(tmp_path / "cache" / "calls").get(path.stem)["finish_reason"] == "stop"


def test_a_signals_call_key_is_pinned(tmp_path: Path) -> None:
    from novelty_audit.signals import load_text_prompt

    spec = LLMSpec(enabled=True, model="mock-extractor", base_url="http://127.0.0.1:9/v1", api_key_env="X")
    review = load_text_prompt("signals-extract-v1").replace("{review}", "## Strengths\nNovel.")
    key = ChatClient(spec, tmp_path, "signals.llm").key([{"role": "user", "content": review}])
    assert key == "04c75cc88a022d4a8b16f0adbf88f5fce1440c3b6a5aa67713b56fd676d8fc42"


def test_an_answer_cached_before_the_call_layer_is_still_a_cache_hit(mock: MockLLM, tmp_path: Path) -> None:
    from novelty_audit.signals import extract_messages

    client = _client(mock, tmp_path)
    key = client.key(extract_messages(REVIEW))
    old = {"text": json.dumps(ANSWER), "model": "mock-extractor", "backend": "openai-compatible", "finish_reason": "stop",
           "prompt_sha256": "x", "input_tokens": 1, "output_tokens": 1}  # the entry layout the client wrote before
    CallCache(tmp_path / "cache" / "calls").put(key, old)
    got = llm_extract(client, REVIEW)
    assert mock.count == 0 and client.stats.cache_hits == 1 and len(got.accepted) == 2
