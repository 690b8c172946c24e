"""A scripted arXiv API (`GET /api/query`, an Atom feed) on 127.0.0.1, for tests only.

Results for a request are the entries of the last script whose `match` its `search_query` contains
(`mock.script("graph attention", [entry("1706.03762", "Attention Is All You Need"), ...])`), else
`default_entries(query)`: three deterministic entries derived from the query. Scripts can be replaced between
two runs (result drift) or all dropped with `reset()`. `start` and `max_results` page the list as the real API
does; a search_query without a field prefix gets arXiv's error entry (HTTP 200, an entry whose id is
`http://arxiv.org/api/errors#...`).

Faults: `mock.add_fault("molecules", "429", times=1, retry_after=0.01)` (also "500", "503", "malformed",
"drop", "hang": tests/mock_search.py; and "rejected": arXiv's error entry); `times` counts per distinct
search_query. Every request is recorded (path, query parameters, headers, monotonic time).
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from aiohttp import web
from mock_search import ScriptedSearchAPI

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


class MockArxiv(ScriptedSearchAPI):
    """`with MockArxiv() as arxiv:`; point a search's `base_url` at `arxiv.base_url`."""

    root, route, query_param = "/api", "/query", "search_query"

    def answer(self, params: dict[str, str], query: str, fault: str | None) -> web.StreamResponse:
        atom = "application/atom+xml"
        if ":" not in query or fault == "rejected":
            return web.Response(text=ERROR_FEED, content_type=atom)
        entries = self.scripted(query)
        entries = default_entries(query) if entries is None else entries
        start, size = int(params.get("start", "0")), int(params.get("max_results", "10"))
        return web.Response(text=feed(entries[start : start + size], len(entries), start), content_type=atom)
