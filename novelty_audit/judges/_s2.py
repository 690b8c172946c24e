"""Live retrieval from the Semantic Scholar Graph API (`/graph/v1/paper/search`) as evidence for LLM judges.

For each idea the retriever searches by the idea's title (or the start of its text), drops the idea's own
paper (same normalized title) and papers dated after `cutoff`, and shows the first `k` remaining papers'
titles, years and abstracts — the same block format as local-corpus retrieval.

Reproducibility: every response is cached by content under `<store>/cache/s2/`, keyed by
digest(endpoint, query parameters) — never the API key — and checked against its checksum when read (a
damaged entry is moved to `corrupt/` and the query asked again). A rerun therefore shows the judge exactly
the documents it saw before, with no request. `refresh: true` re-queries (the replaced response is kept
under `history/`): when the results moved, each changed document is a changed evidence part of the verdicts
that showed it, and `evidence_docs` lists them by title, so the audit names the documents that entered or
left. 429 and 5xx answers, timeouts and dropped connections are retried with backoff (Retry-After
honoured); requests are spaced to `requests_per_second`. The key (optional) is read from the environment
variable `api_key_env` and sent as `x-api-key`; it is never stored.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ..artifacts import digest_bytes, digest_obj
from ..config import Frozen
from ..errors import NoveltyAuditError
from ._guard import QUOTE_VERSION, quote
from ._retrieval import bounded_lines, memo_key, planted_docs, truncation_fact
from ..search import (
    CutoffDate,
    RateLimiter,
    ResponseCache,
    api_key_headers,
    fetch,
    key_refused,
    s2_data,
    within_cutoff,
)

__all__ = ["S2_SOURCE", "RetrievalError", "S2Args", "S2Retriever"]

log = logging.getLogger(__name__)

S2_SOURCE = "semantic-scholar"
S2_FIELDS = "paperId,title,abstract,year,publicationDate"
"""Requested per paper: the id, what is shown (title, abstract, year) and what the cutoff filter reads."""
DEFAULT_BASE_URL = "https://api.semanticscholar.org/graph/v1"


class RetrievalError(NoveltyAuditError):
    """A search that kept failing after its retries (or was refused): the stage stops; responses already
    received are cached, so the next run continues where this one stopped."""


class S2Args(Frozen):
    """Evidence from Semantic Scholar paper search (`retrieval: {source: semantic-scholar, ...}`)."""

    source: Literal["semantic-scholar"]
    """Selects this backend (the local corpus is `retrieval: {corpus: ...}`)."""
    base_url: str = DEFAULT_BASE_URL
    """Graph API root; part of the cache key and the judge config."""
    query: Literal["title", "text"] = "title"
    """What is searched: the idea's title, or the start of its text (`max_query_chars`). The search is a
    keyword relevance search; short queries work best."""
    max_query_chars: int = Field(default=300, ge=20)
    """Longest query sent (characters, cut at a word boundary)."""
    k: int = Field(default=3, ge=1)
    """Papers shown per idea (after the filters)."""
    limit: int = Field(default=20, ge=1, le=100)
    """Results requested per search (the filters may drop some; the API allows up to 100)."""
    max_chars: int = 600
    """Abstract length shown (characters)."""
    max_doc_chars: int = Field(default=2000, ge=100)
    """Characters of one paper's line in the prompt (title, year and abstract together); cut characters are
    counted in its `evidence_docs` entry (`truncated_chars`)."""
    max_turn_chars: int = Field(default=20000, ge=1000)
    """Characters of retrieved text one prompt shows in total (each idea's block at most half of it)."""
    cutoff: CutoffDate = None
    """YYYY-MM-DD: papers published after it are dropped (and not requested: `publicationDateOrYear=:cutoff`).
    A paper with only a year counts as published on Dec 31 of that year; one with neither is dropped."""
    api_key_env: str | None = "S2_API_KEY"
    """Environment variable with an API key (sent as x-api-key); unset or empty: no key (lower rate limits)."""
    requests_per_second: float = Field(default=1.0, gt=0)
    """Request rate limit within one process."""
    max_retries: int = Field(default=5, ge=0)
    """Retries on 429, 5xx, timeouts and dropped connections before the stage stops."""
    backoff_s: float = 1.0
    """First retry delay; doubles per retry (a longer Retry-After takes precedence)."""
    max_backoff_s: float = 60.0
    """Longest retry delay."""
    timeout_s: float = 30.0
    """Per-request timeout."""
    refresh: bool = False
    """Re-query every search and replace the cached response (run the stage with --force): a drift check
    of the literature. Not part of the judge config."""


class S2Retriever:
    """Semantic Scholar search results per idea, with the blocks, evidence parts and documents a judge uses."""

    def __init__(self, args: S2Args, cache_root: str | Path, *, refresh: bool = False):
        from ..llm import endpoint_id

        self.args = args
        self.endpoint = endpoint_id(S2_SOURCE, args.base_url)
        self.refresh = refresh or args.refresh
        self.responses = ResponseCache(Path(cache_root) / "s2", self.endpoint, refresh=self.refresh)
        self._client: Any = None
        self._lock = threading.Lock()
        self._limiter = RateLimiter()
        self._docs: dict[str, list[dict[str, Any]]] = {}
        self._facts: Counter[str] = Counter()

    # -- what the judge asks --------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        a = self.args
        return {
            "method": S2_SOURCE, "endpoint": self.endpoint, "query": a.query, "max_query_chars": a.max_query_chars,
            "k": a.k, "limit": a.limit, "max_chars": a.max_chars, "cutoff": a.cutoff, "fields": S2_FIELDS,
            "max_doc_chars": a.max_doc_chars, "max_turn_chars": a.max_turn_chars, "quoting": QUOTE_VERSION,
        }  # fmt: skip

    def input_files(self) -> list[Path]:
        return []

    def docs(self, idea) -> list[dict[str, Any]]:
        """The papers shown for `idea`: {doc_id, title, year, abstract (as shown), digest}, best first."""
        memo = memo_key(idea)
        with self._lock:
            if memo in self._docs:
                return self._docs[memo]
        results = self._search(self._query(idea))
        from .distance import normalize_title

        own = normalize_title(idea.title)
        shown: list[dict[str, Any]] = []
        for paper in results:
            title = (paper.get("title") or "").strip()
            if not title or not paper.get("paperId"):
                self._facts["dropped_incomplete"] += 1
                continue
            if normalize_title(title) == own:
                self._facts["dropped_own_paper"] += 1
                continue
            if not within_cutoff(paper.get("publicationDate"), paper.get("year"), self.args.cutoff):
                self._facts["dropped_after_cutoff"] += 1
                continue
            abstract = (paper.get("abstract") or "").strip()
            if len(abstract) > self.args.max_chars:
                abstract = abstract[: self.args.max_chars] + "…"
            year = paper.get("year") if isinstance(paper.get("year"), int) else None
            shown.append({
                "doc_id": str(paper["paperId"]), "title": title, "year": year, "abstract": abstract,
                "digest": digest_bytes(f"{title}\n{abstract}".encode()),
            })  # fmt: skip
            if len(shown) == self.args.k:
                break
        shown = bounded_lines(planted_docs(idea) + shown, self.args)
        with self._lock:
            self._docs[memo] = shown
        return shown

    def block(self, idea) -> str:
        """The related-work lines of `idea`, bounded (`bounded_lines`): what the evidence digest covers."""
        return "\n".join(d["line"] for d in self.docs(idea) if d["line"])

    def blocks(self, shown) -> tuple[str, ...]:
        """Each shown idea's block as the prompt shows it: quoted as data (judges/_guard.py `quote`)."""
        return tuple(quote(b, "related papers") if b else b for b in map(self.block, shown))

    def evidence_digest(self, shown) -> str:
        return digest_obj(sorted(self.block(i) for i in shown))

    def evidence_parts(self, ideas: Sequence[Any], slots: Sequence[str]) -> dict[str, str]:
        """{retrieval: digest of the blocks shown, <slot>_retrieved_<rank>: digest of each paper shown}."""
        parts = {"retrieval": self.evidence_digest(ideas)}
        for slot, idea in zip(slots, ideas):
            parts.update({f"{slot}_retrieved_{r}": d["digest"] for r, d in enumerate(self.docs(idea))})
        return parts

    def evidence_docs(self, ideas: Sequence[Any], slots: Sequence[str]) -> list[dict[str, Any]]:
        return [
            {"slot": slot, "rank": r, "doc_id": d["doc_id"], "digest": d["digest"], "title": d["title"], "year": d["year"],
             "similarity": None, "source": d.get("source", S2_SOURCE), **truncation_fact(d)}
            for slot, idea in zip(slots, ideas) for r, d in enumerate(self.docs(idea))
        ]  # fmt: skip

    def facts(self) -> dict[str, int]:
        """Run facts: searches sent, cache hits, retries, results dropped by each filter."""
        return dict(sorted(self._facts.items()))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- the API --------------------------------------------------------------------------------------
    def _query(self, idea) -> str:
        text = idea.title if self.args.query == "title" else idea.text
        text = " ".join(text.split())
        if len(text) > self.args.max_query_chars:
            text = text[: self.args.max_query_chars].rsplit(" ", 1)[0]
        return text

    def _params(self, query: str) -> dict[str, str]:
        params = {"query": query, "limit": str(self.args.limit), "fields": S2_FIELDS}
        if self.args.cutoff is not None:
            params["publicationDateOrYear"] = f":{self.args.cutoff}"
        return params

    def _search(self, query: str) -> list[dict[str, Any]]:
        params = self._params(query)
        key = self.responses.key("/paper/search", params)
        entry = self.responses.get(key)
        if entry is not None:
            self._facts["cache_hits"] += 1
            return entry["data"]
        data = self._fetch(params)
        self.responses.put(key, "/paper/search", params, data)
        return data

    def _fetch(self, params: dict[str, str]) -> list[dict[str, Any]]:
        a = self.args
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=a.timeout_s)
        got = fetch(
            self._client, f"{a.base_url.rstrip('/')}/paper/search", params, a, headers=api_key_headers(a.api_key_env),
            wait_turn=lambda: self._limiter.wait(1.0 / a.requests_per_second), parse=s2_data, refused=partial(key_refused, what="request", env=a.api_key_env),
        )  # fmt: skip
        self._facts["retries"] += got.attempts - 1
        if got.ok:
            self._facts["searches"] += 1
            return got.body
        if not got.transient:
            raise RetrievalError(f"Semantic Scholar search failed: {got.failure} for query {params['query'][:60]!r}")
        raise RetrievalError(
            f"Semantic Scholar search failed after {got.attempts} attempts ({got.failure}) for query {params['query'][:60]!r}",
            hint="responses received so far are cached: run the stage again later (or raise retrieval.max_retries)",
        )
