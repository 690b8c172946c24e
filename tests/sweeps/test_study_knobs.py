"""The knobs the instability study turns, run end to end against the mock LLM server: `reasoning_effort` reaches the
request bodies (OpenAI's field; Anthropic's extended thinking with the documented budgets), `bases: [a, b]` makes
every variant on every base, and `orders: [forward]` asks half the calls of its base."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.llm import THINKING_BUDGETS
from novelty_audit.pipeline import load_checked_params, run_stage

LIMIT = 2


def configure(project: Path, judges: dict, sweeps: dict) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "limit": LIMIT,
                    "judges": judges, "sweeps": sweeps}  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def api_judge(mock: MockLLM, backend: str = "openai", **args) -> dict:
    url = mock.base_url if backend == "openai" else mock.root_url
    return {"backend": backend, "args": {"model": f"mock-{backend}", "base_url": url, "api_key_env": "MOCK_API_KEY",
                                         "votes": 1, "concurrency": 4, **args}}  # fmt: skip


def judged(project: Path) -> pl.DataFrame:
    return pl.read_parquet(project / "artifacts/judge/verdicts.parquet")


def test_reasoning_effort_low_and_high_are_sent_as_openais_reasoning_effort(pinned_tiny):
    project, mock = pinned_tiny
    configure(project, {"base": api_judge(mock)}, {"effort": {"base": "base", "vary": {"reasoning_effort": ["low", "high"]}}})
    run_stage("judge")
    sent = Counter(r.body.get("reasoning_effort") for r in mock.requests)
    calls = LIMIT * 2  # pairs × both orders × 1 vote
    assert sent == {None: calls, "low": calls, "high": calls}
    for r in mock.requests:
        # reasoning models refuse `max_tokens`: with an effort the same cap travels as max_completion_tokens
        cap, other = ("max_completion_tokens", "max_tokens") if r.body.get("reasoning_effort") else ("max_tokens", "max_completion_tokens")
        assert cap in r.body and other not in r.body
    assert {"effort/reasoning_effort=low", "effort/reasoning_effort=high"} <= set(judged(project)["judge"].to_list())


def test_an_anthropic_base_sends_extended_thinking_with_the_documented_budget_per_level(pinned_tiny):
    project, mock = pinned_tiny
    base = api_judge(mock, "anthropic", sampling={"max_tokens": 20000})
    configure(project, {"claude": base}, {"think": {"base": "claude", "vary": {"reasoning_effort": ["none", "low", "high"]}}})
    run_stage("judge")
    sent = Counter(str(r.body.get("thinking")) for r in mock.requests)
    calls = LIMIT * 2
    assert sent == {
        "None": calls,  # the base sets no effort: no thinking field
        str({"type": "disabled"}): calls,
        str({"type": "enabled", "budget_tokens": 2048}): calls,
        str({"type": "enabled", "budget_tokens": 16384}): calls,
    }
    assert THINKING_BUDGETS["low"] == 2048 and THINKING_BUDGETS["high"] == 16384  # the table docs/judges.md shows
    assert all(r.path.endswith("/messages") and "reasoning_effort" not in r.body for r in mock.requests)


def test_an_anthropic_effort_whose_budget_max_tokens_does_not_exceed_is_refused_when_params_load(pinned_tiny):
    project, mock = pinned_tiny
    configure(project, {"claude": api_judge(mock, "anthropic", sampling={"max_tokens": 4000})},
              {"think": {"base": "claude", "vary": {"reasoning_effort": ["low", "medium"]}}})  # fmt: skip
    from novelty_audit.errors import ConfigError

    with pytest.raises(ConfigError) as exc:
        load_checked_params(project / "params.yaml")
    text = str(exc.value)
    assert "judge.sweeps.think: base claude (anthropic), knob reasoning_effort value 'medium'" in text
    assert "max_tokens 4000 must exceed" in text and "8192" in text
    assert "value 'low'" not in text  # 2048 < 4000: honoured


def test_bases_runs_every_variant_on_every_base_and_each_variant_names_its_base(pinned_tiny):
    project, mock = pinned_tiny
    judges = {"gpt": api_judge(mock), "claude": api_judge(mock, "anthropic"), "first": {"backend": "always-first"}}
    configure(project, judges, {"cross": {"bases": ["gpt", "claude", "first"], "vary": {"votes": [2], "orders": ["forward"]}}})
    params = load_checked_params(project / "params.yaml")
    variants = params.judge.sweep_variants()
    expected = {f"cross/{b}/{k}" for b in ("gpt", "claude", "first") for k in ("votes=2", "orders=forward")}
    assert set(variants) == expected
    assert {v.base for vid, v in variants.items() if vid.startswith("cross/claude/")} == {"claude"}
    assert params.judge.judges["cross/claude/votes=2"].backend == "anthropic"
    run_stage("judge")
    assert expected <= set(judged(project)["judge"].to_list())
    by_path = Counter("anthropic" if r.path.endswith("/messages") else "openai" for r in mock.requests)
    # per base: 2 orders × 2 votes (the votes=2 variant; its first vote is the base's) and nothing new for forward
    assert by_path == {"openai": LIMIT * 2 * 2, "anthropic": LIMIT * 2 * 2}


def test_orders_forward_asks_half_the_calls_of_its_base(pinned_tiny, run_main):
    import json

    project, mock = pinned_tiny
    configure(project, {"gpt": api_judge(mock, votes=3)}, {"uni": {"base": "gpt", "vary": {"orders": ["forward"], "prompt": ["p3-v1"]}}})
    code, out, err = run_main("stage", "judge", "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["gpt"]["calls"] == LIMIT * 2 * 3
    assert plan["uni/orders=forward"]["calls"] == plan["gpt"]["calls"] // 2
    assert plan["uni/prompt=p3-v1"]["calls"] == plan["gpt"]["calls"]  # a knob that keeps both orders keeps the count
    assert mock.count == 0


def test_the_single_base_form_keeps_its_ids(pinned_tiny):
    project, mock = pinned_tiny
    configure(project, {"gpt": api_judge(mock)}, {"s": {"base": "gpt", "vary": {"votes": [2], "reasoning_effort": ["xhigh"]}}})
    variants = load_checked_params(project / "params.yaml").judge.sweep_variants()
    assert set(variants) == {"s/votes=2", "s/reasoning_effort=xhigh"}
