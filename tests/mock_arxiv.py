"""A scripted arXiv API (`GET /api/query`, an Atom feed) on 127.0.0.1, for tests only.

Results for a request are the entries of the last script whose `match` its `search_query` contains
(`mock.script("graph attention", [entry("1706.03762", "Attention Is All You Need"), ...])`), else
`default_entries(query)`: three deterministic entries derived from the query. Scripts can be replaced between
two runs (result drift) or all dropped with `reset()`. `start` and `max_results` page the list as the real API
does; a search_query without a field prefix gets arXiv's error entry (HTTP 200, an entry whose id is
`http://arxiv.org/api/errors#...`).

Faults: `mock.add_fault("molecules", "429", times=1, retry_after=0.01)` (also "500", "503", "malformed",
"drop": the connection closed without an answer, "hang": an answer only after 5 s, "rejected": arXiv's error
entry); `times` counts per distinct search_query. Every request is
recorded (path, query parameters, headers, monotonic time).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

from aiohttp import web
from mock_llm import LoopbackServer, free_port

__all__ = ["MockArxiv", "entry"]


def entry(
    arxiv_id: str, title: str, published: str = "2020-01-15", summary: str | None = None, *,
    authors: tuple[str, ...] = ("Grace Hopper", "Edsger Dijkstra"), journal_ref: str | None = None, version: int = 1,
) -> dict[str, Any]:
    """One feed entry; `arxiv_id` without its version (the feed's id carries `v<version>`)."""
    return {"id": arxiv_id, "title": title, "published": published, "summary": summary if summary is not None else f"Summary of {title}.",
            "authors": authors, "journal_ref": journal_ref, "version": version}  # fmt: skip


def default_entries(query: str) -> list[dict[str, Any]]:
    words = query.removeprefix("all:").split()[:3]
    stem = sum(map(ord, " ".join(words))) % 9000 + 1000
    return [entry(f"{stem}.{i:05d}", f"Prior work {i} on {' '.join(words)}", f"{2015 + i}-03-0{i + 1}") for i in range(3)]


def feed(entries: list[dict[str, Any]], total: int, start: int) -> str:
    """The Atom document the API answers with (namespaces as export.arxiv.org writes them)."""
    items = []
    for e in entries:
        authors = "".join(f"<author><name>{escape(a)}</name></author>" for a in e["authors"])
        ref = f"<arxiv:journal_ref>{escape(e['journal_ref'])}</arxiv:journal_ref>" if e["journal_ref"] else ""
        items.append(
            f"<entry><id>http://arxiv.org/abs/{e['id']}v{e['version']}</id><updated>{e['published']}T12:00:00Z</updated>"
            f"<published>{e['published']}T12:00:00Z</published><title>{escape(e['title'])}</title>"
            f"<summary>  {escape(e['summary'])}\n</summary>{authors}{ref}"
            f'<link href="http://arxiv.org/abs/{e["id"]}v{e["version"]}" rel="alternate" type="text/html"/></entry>'
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
        'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom">'
        f"<title>arXiv Query</title><id>http://arxiv.org/api/mock</id><updated>2026-01-01T00:00:00-05:00</updated>"
        f"<opensearch:totalResults>{total}</opensearch:totalResults><opensearch:startIndex>{start}</opensearch:startIndex>"
        f"<opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>{''.join(items)}</feed>"
    )


ERROR_FEED = feed([], 1, 0).replace(
    "</feed>",
    "<entry><id>http://arxiv.org/api/errors#incorrect_id_format</id><title>Error</title>"
    "<summary>malformed search_query</summary><updated>2026-01-01T00:00:00-05:00</updated></entry></feed>",
)


@dataclass
class Fault:
    match: str
    kind: str
    times: int | None
    retry_after: float | None
    seen: Counter = field(default_factory=Counter)


@dataclass
class Recorded:
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    at: float
    """time.monotonic() when the request arrived."""


class MockArxiv(LoopbackServer):
    """`with MockArxiv() as arxiv:`; point a search's `base_url` at `arxiv.base_url`."""

    def __init__(self) -> None:
        self.port = free_port()
        self.scripts: list[tuple[str, list[dict[str, Any]]]] = []
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def count(self) -> int:
        return len(self.requests)

    def script(self, match: str, entries: list[dict[str, Any]]) -> None:
        """Answer search_queries containing `match` with `entries` (replaces an earlier script for the same match)."""
        with self._lock:
            self.scripts = [(m, e) for m, e in self.scripts if m != match] + [(match, entries)]

    def reset(self) -> None:
        """Forget every script, fault and recorded request (a fresh mock on the same port)."""
        with self._lock:
            self.scripts, self.faults, self.requests = [], [], []

    def add_fault(self, match: str, kind: str, *, times: int | None = None, retry_after: float | None = None) -> None:
        with self._lock:
            self.faults.append(Fault(match, kind, times, retry_after))

    def _fault(self, query: str) -> Fault | None:
        with self._lock:
            for f in self.faults:
                if f.match in query and (f.times is None or f.seen[query] < f.times):
                    f.seen[query] += 1
                    return f
        return None

    async def _query(self, request: web.Request) -> web.Response:
        params = dict(request.query)
        with self._lock:
            self.requests.append(Recorded(request.path, params, {k.lower(): v for k, v in request.headers.items()}, time.monotonic()))
        query = params.get("search_query", "")
        fault = self._fault(query)
        if fault is not None:
            if fault.kind == "429":
                headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
                return web.Response(text="Rate exceeded.", status=429, headers=headers)
            if fault.kind in ("500", "503"):
                return web.Response(text="error", status=int(fault.kind))
            if fault.kind == "malformed":
                return web.Response(text="<html>bad gateway</html>", content_type="text/html")
            if fault.kind == "drop":
                assert request.transport is not None
                request.transport.abort()  # the client sees the connection close without an answer
                return web.Response()
            if fault.kind == "hang":
                await asyncio.sleep(5)
        atom = "application/atom+xml"
        if ":" not in query or (fault is not None and fault.kind == "rejected"):
            return web.Response(text=ERROR_FEED, content_type=atom)
        with self._lock:
            entries = next((e for m, e in reversed(self.scripts) if m in query), None)
        entries = list(default_entries(query) if entries is None else entries)
        start, size = int(params.get("start", "0")), int(params.get("max_results", "10"))
        return web.Response(text=feed(entries[start : start + size], len(entries), start), content_type=atom)

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/api/query", self._query)
        return app
