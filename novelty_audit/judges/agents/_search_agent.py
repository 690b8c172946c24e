"""`search-agent`: a tool-calling loop in which the model searches arXiv until it answers.

One decision (one vote of one idea, or of one pair in one presentation order):
1. the model gets the idea (or ideas A and B) and one tool, `search(query)`, with the prompted judges' answer
   contract (`format-brief-v2`: a short reasoning, then the JSON verdict on the last line);
2. each `search` call goes to the search layer (arXiv by default; the cutoff and the ideas' own papers left
   out) and its numbered paper blocks come back as the tool's result; after `max_queries` searches (null: no
   cap) the tool answers that no more searches are allowed;
3. the first turn without a tool call is the answer, read by `parse_verdict` (pointwise yes/no, pairwise A/B
   for the more novel idea, both orders as the VoteJudge asks them). A `Prior paper: <title>` line before the
   verdict is the decision's citation, which a not-novel pointwise answer is asked for;
4. no answer after `max_rounds` turns is `undecided`; a search still failing after its retries ends the
   decision as `error` ("search: HTTP 429"), never a verdict.

Every turn is a cached call of the call layer (the conversation so far, the tool and the sampling decide its
key) and every query a cached search, so a re-run asks nothing. Decisions: docs/design/agents.md ("search-agent").
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Literal

import orjson
from pydantic import Field, model_validator

from ...artifacts import digest_bytes
from ...config import REASONING_EFFORTS
from ...llm import (
    TRUNCATING_FINISH,
    Reply,
    Request,
    Sampling,
    Tool,
    ToolCall,
    check_anthropic_sampling,
    tool_result,
)
from ...search import NO_PAPERS, ArxivSearchArgs, SearchArgs
from ...templates import packaged
from .._base import Idea
from .._prompts import PromptTemplate, parse_verdict
from ._base import AgentArgs, AgentJudge, AgentRun, Tally

__all__ = [
    "SearchAgentArgs",
    "SearchAgentJudge",
    "agent_prompt",
    "parse_citation",
    "read_query",
    "search_agent",
    "search_tool",
]

PROMPT_VERSION = "v1"
FORMAT_FILE = "format-brief-v2.txt"
"""The prompted judges' output contract (a short reasoning, the JSON verdict on the last line): the agent
needs the reasoning lines for its citation, so the `none` contract is not offered."""

SOURCE_NAMES = {"arxiv": "arXiv", "semantic-scholar": "Semantic Scholar"}
"""How the prompt and the tool name the search source ({{source}})."""


def search_tool(source: str) -> Tool:
    """The one tool the model may call; its definition is part of every turn's call key."""
    return Tool(
        "search",
        f"Search {SOURCE_NAMES[source]} for papers. Returns the matching papers, numbered, each with its title, authors, year and abstract.",
        {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "A short keyword query, e.g. graph neural networks molecule property prediction"}},
            "required": ["query"],
        },
    )


NO_MORE_SEARCHES = "No more searches are allowed: the limit of {n} searches is reached. Answer now with what you have found."
BAD_ARGUMENTS = 'Nothing was searched: the search tool takes one argument, "query", a non-empty string.'
UNKNOWN_TOOL = "Nothing was run: there is no tool named {name!r}; the only tool is search(query)."
SEARCH_LIMIT = {None: "You may search as often as you need.", 0: "You may not search: decide from the idea alone.", 1: "You may search once."}
"""The prompt's sentence on the search budget ({{search_limit}}); other caps: `You may search at most N times.`"""


class SearchAgentArgs(AgentArgs):
    """Arguments of the `search-agent` backend (besides the agent base's model, endpoint, sampling, votes,
    price, local and `search`)."""

    search: SearchArgs = Field(default_factory=lambda: ArxivSearchArgs(source="arxiv"))
    """Where `search(query)` looks: the arXiv API by default (`{source: arxiv, cutoff: ...}`), or
    `{source: semantic-scholar, ...}`."""
    max_queries: int | None = Field(None, ge=0)
    """Searches one decision may run; null: no cap (the study's unbounded agent). Past the cap the tool answers
    that no more searches are allowed."""
    max_rounds: int = Field(30, ge=1)
    """LLM turns one decision may take; no answer by then is `undecided` (a runaway loop costs at most this)."""
    reasoning: Literal[REASONING_EFFORTS] | None = None  # type: ignore[valid-type]
    """Reasoning effort (none | minimal | low | medium | high | xhigh | max): `reasoning_effort` of OpenAI-compatible
    chat, extended thinking with the `anthropic` provider (docs/judges.md); null: not sent. The same as
    `sampling.reasoning_effort`, which it fills in."""
    orders: Literal["both", "forward", "reverse"] = "both"
    """Pairwise presentation orders asked (each a decision of its own), as for the prompted judges."""
    input_form: Literal["text", "plan"] = "text"
    """How each idea is laid out: its text as published, or as a research plan."""
    max_chars: int = Field(600, ge=50)
    """Characters of each abstract shown in a search result."""

    @model_validator(mode="after")
    def _one_effort(self) -> SearchAgentArgs:
        effort = self.sampling.reasoning_effort
        if self.reasoning is not None and effort is not None and effort != self.reasoning:
            raise ValueError(f"reasoning {self.reasoning!r} and sampling.reasoning_effort {effort!r} disagree; set one")
        if self.provider == "anthropic":
            check_anthropic_sampling(self.turn_sampling())  # the effort becomes a thinking budget max_tokens must exceed
        return self

    def turn_sampling(self) -> Sampling:
        """The sampling of every turn: `sampling` with the reasoning effort filled in."""
        if self.reasoning is None or self.sampling.reasoning_effort == self.reasoning:
            return self.sampling
        return self.sampling.model_copy(update={"reasoning_effort": self.reasoning})


