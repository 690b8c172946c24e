"""Result stripping flags leftovers; the benchmark check reports violations and lists what it cannot check."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from mock_llm import MockLLM

from novelty_audit.errors import BadInputError
from novelty_audit.pools import (
    NOT_CHECKABLE,
    GeneratedPoolParams,
    PoolsParams,
    check_benchmark,
    check_results,
    generate_with_llm,
    generated_from_jsonl,
    strip_results,
)
from novelty_audit.signals import ChatClient, LLMSpec


def kinds(text: str) -> list[str]:
    return [f.check for f in check_results(text)]


def test_the_check_flags_numbers_percentages_result_phrases_and_code_links() -> None:
    text = "Our method outperforms strong baselines by 5.3% and is 3x faster, winning 12 of 14 tasks. Code is available at https://github.com/a/b."
    assert kinds(text) == ["outperforms", "percentage", "multiplier", "number", "number", "code-link", "code-link"]
    assert "state-of-the-art" in kinds("It achieves state-of-the-art accuracy.")
    assert "baseline-comparison" in kinds("Compared with existing methods, the model is cheaper.")
    assert "improvement" in kinds("It improves robustness by a large margin.")


def test_the_check_leaves_names_years_and_plain_method_text_alone() -> None:
    assert kinds("We fine-tune GPT-4 and Qwen3-8B on AIME 2024 with a new routing scheme.") == []
    assert kinds("We propose learning the noise schedule jointly with the student.") == []


def _idea(iid, label, *, source="human", rating=6.5, contribution=3.2, pos=("novel",), neg=(), area="rl", title=None, text="We propose X."):
    return {"dataset": "d", "idea_id": iid, "text": text, "text_digest": "0", "title": title or iid, "area": area, "source": source,
            "rating": rating, "contribution": contribution, "label": label, "positive_signals": list(pos), "negative_signals": list(neg)}  # fmt: skip


def test_the_benchmark_check_reports_each_broken_rule_and_lists_the_uncheckable_ones() -> None:
    ideas = pl.DataFrame(
        [
            _idea("i-ok", "POSITIVE"),
            _idea("i-lowrate", "POSITIVE", rating=5.5),
            _idea("i-negsig", "POSITIVE", neg=("not novel",)),
            _idea("i-nopos", "POSITIVE", pos=()),
            _idea("i-n-ok", "NEGATIVE", rating=2.0, contribution=1.5, pos=(), neg=("incremental",)),
            _idea("i-n-high", "NEGATIVE", rating=4.0, contribution=2.5, pos=("new",), neg=("incremental",), text="It outperforms all baselines by 10%."),
            _idea("i-gen", "NEGATIVE", source="generated", rating=None, contribution=None, pos=(), neg=()),
        ]
    )
    pairs = pl.DataFrame({"pair_id": ["p-1", "p-2"], "context": ["rl", "vision"], "idea_0": ["i-ok", "i-lowrate"], "idea_1": ["i-n-ok", "i-gen"]})
    got = check_benchmark(ideas, pairs, PoolsParams())
    broken = sorted((v["idea_id"], v["pool"], v["rule"]) for v in got["violations"])
    assert broken == [
        ("i-lowrate", "D+", "rating-threshold"),
        ("i-n-high", "D-", "contribution-threshold"),
        ("i-n-high", "D-", "rating-threshold"),
        ("i-n-high", "D-", "signal-opposite"),
        ("i-negsig", "D+", "signal-opposite"),
        ("i-nopos", "D+", "signal-present"),
    ]
    assert got["ideas_violating"] == 4
    assert [p["pair_id"] for p in got["pair_violations"]] == ["p-2"]
    assert {n["rule"] for n in got["not_checkable"]} == {"rating-percentile", "decision", "signal-majority"} == {n["rule"] for n in NOT_CHECKABLE}
    assert got["not_applicable"][0]["ideas"] == 1  # the generated negative is not checked against human rules
    assert [f["idea_id"] for f in got["strip_check"]["flagged"]] == ["i-n-high"]


def test_generated_ideas_from_a_file_name_the_bad_line(tmp_path: Path) -> None:
    f = tmp_path / "gen.jsonl"
    f.write_text(json.dumps({"area": "rl", "title": "LLM-rl-0", "text": "An idea."}) + "\n" + json.dumps({"area": "rl", "title": ""}) + "\n")
    with pytest.raises(BadInputError, match=r"gen.jsonl: line 2, field title"):
        generated_from_jsonl(f, 200)


def test_llm_generation_and_stripping_are_cached_per_replicate(tmp_path: Path) -> None:
    def answer(body, nth):
        prompt = body["messages"][0]["content"]
        if "Rewrite the research abstract" in prompt:
            return "We propose learning the noise schedule."
        return f"A Title\nAn idea for the area, variant {len(prompt) % 7}."

    with MockLLM(answer=answer) as mock:
        spec = LLMSpec(enabled=True, model="mock-gen", base_url=mock.base_url, api_key_env="NOVELTY_AUDIT_TEST_UNSET_KEY")
        client = ChatClient(spec, tmp_path / "calls", "pools.generated.llm")
        gp = GeneratedPoolParams(source="llm", per_area=2, max_words=200)
        a = generate_with_llm(client, ["rl", "gen", "rl"], gp)
        assert sorted(a["title"].to_list()) == ["LLM-gen-0", "LLM-gen-1", "LLM-rl-0", "LLM-rl-1"]
        assert mock.count == 4  # two areas × two replicates, the repeated area asked once
        b = generate_with_llm(ChatClient(spec, tmp_path / "calls", "x"), ["rl", "gen"], gp)
        assert a.equals(b) and mock.count == 4
        stripped = strip_results(client, "We propose learning the noise schedule. It improves FID by 12%.")
        assert stripped == "We propose learning the noise schedule." and check_results(stripped) == []
