"""What the search API mocks (mock_s2.py, mock_arxiv.py) share: results scripted per query substring, faults,
and every request recorded. Tests only; serves on 127.0.0.1 (LoopbackServer).

Faults, matched by query substring: "429" (with `retry_after`), "500", "503", "403", "malformed" (HTTP 200,
an HTML body), "drop" (the connection closed without an answer), "hang" (no answer for 5 s); a mock may
answer kinds of its own. `times` counts per distinct query (None: always).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from mock_llm import LoopbackServer, free_port

__all__ = ["Fault", "Recorded", "ScriptedSearchAPI"]


@dataclass(frozen=True)
class Fault:
    match: str
    kind: str
    times: int | None
    retry_after: float | None


@dataclass
class Recorded:
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    at: float = 0.0
    """time.monotonic() when the request arrived."""


class ScriptedSearchAPI(LoopbackServer):
    """Base of a search API mock: `script(match, results)`, `add_fault(...)`, `requests`, `count`, `reset()`;
    a subclass names its `root` and `route` and writes `answer`."""

    root = ""
    """The API root under the server (`base_url` is the server and root)."""
    route = ""
    """The searched path under the root."""
    query_param = "query"
    """The request parameter holding the query (scripts and faults match against it)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.scripts: list[tuple[str, list[dict[str, Any]]]] = []
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self._seen: Counter[tuple[int, str]] = Counter()  # (fault's index, query): times it answered
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.root}"

    @property
    def count(self) -> int:
        return len(self.requests)

    def script(self, match: str, results: list[dict[str, Any]]) -> None:
        """Answer queries containing `match` with `results` (replaces an earlier script for the same match)."""
        with self._lock:
            self.scripts = [(m, r) for m, r in self.scripts if m != match] + [(match, results)]

    def reset(self) -> None:
        """Forget every script, fault and recorded request (a fresh mock on the same port)."""
        with self._lock:
            self.scripts, self.faults, self.requests, self._seen = [], [], [], Counter()

    def add_fault(self, match: str, kind: str, *, times: int | None = None, retry_after: float | None = None) -> None:
        with self._lock:
            self.faults.append(Fault(match, kind, times, retry_after))

    def scripted(self, query: str) -> list[dict[str, Any]] | None:
        """The results of the last script matching `query`, None when none does."""
        with self._lock:
            return next((list(r) for m, r in reversed(self.scripts) if m in query), None)

    async def receive(self, request: web.Request) -> tuple[dict[str, str], str, str | None, web.StreamResponse | None]:
        """Record `request`; (params, query, fault kind or None, the fault's answer when it is a generic one)."""
        params = dict(request.query)
        query = params.get(self.query_param, "")
        with self._lock:
            self.requests.append(Recorded(request.path, params, {k.lower(): v for k, v in request.headers.items()}, time.monotonic()))
            n, fault = next(((n, f) for n, f in enumerate(self.faults) if f.match in query and (f.times is None or self._seen[n, query] < f.times)), (-1, None))  # fmt: skip
            if fault is not None:
                self._seen[n, query] += 1
        kind = fault.kind if fault is not None else None
        if fault is None or kind not in ("429", "500", "503", "403", "malformed", "drop", "hang"):
            return params, query, kind, None
        if kind == "429":
            headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
            return params, query, kind, web.json_response({"message": "Too Many Requests"}, status=429, headers=headers)
        if kind == "malformed":
            return params, query, kind, web.Response(text="<html>bad gateway</html>", content_type="text/html")
        if kind == "drop":
            assert request.transport is not None
            request.transport.abort()  # the client sees the connection close without an answer
            return params, query, kind, web.Response()
        if kind == "hang":
            await asyncio.sleep(5)
            return params, query, kind, None
        return params, query, kind, web.json_response({"message": "error"}, status=int(kind))

    def answer(self, params: dict[str, str], query: str, fault: str | None) -> web.StreamResponse:
        """The API's answer to a request no generic fault took (`fault`: this mock's own fault kind, if any)."""
        raise NotImplementedError

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        params, query, kind, answer = await self.receive(request)
        return answer if answer is not None else self.answer(params, query, kind)

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(self.root + self.route, self._handle)
        return app
