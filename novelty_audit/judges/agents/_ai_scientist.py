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
from ...search import S2SearchArgs, SearchArgs
from ...templates import packaged
from .._base import NEGATIVE, POSITIVE, JudgeContext, parse_args
from .._protocol import Call
from ._base import AgentArgs, AgentJudge, AgentRun, Tally

__all__ = ["AiScientistArgs", "AiScientistJudge", "Turn", "ai_scientist", "read_turn"]

PROMPT = "agent-ai-scientist-v1"
NO_QUERY_YET = "(none yet)"
SOURCE_NAMES = {"semantic-scholar": "Semantic Scholar", "arxiv": "arXiv"}
NOTHING_READ = "Your last answer held neither a JSON query nor a decision. Answer in the layout asked."

_DECISION = re.compile(r"decision\s+made\s*:\s*\**\s*(not\s+novel|novel)\b", re.IGNORECASE)
_CITED = re.compile(r"^\W*(?:cited|prior)\s+paper\W*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
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
    """Read one answer as the original did: a decision wins over a query; the query is the `Query` of the
    JSON block (a bare JSON object holding "Query" also counts); a not-novel decision's `Cited paper:` line."""
    text = text or ""
    found = _DECISION.search(text)
    if found:
        decision = NEGATIVE if found.group(1).lower().startswith("not") else POSITIVE
        cited = _CITED.search(text[found.end():]) or _CITED.search(text)
        title = cited.group(1).strip().strip("*_\"'`“”").strip() if cited else None
        if title and title.startswith("<") and title.endswith(">"):
            title = None  # the prompt's placeholder echoed back names no paper
        return Turn(decision=decision, cited=(title or None) if decision == NEGATIVE else None)
    for block in [*_JSON_BLOCK.findall(text), *_BARE_JSON.findall(text)]:
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
        return {"prompt": PROMPT, "prompt_digest": self.prompt_digest, "max_rounds": a.max_rounds, "max_chars": a.max_chars}

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
            if turn.query is None:
                if reply.entry.get("outcome") == "refusal":
                    return tally.end("refusal", detail="provider flagged a refusal")
                if reply.finish_reason in TRUNCATING_FINISH:
                    return tally.end("truncated", detail=f"round {round_no} cut at max_tokens={a.sampling.max_tokens}")
                messages.append(reply.turn())
                results = NOTHING_READ
                continue
            found = await self.search.search_async(turn.query, exclude_title=idea.title)
            if not found.ok:
                return tally.end("error", error_reason=f"search: {found.failure}", detail=f"search {turn.query!r} failed: {found.failure}")
            tally.searches.append(found)
            messages.append(reply.turn())
            last_query, results = json.dumps(turn.query, ensure_ascii=False), found.text(a.max_chars)
        return tally.end("undecided", detail=f"no decision after max_rounds={a.max_rounds} rounds")


def ai_scientist(ctx: JudgeContext, **args: Any) -> AiScientistJudge:
    """`ai-scientist`: the AI-Scientist novelty check (Semantic Scholar rounds, then novel / not novel)."""
    return AiScientistJudge(ctx, parse_args(AiScientistArgs, args, ctx))
