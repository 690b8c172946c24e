"""The agent base: a judge whose every decision is a loop of LLM turns and literature searches.

One `Call` (item, order, vote index) is one decision = one agent run (`AgentJudge.run_one`). All decisions
of a judge's run are gathered in one event loop: each turn is one cached call of the call layer
(`LLMClient.ask_async`), each query one cached search (`Search.search_async`), so a re-run asks nothing.
The run-wide `Budget` is drawn on by every turn: the cap applies across rounds and decisions.

The base turns each `AgentRun` into the protocol's `CallResult` (outcome, choice, cost, effort, the cited
paper grounded against the decision's own searches) and each item's searches into evidence: parts
`search <source> "<query>"` (the result's digest) and `paper <doc_id>` (the paper's digest), and
`evidence_docs` entries carrying the `query` that found each paper. Papers the filters left out (cutoff,
own paper) are listed as `role: dropped` entries, as the distance judges list theirs. docs/design/agents.md.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from ...artifacts import digest_obj
from ...config import Frozen
from ...llm import (
    Budget,
    CallCache,
    Endpoint,
    LLMClient,
    Reply,
    Request,
    Sampling,
    check_anthropic_sampling,
    run_coro,
)
from ...search import Paper, Search, SearchArgs, SearchResult, make_search, same_title
from .._base import Idea, JudgeContext, JudgeOutput, PairItem, PointItem, pairwise_row
from .._guard import QUOTE_VERSION, bound, quote
from .._llm import ModelArgs
from .._protocol import Call, CallResult, VoteJudge

__all__ = ["AgentArgs", "AgentJudge", "AgentRun", "Citation", "Tally", "ground_citation", "show_fetched", "tokens_of"]

AgentOutcome = Literal["valid", "invalid", "undecided", "refusal", "truncated", "error"]


class AgentArgs(ModelArgs):
    """What every agent backend takes: the model, its endpoint and price and how it is asked (`ModelArgs`), the
    provider, sampling, votes and where it searches. A backend's args model subclasses this, gives `search` its
    default source, and adds its own knobs (max_rounds, k, ...)."""

    provider: Literal["openai", "anthropic"] = "openai"
    """The call layer's provider for the model (an OpenAI-compatible endpoint or Anthropic's Messages API)."""
    sampling: Sampling = Field(default_factory=Sampling)
    """Generation settings of every turn (all in the call key)."""
    votes: int = Field(1, ge=1)
    """Decisions per item (per order for pairwise): each an independent agent run with its own replicate index."""
    search: SearchArgs
    """Where the agent searches (`{source: semantic-scholar | arxiv, cutoff: YYYY-MM-DD, ...}`)."""
    max_doc_chars: int = Field(2000, ge=100)
    """Characters of one fetched paper a prompt shows (its whole block: title, authors, venue, abstract),
    counted in characters, never words. The rest is cut and counted in `evidence_truncated_chars`."""
    max_turn_chars: int = Field(40000, ge=1000)
    """Characters of fetched text one turn adds to a prompt in total (all its papers together, before the
    quoting notice and markers): a 10 MB search answer puts at most this into a turn. Cuts are counted."""

    @model_validator(mode="after")
    def _provider_honours_sampling(self) -> AgentArgs:
        if self.provider == "anthropic":
            check_anthropic_sampling(self.sampling)  # reasoning_effort → extended thinking, within max_tokens
        return self


class Citation(Frozen):
    """The prior paper a decision names (a not-novel decision must name one)."""

    title: str | None = None
    doc_id: str | None = None


@dataclass(frozen=True)
class AgentRun:
    """How one decision went. `rounds` counts the LLM calls made; `searches` every successful search in order."""

    outcome: AgentOutcome
    choice: Any = None
    """valid pointwise: POSITIVE / NEGATIVE; valid pairwise: the shown slot (0 or 1) or `tie`."""
    rounds: int = 0
    searches: list[SearchResult] = field(default_factory=list)
    citation: Mapping[str, Any] | Citation | None = None
    """{title, doc_id|None} as the model named it; the base grounds it against `searches`."""
    cost_usd: float | None = 0.0
    """None: a turn's cost is unknown (recorded without a price)."""
    tokens: int = 0
    call_digests: list[str] = field(default_factory=list)
    provider_model: str | None = None
    truncated_chars: int = 0
    """Characters of fetched text the prompt bounds (`max_doc_chars`, `max_turn_chars`) cut from this decision's turns."""
    error_reason: str | None = None
    """For `error`: a short stable reason (the call layer's, or `search: HTTP 429` for a failed search)."""
    detail: str | None = None
    """Parser note or failure detail (run facts, never in a row)."""


