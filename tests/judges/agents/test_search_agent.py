"""The `search-agent` judge: the model calls search(query) against arXiv until it answers, every turn and
every search cached and audited; a not-novel answer cites the prior paper it rests on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from mock_arxiv import entry
from mock_s2 import paper
from mock_llm import MockLLM, tool_results

from novelty_audit.errors import ConfigError
from novelty_audit.judges import Idea, PairItem, PointItem, parse_verdict
from novelty_audit.judges.agents._search_agent import (
    BAD_ARGUMENTS,
    NO_MORE_SEARCHES,
    UNKNOWN_TOOL,
    agent_prompt,
    first_messages,
    parse_citation,
    read_query,
    search_tool,
)
from novelty_audit.llm import ToolCall

IDEA = Idea("i1", "Graph nets for molecules", "We predict molecule properties with message passing.", "d1")
OTHER = Idea("i2", "Sparse attention for proteins", "We fold proteins with sparse attention.", "d2")


# -- the pure parts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, cited",
    [
        ('It exists.\nPrior paper: Neural Message Passing for Quantum Chemistry\n{"answer": "no"}',
         {"title": "Neural Message Passing for Quantum Chemistry", "doc_id": None}),
        ('**Prior paper:** "Neural Message Passing" (arXiv:1704.01212v2)\n{"answer": "no"}',
         {"title": "Neural Message Passing", "doc_id": "arxiv:1704.01212"}),
        ('Prior work: 1704.01212\n{"answer": "no"}', {"title": None, "doc_id": "arxiv:1704.01212"}),
        ('Prior paper: <title of that paper>\n{"answer": "no"}', None),
        ('Prior paper: none\n{"answer": "yes"}', None),
        ('No earlier paper does this.\n{"answer": "yes"}', None),
        (None, None),
    ],
)
def test_the_cited_prior_paper_is_read_from_its_line_before_the_verdict(text, cited):
    assert parse_citation(text) == cited


def test_a_citation_line_leaves_the_verdict_to_the_prompted_judges_parser():
    text = 'Message passing on molecules is known.\nPrior paper: Neural Message Passing for Quantum Chemistry\n{"answer": "no"}'
    assert (parse_verdict("pointwise", text).outcome, parse_verdict("pointwise", text).choice) == ("valid", "NEGATIVE")


@pytest.mark.parametrize(
    "arguments, query",
    [('{"query": "  graph   nets "}', "graph nets"), ('{"query": ""}', None), ('{"q": "x"}', None), ("not json", None), ('["graph"]', None)],
)
def test_a_search_call_without_a_usable_query_searches_nothing(arguments, query):
    assert read_query(ToolCall("c1", "search", arguments)) == query


def test_the_prompt_shows_the_idea_the_search_budget_and_the_prompted_judges_answer_contract():
    pointwise = first_messages(agent_prompt("pointwise"), (IDEA,), "text", 3, "arxiv")
    user = pointwise[-1]["content"]
    assert pointwise[0]["role"] == "system" and "search(query): it searches arXiv" in pointwise[0]["content"]
    assert IDEA.text in user and "at most 3 times" in user and '{"answer": "<yes or no>"}' in user and "{{" not in user
    assert "Search Semantic Scholar" in first_messages(agent_prompt("pointwise"), (IDEA,), "text", None, "semantic-scholar")[-1]["content"]
    assert "as often as you need" in first_messages(agent_prompt("pointwise"), (IDEA,), "text", None, "arxiv")[-1]["content"]
    pairwise = first_messages(agent_prompt("pairwise"), (IDEA, OTHER), "text", None, "arxiv")[-1]["content"]
    assert pairwise.index(IDEA.text) < pairwise.index(OTHER.text) and '{"answer": "<A or B>"}' in pairwise
    # the echoed prompt is no verdict
    assert parse_verdict("pointwise", user).outcome == "invalid" and parse_verdict("pairwise", pairwise).outcome == "invalid"
    assert agent_prompt("pointwise").digest != agent_prompt("pairwise").digest
    assert search_tool("arxiv").parameters["required"] == ["query"] and "Search arXiv" in search_tool("arxiv").description
    # an idea holding the agent's own placeholders is shown as written
    odd = Idea("i9", "Odd", "Braces {{source}} and {{search_limit}} in the text.", "d9")
    assert odd.text in first_messages(agent_prompt("pointwise"), (odd,), "text", 2, "arxiv")[-1]["content"]


# -- whole decisions against the mock LLM and the mock arXiv API ---------------------------------------

MPNN = entry("1704.01212", "Neural Message Passing for Quantum Chemistry", "2017-04-04")
THIRD = Idea("i3", "Contrastive pretraining for tables", "We pretrain table encoders contrastively.", "d3")
NOT_NOVEL = 'Message passing on molecules is known.\nPrior paper: Neural Message Passing for Quantum Chemistry\n{"answer": "no"}'


def scripted(plans: dict[str, list[Any]]) -> Callable[[dict[str, Any], int], Any]:
    """The mock LLM's `answer`: the plan whose key the conversation's user message holds, at the conversation's
    turn (assistant turns so far): a list of queries is one turn of search calls, a string the final answer."""

    def answer(body: dict[str, Any], nth: int) -> Any:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        key = next((k for k in plans if k in user), None)
        assert key is not None, f"no plan for {user[:200]!r}"
        step = plans[key][min(turn, len(plans[key]) - 1)]
        if isinstance(step, list):
            return {"content": None, "tool_calls": [{"name": "search", "arguments": {"query": q}} for q in step]}
        return step

    return answer


@pytest.fixture
def ax(arxiv):
    """The arXiv mock with the message-passing papers scripted."""
    arxiv.script("message passing", [MPNN, entry("1806.01261", "Relational inductive biases, deep learning, and graph networks", "2018-06-04")])
    return arxiv


@pytest.fixture
def llm(mock_llm, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test")
    return mock_llm


@pytest.fixture
def agent(build, llm, ax, search_for):
    """`agent(tasks=..., **args)`: a search-agent judge on the mock LLM and the arXiv mock (caches shared by
    every judge a test builds, so a second one is a re-run)."""

    def make(tasks=("pairwise", "pointwise"), **args: Any):
        return build("search-agent", "agent", tasks=tasks, **{"model": "mock", "base_url": llm.base_url, "api_key_env": "MOCK_API_KEY",
                                                              "backoff_s": 0.01, "search": search_for(ax, max_retries=1), **args})  # fmt: skip

    return make


def run(judge, pairs=(), points=()):
    try:
        return judge.judge(list(pairs), list(points))
    finally:
        judge.close()


def points(*ideas: Idea) -> list[PointItem]:
    return [PointItem("ds", i, "POSITIVE") for i in ideas]


def tool_texts(llm: MockLLM) -> list[str]:
    """Every tool result the model was shown, each once (the last request of a conversation holds them all)."""
    seen: list[str] = []
    for r in llm.requests:
        for t in tool_results(r.body):
            if t not in seen:
                seen.append(t)
    return seen


def test_pointwise_decisions_search_arxiv_cite_the_prior_paper_and_rerun_from_the_caches(agent, llm, ax):
    plans = {
        IDEA.text: [["message passing molecules"], ["graph networks chemistry"], NOT_NOVEL],
        OTHER.text: [["sparse attention protein folding"], 'Nothing like it was found.\n{"answer": "yes"}'],
        THIRD.text: [["contrastive table pretraining"], 'Tables were pretrained before.\nPrior paper: A Paper Nobody Found\n{"answer": "no"}'],
    }
    llm.answer = scripted(plans)
    out = run(agent(), points=points(IDEA, OTHER, THIRD))
    asked, searched = llm.count, ax.count
    again = run(agent(), points=points(IDEA, OTHER, THIRD))
    assert (llm.count, ax.count) == (asked, searched), "the rerun asked the LLM or arXiv"
    assert (asked, searched) == (3 + 2 + 2, 4)
    assert again.pointwise == out.pointwise, "the rerun's rows differ"
    rows = {r["idea_id"]: r for r in out.pointwise}
    assert [rows[i]["predicted"] for i in ("i1", "i2", "i3")] == ["NEGATIVE", "POSITIVE", "NEGATIVE"]
    assert (rows["i1"]["n_rounds"], rows["i1"]["n_queries"], rows["i2"]["n_rounds"], rows["i2"]["n_queries"]) == (3, 2, 2, 1)
    assert rows["i1"]["n_tokens"] > 0 and rows["i1"]["n_valid"] == 1
    # grounded: the cited paper is one the decision's own searches returned; the third cites one it never saw
    assert orjson.loads(rows["i1"]["citations"]) == [
        {"order": None, "vote": 0, "title": "Neural Message Passing for Quantum Chemistry", "doc_id": "arxiv:1704.01212", "retrieved": True}]
    assert orjson.loads(rows["i3"]["citations"]) == [{"order": None, "vote": 0, "title": "A Paper Nobody Found", "doc_id": None, "retrieved": False}]
    assert orjson.loads(rows["i2"]["citations"]) == []
    docs = [d for d in orjson.loads(rows["i1"]["evidence_docs"]) if d.get("role") != "dropped"]
    assert {(d["query"], d["doc_id"], d["rank"]) for d in docs} >= {("message passing molecules", "arxiv:1704.01212", 0)}
    assert {d["query"] for d in docs} == {"message passing molecules", "graph networks chemistry"}
    # the model was shown the papers, and every turn carried the tool and the conversation so far
    # ... quoted as data: a notice line, then the blocks between QUOTED markers
    assert any(t.startswith("Quoted material follows: search results") and "\n0: Neural Message Passing for Quantum Chemistry." in t
               for t in tool_texts(llm))
    assert all(r.body["tools"][0]["function"]["name"] == "search" for r in llm.requests)


def test_pairwise_decisions_answer_a_or_b_in_both_orders(agent, llm, ax):
    pair = PairItem("ds", "p1", IDEA, OTHER, gold_idea_id=OTHER.idea_id)
    plans = {
        f"Idea A:\n{IDEA.text}": [["message passing molecules"], 'Idea A is known.\nPrior paper: Neural Message Passing for Quantum Chemistry\n{"answer": "B"}'],
        f"Idea A:\n{OTHER.text}": [["sparse attention protein folding"], 'Idea A has no precedent.\n{"answer": "A"}'],
    }
    ax.script("sparse attention", [entry("2001.00001", "Sparse attention for proteins.", "2020-01-01"), entry("2004.05150", "Longformer", "2020-04-10")])
    llm.answer = scripted(plans)
    out = run(agent(tasks=("pairwise",)), pairs=[pair])
    assert llm.count == 4 and ax.count == 2
    assert not any("2001.00001" in t or "Sparse attention for proteins." in t for t in tool_texts(llm)), "an idea's own paper was shown"
    again = run(agent(tasks=("pairwise",)), pairs=[pair])
    assert llm.count == 4 and ax.count == 2, "the rerun asked the LLM or arXiv"
    assert again.pairwise == out.pairwise
    [row] = out.pairwise
    assert (row["verdict"], row["verdict_forward"], row["verdict_reverse"]) == ("i2", "i2", "i2")
    assert (row["votes_forward"], row["votes_reverse"], row["n_rounds"], row["n_queries"]) == (["i2"], ["i2"], 4, 2)
    assert orjson.loads(row["citations"]) == [
        {"order": "forward", "vote": 0, "title": "Neural Message Passing for Quantum Chemistry", "doc_id": "arxiv:1704.01212", "retrieved": True}]
    docs = orjson.loads(row["evidence_docs"])
    assert {d["query"] for d in docs} == {"message passing molecules", "sparse attention protein folding"}
    assert [(d["doc_id"], d["reason"]) for d in docs if d.get("role") == "dropped"] == [("arxiv:2001.00001", "own paper")]


def test_past_max_queries_the_tool_answers_that_no_more_searches_are_allowed(agent, llm, ax):
    plans = {IDEA.text: [["message passing molecules", "graph networks chemistry"], ["molecule property prediction"], NOT_NOVEL]}
    llm.answer = scripted(plans)
    out = run(agent(tasks=("pointwise",), max_queries=1), points=points(IDEA))
    shown = tool_texts(llm)
    prompt = llm.requests[0].body["messages"][-1]["content"]
    assert ax.count == 1 and "at most 1 time" not in prompt and "search once" in prompt
    [row] = out.pointwise
    assert (row["predicted"], row["n_queries"], row["n_rounds"]) == ("NEGATIVE", 1, 3)
    assert shown[1:] == [NO_MORE_SEARCHES.format(n=1)] and "Neural Message Passing" in shown[0]


def test_a_search_failing_after_its_retries_ends_the_decision_as_an_error_not_a_verdict(agent, llm, ax):
    ax.add_fault("protein", "500")
    plans = {OTHER.text: [["sparse attention protein folding"], 'Nothing like it.\n{"answer": "yes"}'],
             IDEA.text: [["message passing molecules"], NOT_NOVEL]}  # fmt: skip
    llm.answer = scripted(plans)
    out = run(agent(tasks=("pointwise",)), points=points(IDEA, OTHER))
    rows = {r["idea_id"]: r for r in out.pointwise}
    assert (rows["i2"]["predicted"], rows["i2"]["n_error"], rows["i2"]["error_reasons"]) == ("none", 1, ["search: HTTP 500"])
    assert rows["i1"]["predicted"] == "NEGATIVE" and list(out.failed_calls.values()) == ["search: HTTP 500"]
    ax.reset()  # the API recovers (requests forgotten too): the failed search is asked again, the turns before it come from the cache
    asked = llm.count
    again = {r["idea_id"]: r for r in run(agent(tasks=("pointwise",)), points=points(IDEA, OTHER)).pointwise}
    assert llm.count == asked + 1 and ax.count == 1  # only i2's search and final turn: nothing else is asked again
    assert again["i2"]["predicted"] == "POSITIVE" and again["i2"]["n_error"] == 0


def test_reasoning_effort_is_sent_with_every_turn_and_enters_the_config(agent, llm, ax):
    plans = {IDEA.text: [["message passing molecules"], NOT_NOVEL]}
    llm.answer = scripted(plans)
    judge = agent(tasks=("pointwise",), reasoning="low")
    plain = agent(tasks=("pointwise",))
    run(judge, points=points(IDEA))
    plain.close()
    assert [r.body.get("reasoning_effort") for r in llm.requests] == ["low", "low"]
    assert judge.config()["reasoning"] == "low" and judge.config_digest != plain.config_digest
    with pytest.raises(ConfigError, match="reasoning"):
        agent(reasoning="low", sampling={"reasoning_effort": "high"})


def test_a_tool_call_without_a_query_or_to_an_unknown_tool_searches_nothing(agent, llm, ax):
    def answer(body: dict[str, Any], nth: int) -> Any:
        if tool_results(body):
            return '{"answer": "yes"}'
        return {"tool_calls": [{"name": "search", "arguments": {"q": "x"}}, {"name": "browse", "arguments": {"url": "x"}}]}

    llm.answer = answer
    [row] = run(agent(tasks=("pointwise",)), points=points(IDEA)).pointwise
    shown = tool_texts(llm)
    assert ax.count == 0 and (row["predicted"], row["n_queries"], row["n_rounds"]) == ("POSITIVE", 0, 2)
    assert shown == [BAD_ARGUMENTS, UNKNOWN_TOOL.format(name="browse")]


def test_a_decision_without_an_answer_after_max_rounds_is_undecided(agent, llm, ax):
    plans = {IDEA.text: [["message passing molecules"]]}  # searches forever
    llm.answer = scripted(plans)
    [row] = run(agent(tasks=("pointwise",), max_rounds=3), points=points(IDEA)).pointwise
    assert llm.count == 3
    assert (row["predicted"], row["n_undecided"], row["n_valid"], row["n_rounds"]) == ("none", 1, 0, 3)


def test_the_agent_speaks_anthropic_messages_tool_use_too(agent, llm, ax):
    plans = {IDEA.text: [["message passing molecules"], NOT_NOVEL]}
    llm.answer = scripted(plans)
    [row] = run(agent(tasks=("pointwise",), provider="anthropic", base_url=llm.root_url), points=points(IDEA)).pointwise
    second = llm.requests[1].body
    assert (row["predicted"], row["n_queries"], orjson.loads(row["citations"])[0]["retrieved"]) == ("NEGATIVE", 1, True)
    assert second["messages"][1]["content"][-1]["type"] == "tool_use" and second["messages"][2]["content"][0]["type"] == "tool_result"


def test_a_10_mb_search_answer_puts_at_most_the_bound_into_any_prompt(build, llm, s2, search_for):
    huge = "z" * 10_000_000  # one "word"
    s2.script("message passing", [paper("big", huge, 2019, abstract=huge)])
    llm.answer = scripted({IDEA.text: [["message passing molecules", "message passing again"], 'Known.\n{"answer": "no"}']})
    judge = build("search-agent", "agent", tasks=("pointwise",), model="mock", base_url=llm.base_url, api_key_env="MOCK_API_KEY",
                  search=search_for(s2), max_doc_chars=2000, max_turn_chars=4000)  # fmt: skip
    [row] = run(judge, points=points(IDEA)).pointwise
    assert row["predicted"] == "NEGATIVE" and row["n_queries"] == 2
    # two tool results in one turn share the turn's bound; the prompt's own text is well under 4000 characters
    assert sum(len(t) for t in tool_texts(llm)) < 4000 + 2 * 400
    assert max(len(orjson.dumps(r.body)) for r in llm.requests) < 4000 + 6000
    assert row["evidence_truncated_chars"] > 2 * (10_000_000 - 2000)
