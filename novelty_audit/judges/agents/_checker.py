"""`idea-novelty-checker`: Scideator's Idea Novelty Checker (as Ai2 ran it) on the project's call and search layers.

One decision (one vote of one idea):
1. the model proposes keyword phrases and paper titles for the idea (`checker-keywords-v1`);
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

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ...templates import TemplateSource, packaged

__all__ = [
    "CheckerPrompts",
    "ClassAnswer",
    "Candidate",
    "candidate_text",
    "cited_ids",
    "parse_class",
    "parse_facets",
    "parse_queries",
    "parse_ranking",
    "rank_by_similarity",
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
            return Prompt(packaged(f"checker-{name}-v1.txt"))

        return cls(
            keywords=p("keywords"),
            judge=p(f"judge-{prompt}"),
            examples=packaged(f"checker-examples-{examples}-v1.txt"),
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


_CLASS_LINE = re.compile(r"^[\s>*#_\-]*class[\s*_]*:(.*)$", re.IGNORECASE | re.MULTILINE)
_REVIEW = re.compile(r"^[\s>*#_\-]*review[\s*_]*:(.*)", re.IGNORECASE | re.MULTILINE | re.DOTALL)


def _class_value(raw: str) -> str | None:
    v = re.sub(r"[*_`\[\]().:!\"']", " ", raw).lower()
    v = " ".join(v.split())
    return CLASS_CHOICES.get(v)


def parse_class(text: str | None) -> ClassAnswer:
    """Read "Class: novel | not novel" and "Review: ..." from the judge's answer.

    Every `Class:` line is read (markdown marks, brackets and case ignored); its value must be exactly
    "novel" or "not novel" — an echoed form such as "Class: <novel or not novel>" is no class. None, or two
    lines that disagree, is `invalid`, never a vote. The review is the text after the last `Review:`."""
    if not text or not text.strip():
        return ClassAnswer("invalid", None, None, "empty answer")
    lines = _CLASS_LINE.findall(text)
    values = {c for c in (_class_value(x) for x in lines) if c is not None}
    reviews = _REVIEW.findall(text)
    review = reviews[-1].strip() if reviews else None
    if not values:
        note = "no 'Class: novel' or 'Class: not novel' line" if not lines else f"class {lines[-1].strip()!r} is neither novel nor not novel"
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


def candidate_text(paper: Any) -> str:
    """What is embedded for a paper: its title and abstract (the original embedded title [SEP] abstract)."""
    title, abstract = (paper.title or "").strip(), (paper.abstract or "").strip()
    return f"{title}. {abstract}" if abstract else title


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