# -- prompts -----------------------------------------------------------------------------------------


def agent_prompt(task: Literal["pairwise", "pointwise"]) -> PromptTemplate:
    """The packaged agent template `agent-search-<task>-v1.txt` with the prompted judges' output contract
    (`format-brief-v2.txt` showing `verdict-<task>-v1.txt`); its digest covers the three files' bytes."""
    body = packaged(f"agent-search-{task}-{PROMPT_VERSION}.txt").data
    fmt = packaged(FORMAT_FILE).data
    example = packaged(f"verdict-{task}-v1.txt").data
    head, user = body.decode("utf-8").split("[user]", 1)
    answer_format = fmt.decode("utf-8").strip().replace("{{verdict_example}}", example.decode("utf-8").strip())
    return PromptTemplate(
        task=task,
        name=f"agent-search-{PROMPT_VERSION}",
        reasoning="brief",
        system=head.replace("[system]", "", 1).strip(),
        user=user.strip("\n"),
        answer_format=answer_format,
        digest=digest_bytes(body + b"\0" + fmt + b"\0" + example),
    )


def search_limit(max_queries: int | None) -> str:
    """The prompt's sentence on how many searches a decision may run."""
    return SEARCH_LIMIT.get(max_queries, f"You may search at most {max_queries} times.")


def first_messages(template: PromptTemplate, shown: tuple[Idea, ...], form: str, max_queries: int | None, source: str) -> list[dict[str, Any]]:
    """The conversation's opening: system text and the idea(s) with the search source and budget and the
    answer contract. The agent's placeholders are filled in the template before the ideas go in, so an idea
    text holding "{{source}}" stays as written."""

    def fill(text: str) -> str:
        return text.replace("{{source}}", SOURCE_NAMES[source]).replace("{{search_limit}}", search_limit(max_queries))

    filled = dataclasses.replace(template, system=fill(template.system), user=fill(template.user))
    return filled.render(shown, form=form)


# -- reading the model -------------------------------------------------------------------------------


def read_query(call: ToolCall) -> str | None:
    """The query of a `search` tool call (whitespace collapsed), or None when its arguments hold none."""
    try:
        args = orjson.loads(call.arguments)
    except orjson.JSONDecodeError:
        return None
    query = args.get("query") if isinstance(args, dict) else None
    if not isinstance(query, str) or not query.split():
        return None
    return " ".join(query.split())


_CITATION = re.compile(r"^[\W_]*prior\s+(?:paper|work)[*_\s]*[:=-][*_\s]*(.*?)[\s*_`]*$", re.IGNORECASE)
_ARXIV_ID = re.compile(r"(?:arxiv\s*[:/]?\s*|abs/)?\b(\d{4}\.\d{4,5}|[a-z][a-z.-]+/\d{7})(?:v\d+)?\b", re.IGNORECASE)
_NONE = {"", "none", "n/a", "na", "-", "null", "no prior paper"}


def parse_citation(text: str | None) -> dict[str, str | None] | None:
    """The paper an answer cites on its last `Prior paper: <title>` line: `{title, doc_id}` (doc_id
    `arxiv:<id>` when the line holds an arXiv identifier, else None), or None when no paper is named (no such
    line, `none`, or the echoed placeholder `<title of that paper>`)."""
    if not text:
        return None
    found = None
    for line in text.splitlines():
        m = _CITATION.match(line.strip())
        if m:
            found = m.group(1)
    if found is None:
        return None
    doc_id = None
    ident = _ARXIV_ID.search(found)
    if ident:
        doc_id = f"arxiv:{ident.group(1)}"
        found = found[: ident.start()] + found[ident.end():]
    title = found.strip().strip(" \t\"'“”‘’*_`()[],;:.-—").strip()
    if title.lower() in _NONE or (title.startswith("<") and title.endswith(">")):
        title = ""
    if not title and doc_id is None:
        return None
    return {"title": title or None, "doc_id": doc_id}


