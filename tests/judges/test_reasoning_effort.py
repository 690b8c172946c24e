"""`sampling.reasoning_effort`, the reasoning budget of reasoning models: every level OpenAI's API takes is accepted
by the prompted judges and the search agents; OpenAI-compatible chat sends it as `reasoning_effort`, Anthropic as
extended thinking with the budget docs/judges.md documents, handed back unchanged after a tool call; what Anthropic
cannot honour is refused when the args are checked."""

from __future__ import annotations

from typing import Any

import pytest
from mock_arxiv import entry

from novelty_audit.config import REASONING_EFFORTS
from novelty_audit.judges import Idea, PointItem
from novelty_audit.judges._llm import AnthropicArgs, LLMArgs
from novelty_audit.judges.agents._ai_scientist import AiScientistArgs
from novelty_audit.judges.agents._search_agent import SearchAgentArgs
from novelty_audit.llm import THINKING_BUDGETS, CallSettings, Endpoint, Request, Sampling
from novelty_audit.llm._anthropic import AnthropicProvider
from novelty_audit.llm._openai import OpenAIProvider

IDEA = Idea("i1", "Graph nets for molecules", "We predict molecule properties with message passing.", "d1")
NOT_NOVEL = 'Message passing on molecules is known.\nPrior paper: Neural Message Passing for Quantum Chemistry\n{"answer": "no"}'
HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]


def test_every_level_of_openais_api_is_a_reasoning_effort():
    assert REASONING_EFFORTS == ("none", "minimal", "low", "medium", "high", "xhigh", "max")
    assert set(THINKING_BUDGETS) == set(REASONING_EFFORTS) - {"none"}
    budgets = [THINKING_BUDGETS[e] for e in REASONING_EFFORTS[1:]]
    assert budgets == sorted(budgets) and budgets[0] == 1024  # the Messages API's smallest budget
    with pytest.raises(ValueError, match="reasoning_effort"):
        Sampling(reasoning_effort="deep")


@pytest.mark.parametrize("effort", REASONING_EFFORTS)
def test_openai_chat_sends_the_level_with_the_cap_as_max_completion_tokens(effort):
    body, extra = OpenAIProvider(Endpoint("openai", "m"), CallSettings(), "test").body(Request(messages=HI, sampling=Sampling(reasoning_effort=effort, max_tokens=900)))
    assert body["reasoning_effort"] == effort and body["max_completion_tokens"] == 900 and "max_tokens" not in body and not extra


@pytest.mark.parametrize("effort", REASONING_EFFORTS)
def test_anthropic_sends_extended_thinking_with_the_documented_budget(effort):
    sampling = Sampling(reasoning_effort=effort, max_tokens=64000)
    body, _ = AnthropicProvider(Endpoint("anthropic", "claude"), CallSettings(), "test").body(Request(messages=HI, sampling=sampling))
    expected = {"type": "disabled"} if effort == "none" else {"type": "enabled", "budget_tokens": THINKING_BUDGETS[effort]}
    assert body["thinking"] == expected and "reasoning_effort" not in body and body["max_tokens"] == 64000


def test_without_an_effort_neither_provider_sends_a_reasoning_field():
    body, _ = AnthropicProvider(Endpoint("anthropic", "claude"), CallSettings(), "test").body(Request(messages=HI))
    assert "thinking" not in body
    body, _ = OpenAIProvider(Endpoint("openai", "m"), CallSettings(), "test").body(Request(messages=HI))
    assert "reasoning_effort" not in body and body["max_tokens"] == 512


@pytest.mark.parametrize(
    "sampling, says",
    [
        ({"reasoning_effort": "low", "max_tokens": 2048}, "max_tokens 2048 must exceed the extended-thinking budget of reasoning_effort 'low' (2048 tokens"),
        ({"reasoning_effort": "xhigh", "max_tokens": 8000}, "'xhigh' (32000 tokens"),
        ({"reasoning_effort": "medium", "max_tokens": 20000, "temperature": 0.2}, "temperature 0.2"),
        ({"reasoning_effort": "medium", "max_tokens": 20000, "top_p": 0.5}, "top_p 0.5"),
    ],
)
def test_what_anthropic_cannot_honour_is_refused_by_the_judge_and_agent_args(sampling, says):
    search = {"source": "arxiv"}
    for model, args in ((AnthropicArgs, {}), (SearchAgentArgs, {"provider": "anthropic", "search": search}),
                        (AiScientistArgs, {"provider": "anthropic"})):  # fmt: skip
        with pytest.raises(ValueError) as exc:
            model.model_validate({"model": "claude", "sampling": sampling, **args})
        assert says in str(exc.value), (model.__name__, str(exc.value))
    LLMArgs.model_validate({"model": "gpt", "sampling": sampling})  # the openai backend sends the effort as is


def test_the_search_agent_takes_every_level_as_its_reasoning_arg_for_both_providers():
    for effort in REASONING_EFFORTS:
        assert SearchAgentArgs.model_validate({"model": "m", "reasoning": effort}).turn_sampling().reasoning_effort == effort
    claude = SearchAgentArgs.model_validate({"model": "c", "provider": "anthropic", "reasoning": "xhigh", "sampling": {"max_tokens": 40000}})
    assert claude.turn_sampling().reasoning_effort == "xhigh"
    with pytest.raises(ValueError, match="must exceed"):
        SearchAgentArgs.model_validate({"model": "c", "provider": "anthropic", "reasoning": "xhigh"})


@pytest.fixture
def claude_agent(build, mock_llm, arxiv, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test")
    arxiv.script("message passing", [entry("1704.01212", "Neural Message Passing for Quantum Chemistry", "2017-04-04")])

    def answer(body: dict[str, Any], nth: int) -> Any:
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        return {"content": None, "tool_calls": [{"name": "search", "arguments": {"query": "message passing"}}]} if turn == 0 else NOT_NOVEL

    mock_llm.answer = answer
    judge = build("search-agent", "claude-agent", tasks=("pointwise",), model="claude-mock", provider="anthropic", base_url=mock_llm.root_url,
                  api_key_env="MOCK_API_KEY", reasoning="high", sampling={"max_tokens": 20000}, search={"source": "arxiv", "base_url": arxiv.base_url, "requests_per_second": 1000, "max_retries": 1})  # fmt: skip
    try:
        yield judge, mock_llm
    finally:
        judge.close()


def test_an_anthropic_agent_hands_its_thinking_back_with_the_tool_results(claude_agent):
    judge, mock = claude_agent
    out = judge.judge([], [PointItem("ds", IDEA, "POSITIVE")])
    assert [r["predicted"] for r in out.pointwise] == ["NEGATIVE"]
    first, second = mock.requests
    assert first.body["thinking"] == second.body["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGETS["high"]}
    replayed = next(m for m in second.body["messages"] if m["role"] == "assistant")["content"]
    # the thinking block the mock signed in its first answer leads the assistant turn, unchanged, before the tool call
    assert replayed[0] == {"type": "thinking", "thinking": "Weighing the ideas.", "signature": "sig-1"}
    assert [b["type"] for b in replayed] == ["thinking", "tool_use"]
