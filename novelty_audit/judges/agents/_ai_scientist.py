"""`ai-scientist`: the AI-Scientist novelty check as the Ai2 study ran it, on the call and search layers.

Up to `max_rounds` rounds; every round the model sees the idea and the results of its last query and answers
either a search query (a JSON block `{"Query": "..."}`) or `Decision made: novel` / `Decision made: not novel`
(the latter naming the earlier paper on a `Cited paper: <title>` line). Queries go to Semantic Scholar paper
search by default (the idea's own title and papers after `search.cutoff` left out), results shown in the
AI-Scientist layout (`Paper.block`). No decision after the last round is `undecided`, never a vote.
Pointwise only. Differences from the original: docs/design/agents.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field

from ...artifacts import digest_bytes
from ...llm import TRUNCATING_FINISH, Request
from ...search import NO_PAPERS, S2SearchArgs, SearchArgs
from ...templates import packaged
from .._base import NEGATIVE, POSITIVE, JudgeContext, parse_args
from .._guard import own_lines, own_text
from .._protocol import Call
from ._base import AgentArgs, AgentJudge, AgentRun, Tally

__all__ = ["AiScientistArgs", "AiScientistJudge", "Turn", "ai_scientist", "read_turn"]

PROMPT = "agent-ai-scientist-v1"
PARSER = "own-last-line-v2"
"""The decision rule (`read_turn`): v2 reads only the model's own last lines (v1 took the phrase anywhere)."""
NO_QUERY_YET = "(none yet)"
SOURCE_NAMES = {"semantic-scholar": "Semantic Scholar", "arxiv": "arXiv"}
NOTHING_READ = "Your last answer held neither a JSON query nor a decision. Answer in the layout asked."

_DECISION = re.compile(r"[\W_]*decision\s+made\s*:[\s*_`]*(not\s+novel|novel)[\s*_`.!]*", re.IGNORECASE)
_CITED = re.compile(r"[\W_]*(?:cited|prior)\s+paper[\W_]*:\s*(.+?)\s*", re.IGNORECASE)
_JSON_BLOCK = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL | re.IGNORECASE)
_BARE_JSON = re.compile(r"\{[^{}]*\"query\"[^{}]*\}", re.DOTALL | re.IGNORECASE)


class AiScientistArgs(AgentArgs):
    """Arguments of `ai-scientist` (besides the agent base's model, endpoint, sampling, votes, price, local)."""

    search: SearchArgs = Field(default_factory=lambda: S2SearchArgs(source="semantic-scholar"))
    """Where queries go: Semantic Scholar by default (`{source: semantic-scholar, cutoff: YYYY-MM-DD}`), or arXiv."""
    max_rounds: int = Field(10, ge=1)
    """Rounds (LLM calls) one decision may take; no decision by then is `undecided`."""
    max_chars: int = Field(600, ge=50)
    """Characters of each abstract shown."""


class Turn:
    """What one answer says: a decision (POSITIVE / NEGATIVE, with the cited title), a query, or neither."""

    def __init__(self, decision: str | None = None, query: str | None = None, cited: str | None = None):
        self.decision = decision
        self.query = query
        self.cited = cited


def read_turn(text: str | None) -> Turn:
    """Read one answer. A decision is the model's own line in the place the prompt asks for it: the last line
    (`Decision made: novel.`), or the line before a last `Cited paper: <title>` line. Only the model's own
    lines count (`judges._guard.own_lines`): quoted search results it echoed, `>` quotes and code fences are
    never a decision, so a retrieved title holding "Decision made: novel" decides nothing. A decision wins over
    a query; the query is the `Query` of the last JSON block of the model's own text (a bare JSON object holding
    "Query" also counts)."""
    lines = own_lines(text)
    cited: str | None = None
    if len(lines) >= 2 and _CITED.fullmatch(lines[-1]) and _DECISION.fullmatch(lines[-2]):
        cited = _CITED.fullmatch(lines[-1]).group(1)  # type: ignore[union-attr]
        lines = lines[:-1]
    found = _DECISION.fullmatch(lines[-1]) if lines else None
    if found:
        decision = NEGATIVE if found.group(1).lower().startswith("not") else POSITIVE
        title = cited.strip().strip("*_\"'`“”").strip() if cited else None
        if title and title.startswith("<") and title.endswith(">"):
            title = None  # the prompt's placeholder echoed back names no paper
        return Turn(decision=decision, cited=(title or None) if decision == NEGATIVE else None)
    mine = own_text(text)
    for block in reversed([*_JSON_BLOCK.findall(mine), *_BARE_JSON.findall(mine)]):
        try:
            data = json.loads(block)
        except ValueError:
            continue
        if isinstance(data, dict):
            query = next((v for k, v in data.items() if k.lower() == "query"), None)
            if isinstance(query, str) and query.strip():
                return Turn(query=" ".join(query.split()))
    return Turn()