def classify(task: Literal["pairwise", "pointwise"], reply: Reply) -> tuple[str, Any, str | None]:
    """(outcome, choice, note) of the final answer, as the prompted judges read theirs: `parse_verdict`, a
    provider-flagged refusal, and an answer cut at max_tokens without a verdict as `truncated`."""
    parsed = parse_verdict(task, reply.text)
    outcome, choice, note = parsed.outcome, parsed.choice, parsed.note
    refused = reply.entry.get("outcome") == "refusal"  # the layer's plain reading: the provider flagged it
    if refused and outcome != "valid":
        outcome, note = "refusal", f"provider flagged a refusal (finish_reason={reply.finish_reason})"
    elif outcome != "valid" and reply.finish_reason in TRUNCATING_FINISH:
        outcome, note = "truncated", f"cut at max_tokens (finish_reason={reply.finish_reason}) before a verdict: {note}"
    return outcome, choice, note


# -- the judge ---------------------------------------------------------------------------------------


class SearchAgentJudge(AgentJudge):
    """The `search-agent` backend: each decision is a tool-calling conversation over the search layer."""

    backend = "search-agent"

    def __init__(self, ctx: Any, args: SearchAgentArgs):
        super().__init__(ctx, args, orders=args.orders)
        self.args: SearchAgentArgs = args
        self.templates: dict[str, PromptTemplate] = {task: agent_prompt(task) for task in ("pairwise", "pointwise")}
        self.turn_sampling = args.turn_sampling()
        self.tool = search_tool(args.search.source)

    def knobs(self) -> dict[str, Any]:
        """The backend's own knobs in the config digest (the base adds model, endpoint, sampling, votes, search)."""
        a = self.args
        return {
            "prompt": f"agent-search-{PROMPT_VERSION}",
            "prompt_digests": {task: t.digest for task, t in sorted(self.templates.items())},
            "tool": self.tool.as_dict(),
            "max_queries": a.max_queries,
            "max_rounds": a.max_rounds,
            "reasoning": a.reasoning,
            "input_form": a.input_form,
            "max_chars": a.max_chars,
        }

    async def run_one(self, call: Any) -> AgentRun:
        """One decision: turns until the model answers without a tool call (or `max_rounds` pass)."""
        a = self.args
        messages = first_messages(self.templates[call.task], call.shown, a.input_form, a.max_queries, a.search.source)
        titles = tuple(idea.title for idea in call.shown)
        run = Tally()
        for round_no in range(1, a.max_rounds + 1):
            request = Request(messages=list(messages), sampling=self.turn_sampling, replicate=call.vote_index, tools=(self.tool,),
                              label=f"{call.task} {call.item_id} round {round_no}", tag=call)  # fmt: skip
            reply = await self.ask_turn(run, request)
            if not reply.ok:
                return run.failed(reply)
            if not reply.tool_calls:
                outcome, choice, note = classify(call.task, reply)
                return run.end(outcome, choice=choice, detail=note, citation=parse_citation(reply.text))
            messages.append(reply.turn())
            share = max(1, a.max_turn_chars // len(reply.tool_calls))  # the turn's bound, split over its tool results
            for tool_call in reply.tool_calls:
                answer, failure = await self._tool(tool_call, run, titles, share, self.planted(call.shown))
                if failure is not None:
                    return run.end("error", error_reason=f"search: {failure}", detail=f"search {read_query(tool_call)!r} failed: {failure}")
                messages.append(tool_result(tool_call.id, answer))
        return run.end("undecided", detail=f"no answer after max_rounds={a.max_rounds} turns")

    async def _tool(self, call: ToolCall, run: Tally, titles: tuple[str, ...], max_chars: int, plant: tuple[Any, ...] = ()) -> tuple[str, str | None]:
        """(the tool's answer, a search failure or None) for one tool call."""
        if call.name != self.tool.name:
            return UNKNOWN_TOOL.format(name=call.name), None
        query = read_query(call)
        if query is None:
            return BAD_ARGUMENTS, None
        if self.args.max_queries is not None and len(run.searches) >= self.args.max_queries:
            return NO_MORE_SEARCHES.format(n=self.args.max_queries), None
        result = await self.search.search_async(query, exclude_title=titles, plant=plant)  # a pair: both ideas' own papers
        if not result.ok:
            return "", result.failure
        run.searches.append(result)
        blocks = [f"{i}: {p.block(self.args.max_chars)}" for i, p in enumerate(result.papers)]
        return self.show(run, blocks, "search results", empty=NO_PAPERS, max_turn_chars=max_chars), None


def search_agent(ctx: Any, **args: Any) -> SearchAgentJudge:
    """`search-agent`: the model searches arXiv with a tool until it answers (pointwise and pairwise)."""
    from .._base import parse_args

    return SearchAgentJudge(ctx, parse_args(SearchAgentArgs, args, ctx))
