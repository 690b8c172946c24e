"""A scripted Semantic Scholar Graph API (`GET /graph/v1/paper/search`) on 127.0.0.1, for tests only.

Results for a query are the papers of the first script whose `match` the query contains
(`mock.script("graph attention", [paper(...), ...])`), else `default_results(query)`: three
deterministic papers derived from the query. Scripts can be replaced between two runs (result drift), or all
dropped with `reset()`. `publicationDateOrYear=:YYYY-MM-DD` and `limit` are applied as the real API does, and
each paper carries paperId plus the `fields` asked for (paperId, title, abstract, year, publicationDate,
authors as [{authorId, name}], venue, citationCount).

Faults: `mock.add_fault("molecules", "429", times=1, retry_after=0.01)` (also "500", "503", "malformed",
"403", "drop", "hang"; tests/mock_search.py); `times` counts per distinct query. Every request is recorded
(path, query parameters, headers, monotonic time).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from mock_search import ScriptedSearchAPI

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


class MockS2(ScriptedSearchAPI):
    """`with MockS2() as s2:`; point a judge's `retrieval.base_url` at `s2.base_url`."""

    root, route = "/graph/v1", "/paper/search"

    def answer(self, params: dict[str, str], query: str, fault: str | None) -> web.StreamResponse:
        papers = self.scripted(query)
        papers = list(default_results(query) if papers is None else papers)
        cutoff = params.get("publicationDateOrYear", "")
        if cutoff.startswith(":"):
            end = cutoff[1:]
            papers = [p for p in papers if (p.get("publicationDate") or f"{p.get('year') or 9999}-01-01") <= end]
        papers = papers[: int(params.get("limit", "10"))]
        fields = {"paperId", *params.get("fields", "title").split(",")}
        papers = [{k: v for k, v in p.items() if k in fields} for p in papers]
        return web.json_response({"total": len(papers), "offset": 0, "data": papers})