@dataclass(frozen=True)
class AgentCallResult(CallResult):
    """A `CallResult` that keeps its `AgentRun`, so the base can list the decision's searches as evidence."""

    run: AgentRun | None = None


def tokens_of(reply: Reply) -> int:
    """Input plus output tokens the provider reported for one turn (0 when it reported none)."""
    usage = reply.entry.get("usage") or {}
    return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)


@dataclass
class Tally:
    """What one decision has spent and found so far; `end(...)` makes its `AgentRun`."""

    searches: list[SearchResult] = field(default_factory=list)
    rounds: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0
    call_digests: list[str] = field(default_factory=list)
    models: set[str] = field(default_factory=set)
    truncated_chars: int = 0

    def add(self, reply: Reply) -> None:
        """Count one answered turn (a failed turn is not added: it cost nothing and is asked again next run)."""
        self.rounds += 1
        self.tokens += tokens_of(reply)
        known = reply.entry.get("cost_usd", 0.0) is not None  # a turn recorded without a price: unknown, never free
        self.cost_usd = self.cost_usd + reply.cost_usd if known and self.cost_usd is not None else None
        self.call_digests.append(reply.key)
        if reply.entry.get("provider_model"):
            self.models.add(reply.entry["provider_model"])

    def end(self, outcome: AgentOutcome, *, choice: Any = None, citation: Mapping[str, Any] | Citation | None = None,
            error_reason: str | None = None, detail: str | None = None) -> AgentRun:  # fmt: skip
        return AgentRun(
            outcome=outcome, choice=choice, rounds=self.rounds, searches=list(self.searches), citation=citation,
            cost_usd=self.cost_usd, tokens=self.tokens, call_digests=list(self.call_digests),
            provider_model=",".join(sorted(self.models)) or None, error_reason=error_reason, detail=detail,
            truncated_chars=self.truncated_chars,
        )  # fmt: skip

    def failed(self, reply: Reply) -> AgentRun:
        """The decision ended by a turn the call layer could not get answered: an `error` with the layer's reason."""
        assert reply.failure is not None
        return self.end("error", error_reason=reply.failure.reason, detail=reply.failure.detail)


def show_fetched(blocks: Sequence[str], what: str, *, max_doc_chars: int, max_turn_chars: int, empty: str,
                 sep: str = "\n\n") -> tuple[str, int]:
    """(prompt text, characters cut) for fetched blocks (papers, passages) shown in one turn: each block cut to
    `max_doc_chars`, their join to `max_turn_chars`, then quoted as data (`judges._guard.quote`). No blocks:
    `empty`, unquoted (the harness's own words)."""
    if not blocks:
        return empty, 0
    cut = 0
    shown = []
    for b in blocks:
        one = bound(b, max_doc_chars)
        shown.append(one.text)
        cut += one.cut
    turn = bound(sep.join(shown), max_turn_chars)
    return quote(turn.text, what), cut + turn.cut


def ground_citation(citation: Mapping[str, Any] | Citation | None, searches: Sequence[SearchResult]) -> dict[str, Any] | None:
    """{title, doc_id, retrieved}: the cited paper is among the papers these searches returned (doc_id match,
    else normalized-title match, which then fills in the doc_id). None when nothing was cited."""
    if citation is None:
        return None
    c = citation.model_dump() if isinstance(citation, Citation) else dict(citation)
    title, doc_id = c.get("title") or None, c.get("doc_id") or None
    papers = [p for s in searches for p in s.papers]
    match = next((p for p in papers if doc_id is not None and p.doc_id == doc_id), None)
    if match is None and title:
        match = next((p for p in papers if same_title(p.title, title)), None)
    if match is not None:
        return {"title": title or match.title, "doc_id": match.doc_id, "retrieved": True}
    return {"title": title, "doc_id": doc_id, "retrieved": False}