class AiScientistJudge(AgentJudge):
    """The `ai-scientist` backend: one conversation of up to `max_rounds` turns per decision."""

    backend = "ai-scientist"
    tasks = ("pointwise",)

    def __init__(self, ctx: JudgeContext, args: AiScientistArgs):
        super().__init__(ctx, args)
        self.args: AiScientistArgs = args
        source = packaged(f"{PROMPT}.txt")
        system, user = source.text.split("[user]", 1)
        self.system = system.replace("[system]", "", 1).strip()
        self.user = user.strip("\n")
        self.prompt_digest = digest_bytes(source.data)

    def knobs(self) -> dict[str, Any]:
        a = self.args
        return {"prompt": PROMPT, "prompt_digest": self.prompt_digest, "max_rounds": a.max_rounds, "max_chars": a.max_chars,
                "parser": PARSER}

    def _fill(self, text: str, **values: Any) -> str:
        # One pass: a value (an idea, an abstract) is never read again as a placeholder.
        return re.sub(r"\{\{(\w+)\}\}", lambda m: str(values[m.group(1)]), text)

    async def run_one(self, call: Call) -> AgentRun:
        a = self.args
        idea = call.shown[0]
        system = self._fill(self.system, max_rounds=a.max_rounds, source=SOURCE_NAMES[a.search.source])
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        tally = Tally()
        last_query, results = NO_QUERY_YET, NO_QUERY_YET
        for round_no in range(1, a.max_rounds + 1):
            messages.append({"role": "user", "content": self._fill(
                self.user, round=round_no, max_rounds=a.max_rounds, idea=idea.text, last_query=last_query, results=results)})  # fmt: skip
            request = Request(messages=list(messages), sampling=a.sampling, replicate=call.vote_index,
                              label=f"pointwise {call.item_id} round {round_no}", tag=call)  # fmt: skip
            reply = await self.ask_turn(tally, request)
            if not reply.ok:
                return tally.failed(reply)
            turn = read_turn(reply.text)
            if turn.decision is not None:
                cited = {"title": turn.cited, "doc_id": None} if turn.cited else None
                return tally.end("valid", choice=turn.decision, citation=cited)
            if turn.query is not None and round_no == a.max_rounds:
                # No turn is left to read the results: the query is not run, so nothing unseen becomes evidence.
                break
            if turn.query is None:
                if reply.entry.get("outcome") == "refusal":
                    return tally.end("refusal", detail="provider flagged a refusal")
                if reply.finish_reason in TRUNCATING_FINISH:
                    return tally.end("truncated", detail=f"round {round_no} cut at max_tokens={a.sampling.max_tokens}")
                messages.append(reply.turn())
                results = NOTHING_READ
                continue
            found = await self.search.search_async(turn.query, exclude_title=idea.title, plant=self.planted(call.shown))
            if not found.ok:
                return tally.end("error", error_reason=f"search: {found.failure}", detail=f"search {turn.query!r} failed: {found.failure}")
            tally.searches.append(found)
            messages.append(reply.turn())
            last_query = json.dumps(turn.query, ensure_ascii=False)
            results = self.show(tally, [f"{i}: {p.block(a.max_chars)}" for i, p in enumerate(found.papers)], "search results",
                                empty=NO_PAPERS)  # fmt: skip
        return tally.end("undecided", detail=f"no decision after max_rounds={a.max_rounds} rounds")


def ai_scientist(ctx: JudgeContext, **args: Any) -> AiScientistJudge:
    """`ai-scientist`: the AI-Scientist novelty check (Semantic Scholar rounds, then novel / not novel)."""
    return AiScientistJudge(ctx, parse_args(AiScientistArgs, args, ctx))
