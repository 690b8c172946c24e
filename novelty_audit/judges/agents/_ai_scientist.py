"""`ai-scientist`: the AI-Scientist novelty check REBUILT after the original (mode `rebuilt`, the default), or
run from the original's own prompt templates and decision rule read from your checkout (mode `faithful`).

Rebuilt: up to `max_rounds` rounds; every round the model sees the idea and the results of its last query and answers
either a search query (a JSON block `{"Query": "..."}`) or `Decision made: novel` / `Decision made: not novel`
(the latter naming the earlier paper on a `Cited paper: <title>` line). Queries go to Semantic Scholar paper
search by default (the idea's own title and papers after `search.cutoff` left out), results shown in the
AI-Scientist layout (`Paper.block`). No decision after the last round is `undecided`, never a vote.
Pointwise only. The rebuilt prompt is this project's own (another persona, a required `Cited paper:` line);
every difference from the original, point by point: docs/design/agents.md.

Faithful (`mode: faithful`, `original: {path, commit, file, sha256, ...}`): the system and round templates and
the decision phrases are read from the original's file in your checkout (`_original.py`; the project ships no
copy), with the original's sampling (temperature 0.75, 4096 tokens) unless `sampling` is set, and the cutoff
passed to the search API (`search.cutoff_in_query`). Kept from the project in both modes: fetched text quoted
and bounded, and a decision phrase read only in the model's own lines (never in quoted results).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import Field, model_validator

from ...artifacts import digest_bytes
from ...llm import TRUNCATING_FINISH, Request, Sampling
from ...search import NO_PAPERS, S2SearchArgs, SearchArgs
from ...templates import packaged
from .._base import NEGATIVE, POSITIVE, JudgeContext, parse_args
from .._guard import own_lines, own_text
from .._protocol import Call
from ._base import AgentArgs, AgentJudge, AgentRun, Tally
from ._original import Original, OriginalFiles, load_original

__all__ = ["AiScientistArgs", "AiScientistJudge", "Turn", "ai_scientist", "read_turn", "read_turn_original"]

PROMPT = "agent-ai-scientist-v2"
"""v2 asks for the decision as the answer's last line (or the line before the `Cited paper:` line), where the
parser reads it; v1 asked only for "a line of its own"."""
PARSER = "own-last-line-v2"
"""The decision rule (`read_turn`): v2 reads only the model's own last lines (v1 took the phrase anywhere)."""
FAITHFUL_PARSER = "original-phrases-own-lines-v1"
"""The faithful mode's rule (`read_turn_original`): the original's phrases, anywhere in the model's own lines."""
NO_QUERY_YET = "(none yet)"
SOURCE_NAMES = {"semantic-scholar": "Semantic Scholar", "arxiv": "arXiv"}
NOTHING_READ = ("Your last answer held neither a JSON query nor a decision line at its end. Answer in the layout asked: "
                "a decision is the last line (a not novel one followed only by its Cited paper line).")

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
    """Characters of each abstract shown (rebuilt mode; the faithful mode shows whole abstracts, within max_doc_chars)."""
    mode: Literal["rebuilt", "faithful"] = "rebuilt"
    """rebuilt: this project's prompt and decision line; faithful: the original's templates and decision phrases,
    read from `original` (docs/design/agents.md)."""
    original: OriginalFiles | None = None
    """faithful mode only: your checkout of the original repository and the pinned file holding its prompts."""
    task_description: str = ""
    """faithful mode: what the original's system template gets for `{task_description}` (its experiment's task)."""

    @model_validator(mode="after")
    def _faithful(self) -> AiScientistArgs:
        if (self.mode == "faithful") != (self.original is not None):
            raise ValueError("mode: faithful needs `original` (your checkout of the original repository), and only it takes one")
        if self.mode == "faithful" and "sampling" not in self.model_fields_set:
            # The original's defaults (its get_response_from_llm): temperature 0.75, 4096 tokens.
            object.__setattr__(self, "sampling", Sampling(temperature=0.75, max_tokens=4096))
        if self.mode == "faithful" and not isinstance(self.search, S2SearchArgs):
            raise ValueError("mode: faithful searches Semantic Scholar, as the original did (search.source: semantic-scholar)")
        if self.mode == "faithful" and not self.search.cutoff_in_query and "cutoff_in_query" not in self.search.model_fields_set:
            object.__setattr__(self, "search", self.search.model_copy(update={"cutoff_in_query": True}))
        return self


FAITHFUL_FIELDS = {"system": {"num_rounds", "task_description", "code"},
                   "user": {"current_round", "num_rounds", "idea", "last_query_results"}}
"""The `{field}`s the faithful mode fills in the original's templates (`code`: empty, there is no experiment file)."""