class AgentJudge(VoteJudge):
    """Base of the search agents. A backend sets `backend` (and `tasks` when it is pointwise only), implements
    `run_one(call) -> AgentRun` using `self.llm` (`await self.llm.ask_async([request])`, one turn each) and
    `self.search` (`await self.search.search_async(query, exclude_title=...)`), and `knobs()` (its own config:
    prompt digests, max_rounds, ...)."""

    tasks: tuple[str, ...] = ("pairwise", "pointwise")
    """What the backend can judge; items of another task get a row with no call (verdict none, counts 0)."""

    def __init__(self, ctx: JudgeContext, args: AgentArgs, *, orders: str = "forward"):
        super().__init__(ctx, votes=args.votes, orders=orders)
        self.args = args
        provider = args.provider
        self.key_env = args.api_key_env if "api_key_env" in args.model_fields_set else f"{provider.upper()}_API_KEY"
        self.price = args.resolve_price(ctx)
        self.budget: Budget = ctx.budget if ctx.budget is not None else Budget(None)
        self.llm = LLMClient(
            Endpoint(provider, args.model, args.base_url, "chat", self.key_env),
            args,
            cache=CallCache(ctx.cache_dir / "calls", shared=ctx.shared_cache),
            budget=self.budget,
            price=self.price,
            who=f"judge {ctx.name}",
            progress=False,  # one line per turn would drown the log; the stage reports the judge's facts
            refresh=ctx.refresh,
        )
        """The call layer's client: every turn of every decision goes through it (cache, budget, retries)."""
        self.search: Search = make_search(args.search, ctx.cache_dir, refresh=ctx.refresh)
        """The search layer for `args.search`: cached responses, rate limits, retries, filters."""
        self._excluded: Counter[str] = Counter()
        self._outcomes: Counter[str] = Counter()

    # -- what backends provide --------------------------------------------------------------------
    @abstractmethod
    async def run_one(self, call: Call) -> AgentRun:
        """One decision: the agent's turns and searches for `call`, ending in one outcome."""

    def show(self, tally: Tally, blocks: Sequence[str], what: str, *, empty: str, max_turn_chars: int | None = None) -> str:
        """Fetched blocks as one turn shows them (`show_fetched` with the judge's bounds); cuts count in `tally`."""
        a = self.args
        text, cut = show_fetched(blocks, what, max_doc_chars=a.max_doc_chars, max_turn_chars=max_turn_chars or a.max_turn_chars, empty=empty)
        tally.truncated_chars += cut
        return text

    def planted(self, shown: Sequence[Idea]) -> tuple[Paper, ...]:
        """The papers the injection probe planted for the shown ideas (probe datasets only; else none), as
        this judge's search source returns papers: each search puts them first."""
        return tuple(
            Paper(doc_id=d.doc_id, title=d.title, authors=(), venue=None, year=None, date=None, citations=None,
                  abstract=d.abstract, url=None, source=self.args.search.source)
            for idea in shown for d in idea.planted
        )  # fmt: skip

    async def ask_turn(self, tally: Tally, request: Request) -> Reply:
        """Ask one turn of a decision through the call layer (cached, budgeted); an answered turn counts in `tally`."""
        (reply,) = await self.llm.ask_async([request])
        if reply.ok:
            tally.add(reply)
        return reply

    @abstractmethod
    def knobs(self) -> dict[str, Any]:
        """The backend's own config (prompt digests, max_rounds, k, ...): merged into `config()`."""

    # -- config and facts -------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        a = self.args
        return {
            "backend": self.backend,
            "provider": a.provider,
            "model": a.model,
            "base_url": a.base_url,
            "sampling": a.sampling.model_dump(mode="json"),
            "votes": a.votes,
            "orders": self.orders,
            "search": self.search.config(),
            "max_doc_chars": a.max_doc_chars,
            "max_turn_chars": a.max_turn_chars,
            "quoting": QUOTE_VERSION,
            **self.knobs(),
        }

    def code_modules(self) -> tuple[str, ...]:
        return (*super().code_modules(), __name__, "novelty_audit.search")

    def facts(self) -> dict[str, Any]:
        """Run facts: the LLM client's stats and failures by reason, the search layer's stats, decision
        outcomes, and the papers the filters left out (by reason)."""
        out: dict[str, Any] = dict(self.llm.stats)
        out["errors_by_reason"] = dict(sorted(self.llm.errors.items()))
        out["error_details"] = dict(sorted(self.llm.error_details.items()))
        out["search"] = dict(self.search.stats)
        out["decisions"] = dict(sorted(self._outcomes.items()))
        out["search_excluded"] = dict(sorted(self._excluded.items()))
        return out

    def close(self) -> None:
        self.search.close()

    # -- running decisions ------------------------------------------------------------------------
    def plan(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> list[Call]:
        """The decisions asked: items of the tasks this backend judges only."""
        return super().plan(pairs if "pairwise" in self.tasks else [], points if "pointwise" in self.tasks else [])

    def judge(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> JudgeOutput:
        self._outcomes.clear()
        self._excluded.clear()
        asked_pairs = pairs if "pairwise" in self.tasks else []
        asked_points = points if "pointwise" in self.tasks else []
        out = super().judge(asked_pairs, asked_points)
        if "pairwise" not in self.tasks:
            # A pointwise-only agent asks nothing of a pair: a row with no call, so every item has its one row.
            out.pairwise = [self._unasked_pair(p) for p in pairs]
        out.facts = self.facts()
        return out

    def _unasked_pair(self, pair: PairItem) -> dict[str, Any]:
        parts = {"idea_0_text": pair.idea_0.text_digest, "idea_1_text": pair.idea_1.text_digest}
        return pairwise_row(self, pair, verdict="none", verdict_forward=None, verdict_reverse=None, votes_forward=None,
                            votes_reverse=None, counts={}, score_0=None, score_1=None, evidence_parts=parts)  # fmt: skip

    def run_calls(self, calls: Sequence[Call]) -> list[CallResult]:
        runs = run_coro(self._run_all(calls))
        return [self._result(c, r) for c, r in zip(calls, runs, strict=True)]

    async def _run_all(self, calls: Sequence[Call]) -> list[AgentRun]:
        # Decisions in flight are bounded by `concurrency` (each holds its slot across its turns and searches);
        # a TaskGroup cancels the others when one raises (the budget cap, a rejected key), so the stage stops.
        slots = asyncio.Semaphore(self.args.concurrency)

        async def one(call: Call) -> AgentRun:
            async with slots:
                return await self.run_one(call)

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(c)) for c in calls]
        except BaseExceptionGroup as group_error:
            # The first failure as itself (BudgetExceededError, ConfigError: user errors the CLI prints cleanly).
            first: BaseException = group_error
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        return [t.result() for t in tasks]

    def _result(self, call: Call, run: AgentRun) -> CallResult:
        self._outcomes[run.outcome] += 1
        for s in run.searches:
            self._excluded.update(e["reason"] for e in s.excluded)
        citation = ground_citation(run.citation, run.searches)
        return AgentCallResult(
            outcome=run.outcome,  # type: ignore[arg-type]
            choice=run.choice if run.outcome == "valid" else None,
            call_digest=digest_obj(run.call_digests) if run.call_digests else None,
            provider_model=run.provider_model,
            cost_usd=None if self.price is None else run.cost_usd,  # no price: unknown, never free
            detail=run.detail,
            error_reason=run.error_reason if run.outcome == "error" else None,
            rounds=run.rounds,
            queries=len(run.searches),
            tokens=run.tokens,
            truncated_chars=run.truncated_chars,
            citation=citation,
            run=run,
        )

    # -- evidence ---------------------------------------------------------------------------------
    def item_evidence(self, ideas: Sequence[Idea], answered: Sequence[tuple[Call, CallResult]]) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """Parts and `evidence_docs` over the union of the item's decisions: each query's result digest, each
        paper's digest, and one entry per (query, paper) with its rank, plus the dropped papers."""
        slot = "pair" if len(ideas) == 2 else "idea"
        parts: dict[str, set[str]] = {}
        docs: dict[tuple[str, str, str], dict[str, Any]] = {}
        for _, r in answered:
            run = r.run if isinstance(r, AgentCallResult) else None
            for s in run.searches if run is not None else ():
                assert s.digest is not None  # failed searches end the decision and are never listed
                parts.setdefault(f'search {s.source} "{s.query}"', set()).add(s.digest)
                for rank, p in enumerate(s.papers):
                    parts.setdefault(f"paper {p.doc_id}", set()).add(p.digest)
                    docs.setdefault((s.query, "", p.doc_id), {
                        "slot": slot, "rank": rank, "doc_id": p.doc_id, "digest": p.digest, "title": p.title,
                        "year": p.year, "similarity": None, "source": p.source, "query": s.query,
                    })  # fmt: skip
                for rank, e in enumerate(s.excluded):
                    docs.setdefault((s.query, "dropped", str(e.get("doc_id"))), {
                        "slot": slot, "rank": rank, "doc_id": e.get("doc_id") or "", "digest": "", "title": e.get("title") or "",
                        "year": None, "similarity": None, "source": s.source, "query": s.query, "role": "dropped",
                        "reason": e.get("reason"),
                    })  # fmt: skip
        # Within one run a query has one answer (the search layer caches it); two answers for one part name
        # (a refresh racing a read) are both kept, digested together, rather than one silently winning.
        flat = {k: next(iter(v)) if len(v) == 1 else digest_obj(sorted(v)) for k, v in parts.items()}
        return flat, list(docs.values())


