"""A search object: one source's queries answered from the response cache, or the API, then filtered."""

from __future__ import annotations

import asyncio
import dataclasses
import html
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ._args import ArxivSearchArgs, S2SearchArgs
from ._http import ResponseCache, api_key_headers, fetch, key_refused, process_limiter, within_cutoff
from ._sources import ARXIV_PATH, S2_FIELDS, S2_PATH, Rejected, arxiv_feed, arxiv_papers, arxiv_params, s2_data, s2_papers, s2_params
from ._types import Paper, SearchResult

__all__ = ["Search", "make_search", "same_title"]


def same_title(a: str, b: str) -> bool:
    """Titles compared as the own-paper filter compares them: markup and punctuation dropped, casefolded."""
    return _norm(a) == _norm(b)


def _norm(title: str) -> str:
    return " ".join(re.findall(r"\w+", html.unescape(re.sub(r"<[^>]*>", " ", title)).casefold()))


class Search:
    """Queries to one search API. `search` is thread-safe; concurrent identical queries send one request."""

    def __init__(self, args: S2SearchArgs | ArxivSearchArgs, cache_root: str | Path, *, refresh: bool = False):
        from ..llm import endpoint_id

        self.args = args
        self.source = args.source
        self.endpoint = endpoint_id(args.source, args.base_url)
        self.cache = ResponseCache(Path(cache_root) / "search" / args.source, self.endpoint, refresh=refresh or args.refresh)
        self._limiter = process_limiter(self.endpoint)
        s2 = isinstance(args, S2SearchArgs)
        self._path = S2_PATH if s2 else ARXIV_PATH
        self._params: Callable[[str], dict[str, str]] = (lambda q: s2_params(q, args)) if s2 else (lambda q: arxiv_params(q, args))  # type: ignore[arg-type]
        self._parse = s2_data if s2 else arxiv_feed
        self._papers: Callable[[Any], list[Paper | dict[str, Any]]] = s2_papers if s2 else arxiv_papers
        self._client: Any = None
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._stats: Counter[str] = Counter()

    def config(self) -> dict[str, Any]:
        """What decides the results (part of a judge's config); `refresh` and the rate knobs do not."""
        cfg: dict[str, Any] = {"source": self.source, "base_url": self.endpoint, "limit": self.args.limit, "cutoff": self.args.cutoff}
        if self.source == "semantic-scholar":
            cfg["fields"] = S2_FIELDS
            if self.args.cutoff_in_query:  # only when on: configs written before the knob keep their digest
                cfg["cutoff_in_query"] = True
        return cfg

    @property
    def stats(self) -> dict[str, int]:
        """Run facts: HTTP requests sent (retries included), cache hits, retries, failed searches."""
        with self._lock:
            return {k: self._stats[k] for k in ("requests", "cache_hits", "retries", "failures")}

    def search(self, query: str, *, exclude_title: str | Sequence[str] | None = None, plant: Sequence[Paper] = ()) -> SearchResult:
        """The papers for `query` (whitespace collapsed), the idea's own paper (`exclude_title`: its title, or
        the titles of both ideas of a pair) and papers after the cutoff left out and recorded; a search still
        failing after its retries is a failure result. `plant`: papers the injection probe puts first in every
        answer (never cached, never filtered; they enter the result's digest like any paper)."""
        query = " ".join(query.split())
        if not query:
            return SearchResult(self.source, query, failure="empty query")
        data, failure = self._response(self._params(query))
        if failure is not None:
            return SearchResult(self.source, query, failure=failure)
        try:
            found = self._papers(data)
        except Rejected:
            return SearchResult(self.source, query, failure="query rejected")
        result = self._filter(query, found, exclude_title)
        return dataclasses.replace(result, papers=(*plant, *result.papers)) if plant else result

    async def search_async(self, query: str, *, exclude_title: str | Sequence[str] | None = None, plant: Sequence[Paper] = ()) -> SearchResult:
        """`search` in a worker thread, for agents that gather many decisions in one event loop."""
        return await asyncio.to_thread(self.search, query, exclude_title=exclude_title, plant=plant)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _filter(self, query: str, found: list[Paper | dict[str, Any]], exclude_title: str | Sequence[str] | None) -> SearchResult:
        titles = [exclude_title] if isinstance(exclude_title, str) else list(exclude_title or ())
        own = {_norm(t) for t in titles if t}
        papers: list[Paper] = []
        excluded: list[dict[str, Any]] = []
        for p in found:
            if isinstance(p, dict):
                excluded.append(p)
            elif _norm(p.title) in own:
                excluded.append({"doc_id": p.doc_id, "title": p.title, "reason": "own paper"})
            elif not within_cutoff(p.date, p.year, self.args.cutoff):
                reason = "no date" if p.date is None and p.year is None else "after cutoff"
                excluded.append({"doc_id": p.doc_id, "title": p.title, "reason": reason})
            else:
                papers.append(p)
        return SearchResult(self.source, query, tuple(papers), tuple(excluded))

    def _response(self, params: dict[str, str]) -> tuple[Any, str | None]:
        key = self.cache.key(self._path, params)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # a second thread asking the same query waits and then reads the cache
            entry = self.cache.get(key)
            if entry is not None:
                self._count(cache_hits=1)
                return entry["data"], None
            got = fetch(
                self._http(), f"{self.args.base_url.rstrip('/')}{self._path}", params, self.args, headers=api_key_headers(getattr(self.args, "api_key_env", None)),
                wait_turn=lambda: self._limiter.wait(1.0 / self.args.requests_per_second), parse=self._parse,
                refused=partial(key_refused, what="search", env=getattr(self.args, "api_key_env", None)) if self.source == "semantic-scholar" else None,
            )  # fmt: skip
            self._count(requests=got.attempts, retries=got.attempts - 1, failures=0 if got.ok else 1)
            if not got.ok:
                return None, got.failure
            self.cache.put(key, self._path, params, got.body)
            return got.body, None

    def _count(self, **n: int) -> None:
        with self._lock:
            self._stats.update(n)

    def _http(self) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.args.timeout_s)
            return self._client

def make_search(args: S2SearchArgs | ArxivSearchArgs, cache_root: str | Path, *, refresh: bool = False) -> Search:
    """A `Search` for `args`, caching raw responses under `<cache_root>/search/<source>/`."""
    return Search(args, cache_root, refresh=refresh)
