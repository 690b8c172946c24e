"""A scripted Semantic Scholar Graph API (`GET /graph/v1/paper/search`) on 127.0.0.1, for tests only.

Results for a query are the papers of the first script whose `match` the query contains
(`mock.script("graph attention", [paper(...), ...])`), else `default_results(query)`: three
deterministic papers derived from the query. Scripts can be replaced between two runs (result drift), or all
dropped with `reset()`. `publicationDateOrYear=:YYYY-MM-DD` and `limit` are applied as the real API does, and
each paper carries paperId plus the `fields` asked for (paperId, title, abstract, year, publicationDate,
authors as [{authorId, name}], venue, citationCount).

Faults: `mock.add_fault("molecules", "429", times=1, retry_after=0.01)` (also "500", "503", "malformed",
"403", "drop": the connection closed without an answer); `times` counts per distinct query. Every request is
recorded (path, query parameters, headers, monotonic time).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from mock_llm import LoopbackServer, free_port

__all__ = ["MockS2", "paper"]


def paper(
    pid: str, title: str, year: int | None = 2020, abstract: str | None = None, date: str | None = None, *,
    authors: tuple[str, ...] = ("Ada Lovelace", "Alan Turing"), venue: str = "NeurIPS", citations: int | None = 12,
) -> dict[str, Any]:
    return {
        "paperId": pid, "title": title, "abstract": abstract if abstract is not None else f"Abstract of {title}.",
        "year": year, "publicationDate": date, "venue": venue, "citationCount": citations,
        "authors": [{"authorId": f"{pid}-a{i}", "name": name} for i, name in enumerate(authors)],
    }  # fmt: skip


def default_results(query: str) -> list[dict[str, Any]]:
    words = "-".join(query.lower().split()[:3]) or "empty"
    return [paper(f"{words}-{i}", f"Earlier work {i} on {query[:40]}", 2015 + i) for i in range(3)]


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
    at: float = 0.0
    """time.monotonic() when the request arrived."""


class MockS2(LoopbackServer):
    """`with MockS2() as s2:`; point a judge's `retrieval.base_url` at `s2.base_url`."""

    def __init__(self) -> None:
        self.port = free_port()
        self.scripts: list[tuple[str, list[dict[str, Any]]]] = []
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graph/v1"

    @property
    def count(self) -> int:
        return len(self.requests)

    def script(self, match: str, papers: list[dict[str, Any]]) -> None:
        """Answer queries containing `match` with `papers` (replaces an earlier script for the same match)."""
        with self._lock:
            self.scripts = [(m, p) for m, p in self.scripts if m != match] + [(match, papers)]

    def reset(self) -> None:
        """Forget every script, fault and recorded request (a fresh mock on the same port)."""
        with self._lock:
            self.scripts, self.faults, self.requests = [], [], []

    def add_fault(self, match: str, kind: str, *, times: int | None = None, retry_after: float | None = None) -> None:
        self.faults.append(Fault(match, kind, times, retry_after))

    def _fault(self, query: str) -> Fault | None:
        with self._lock:
            for f in self.faults:
                if f.match in query and (f.times is None or f.seen[query] < f.times):
                    f.seen[query] += 1
                    return f
        return None

    async def _search(self, request: web.Request) -> web.Response:
        params = dict(request.query)
        with self._lock:
            self.requests.append(Recorded(request.path, params, {k.lower(): v for k, v in request.headers.items()}, time.monotonic()))
        query = params.get("query", "")
        fault = self._fault(query)
        if fault is not None:
            if fault.kind == "429":
                headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
                return web.json_response({"message": "Too Many Requests"}, status=429, headers=headers)
            if fault.kind in ("500", "503", "403"):
                return web.json_response({"message": "error"}, status=int(fault.kind))
            if fault.kind == "malformed":
                return web.Response(text="<html>bad gateway</html>", content_type="text/html")
            if fault.kind == "drop":
                assert request.transport is not None
                request.transport.abort()  # the client sees the connection close without an answer
                return web.Response()
        with self._lock:
            papers = next((p for m, p in reversed(self.scripts) if m in query), None)
        papers = list(default_results(query) if papers is None else papers)
        cutoff = params.get("publicationDateOrYear", "")
        if cutoff.startswith(":"):
            end = cutoff[1:]
            papers = [p for p in papers if (p.get("publicationDate") or f"{p.get('year') or 9999}-01-01") <= end]
        papers = papers[: int(params.get("limit", "10"))]
        fields = {"paperId", *params.get("fields", "title").split(",")}
        papers = [{k: v for k, v in p.items() if k in fields} for p in papers]
        return web.json_response({"total": len(papers), "offset": 0, "data": papers})

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/graph/v1/paper/search", self._search)
        return app
