"""What a search returns: papers in the API's rank order, the results the filters left out, or a failure."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from ..artifacts import digest_obj

__all__ = ["NO_PAPERS", "Paper", "SearchResult", "Source"]

Source = Literal["semantic-scholar", "arxiv"]
NO_PAPERS = "No papers found."


@dataclass(frozen=True)
class Paper:
    """One search result as the model is shown it. Every field is part of its digest."""

    doc_id: str
    """`s2:<paperId>` or `arxiv:<id without version>`."""
    title: str
    authors: tuple[str, ...]
    venue: str | None
    year: int | None
    date: str | None
    """Publication date YYYY-MM-DD, when the API gives one."""
    citations: int | None
    abstract: str
    url: str | None
    source: Source

    @cached_property
    def digest(self) -> str:
        return digest_obj(dataclasses.asdict(self))

    def block(self, max_chars: int = 600) -> str:
        """The AI-Scientist format: title, authors, venue and year, citations, abstract (cut at `max_chars`)."""
        abstract = self.abstract if len(self.abstract) <= max_chars else self.abstract[:max_chars] + "…"
        authors = ", ".join(self.authors) or "Unknown authors"
        where = ", ".join(x for x in (self.venue, str(self.year) if self.year is not None else None) if x) or "n.d."
        lines = [f"{self.title}. {authors}. {where}."]
        if self.citations is not None:
            lines.append(f"Number of citations: {self.citations}")
        lines.append(f"Abstract: {abstract or '(no abstract)'}")
        return "\n".join(lines)


@dataclass(frozen=True)
class SearchResult:
    """One query's answer. Run facts (whether it came from the cache, attempts) are not fields."""

    source: Source
    query: str
    papers: tuple[Paper, ...] = ()
    """API rank order, after the filters."""
    excluded: tuple[dict[str, Any], ...] = ()
    """`{doc_id, title, reason}` per result the filters left out; reason `after cutoff`, `no date` (a cutoff
    is set and the paper has neither date nor year), `own paper` or `incomplete` (no id or title)."""
    failure: str | None = None
    """Short stable reason when the search failed after its retries: `HTTP 429`, `HTTP 500`, `timeout`,
    `connection refused`, `connection dropped`, `malformed response`, `query rejected`, `empty query`."""

    @property
    def ok(self) -> bool:
        return self.failure is None

    @cached_property
    def digest(self) -> str | None:
        """digest of {source, query, paper digests in order}; None for a failure (it is no evidence)."""
        if self.failure is not None:
            return None
        return digest_obj({"source": self.source, "query": self.query, "papers": [p.digest for p in self.papers]})

    def text(self, max_chars: int = 600) -> str:
        """The numbered blocks the model is shown (numbered from 0, as the AI-Scientist shows them)."""
        if not self.papers:
            return NO_PAPERS
        return "\n\n".join(f"{i}: {p.block(max_chars)}" for i, p in enumerate(self.papers))