def read_turn_original(text: str | None, phrases: tuple[tuple[str, str], ...]) -> Turn:
    """Read one answer by the original's rule: the first of its decision phrases (in the order it tests them)
    found anywhere in the answer, lower-cased, wins; else the `Query` of the answer's JSON. Unlike the original,
    only the model's own lines count (`judges._guard.own_lines`): a phrase in quoted results it echoed, in a `>`
    quote or in a code fence decides nothing."""
    low = "\n".join(own_lines(text)).lower()
    for phrase, choice in phrases:
        if phrase in low:
            return Turn(decision=choice)
    return Turn(query=read_turn(own_text(text)).query)


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
        self.original: Original | None = None
        """faithful mode: the original's templates and decision phrases, read from the user's checkout."""
        if args.original is not None:
            self.original = load_original(args.original, judge=ctx.name, fields=FAITHFUL_FIELDS)
            self.prompt_digest = self.original.digest
            return
        source = packaged(f"{PROMPT}.txt")
        system, user = source.text.split("[user]", 1)
        self.system = system.replace("[system]", "", 1).strip()
        self.user = user.strip("\n")
        self.prompt_digest = digest_bytes(source.data)

    def knobs(self) -> dict[str, Any]:
        a = self.args
        if a.original is not None:
            o = a.original  # its path is where this machine keeps the checkout: the file's sha256 decides, not where
            return {"mode": "faithful", "original": o.model_dump(exclude={"path"}), "prompt_digest": self.prompt_digest,
                    "task_description": a.task_description, "max_rounds": a.max_rounds, "parser": FAITHFUL_PARSER}  # fmt: skip
        return {"prompt": PROMPT, "prompt_digest": self.prompt_digest, "max_rounds": a.max_rounds, "max_chars": a.max_chars,
                "parser": PARSER}

    def _fill(self, text: str, **values: Any) -> str:
        # One pass: a value (an idea, an abstract) is never read again as a placeholder.
        return re.sub(r"\{\{(\w+)\}\}", lambda m: str(values[m.group(1)]), text)

    def _system(self) -> str:
        a = self.args
        if self.original is not None:
            return self.original.fill("system", {"num_rounds": a.max_rounds, "task_description": a.task_description, "code": ""})
        return self._fill(self.system, max_rounds=a.max_rounds, source=SOURCE_NAMES[a.search.source])

    def _user(self, round_no: int, idea: str, last_query: str, results: str) -> str:
        a = self.args
        if self.original is not None:
            return self.original.fill("user", {"current_round": round_no, "num_rounds": a.max_rounds, "idea": idea, "last_query_results": results})
        return self._fill(self.user, round=round_no, max_rounds=a.max_rounds, idea=idea, last_query=last_query, results=results)

    def _read(self, text: str | None) -> Turn:
        return read_turn_original(text, self.original.phrases) if self.original is not None else read_turn(text)

    async def run_one(self, call: Call) -> AgentRun:
        a = self.args
        idea = call.shown[0]
        faithful = self.original is not None
        messages: list[dict[str, Any]] = [{"role": "system", "content": self._system()}]
        tally = Tally()
        # The original shows nothing before the first query (its results are "empty on first round").
        last_query, results = ("", "") if faithful else (NO_QUERY_YET, NO_QUERY_YET)
        for round_no in range(1, a.max_rounds + 1):
            messages.append({"role": "user", "content": self._user(round_no, idea.text, last_query, results)})
            request = Request(messages=list(messages), sampling=a.sampling, replicate=call.vote_index,
                              label=f"pointwise {call.item_id} round {round_no}", tag=call)  # fmt: skip
            reply = await self.ask_turn(tally, request)
            if not reply.ok:
                return tally.failed(reply)
            turn = self._read(reply.text)
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
                results = results if faithful else NOTHING_READ  # the original goes on with the last results
                continue
            found = await self.search.search_async(turn.query, exclude_title=idea.title, plant=self.planted(call.shown))
            if not found.ok:
                return tally.end("error", error_reason=f"search: {found.failure}", detail=f"search {turn.query!r} failed: {found.failure}")
            tally.searches.append(found)
            messages.append(reply.turn())
            last_query = json.dumps(turn.query, ensure_ascii=False)
            shown = a.max_doc_chars if faithful else a.max_chars  # the original shows whole abstracts
            results = self.show(tally, [f"{i}: {p.block(shown)}" for i, p in enumerate(found.papers)], "search results",
                                empty=NO_PAPERS)  # fmt: skip
        return tally.end("undecided", detail=f"no decision after max_rounds={a.max_rounds} rounds")


def ai_scientist(ctx: JudgeContext, **args: Any) -> AiScientistJudge:
    """`ai-scientist`: the AI-Scientist novelty check, rebuilt (default) or faithful to your checkout of the
    original (Semantic Scholar rounds, then novel / not novel)."""
    return AiScientistJudge(ctx, parse_args(AiScientistArgs, args, ctx))
