"""The two APIs: what each request asks and how each answer is read into papers (the stdlib reads arXiv's Atom)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from ._args import ArxivSearchArgs, S2SearchArgs
from ._types import Paper

__all__ = ["ARXIV_PATH", "S2_FIELDS", "S2_PATH", "arxiv_feed", "arxiv_papers", "arxiv_params", "s2_data", "s2_papers", "s2_params"]

S2_PATH = "/paper/search"
S2_FIELDS = "paperId,title,abstract,year,publicationDate,authors,venue,citationCount"
"""Requested per paper: what the AI-Scientist shows (title, authors, venue, year, citations, abstract) and
what the cutoff filter reads (date, year)."""
ARXIV_PATH = "/query"
_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"


class Rejected(Exception):
    """The API answered, and the answer says the query itself is unusable (arXiv's error entry)."""


def s2_params(query: str, args: S2SearchArgs) -> dict[str, str]:
    params = {"query": query, "limit": str(args.limit), "fields": S2_FIELDS}
    if args.cutoff_in_query and args.cutoff is not None:
        params["publicationDateOrYear"] = f":{args.cutoff}"
    return params


def s2_data(resp: Any) -> list[dict[str, Any]] | None:
    """The `data` list of a Graph API search answer (absent when nothing matched), None when malformed."""
    try:
        body = resp.json()
    except ValueError:
        return None
    data = body.get("data", []) if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(isinstance(p, dict) for p in data):
        return None
    return data


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def s2_papers(data: list[dict[str, Any]]) -> list[Paper | dict[str, Any]]:
    """Papers in rank order; a result without id or title stays in place as an `incomplete` exclusion."""
    out: list[Paper | dict[str, Any]] = []
    for p in data:
        pid, title = p.get("paperId"), _text(p.get("title"))
        if not isinstance(pid, str) or not pid or not title:
            out.append({"doc_id": f"s2:{pid}" if pid else None, "title": title or None, "reason": "incomplete"})
            continue
        authors = tuple(_text(a.get("name")) for a in p.get("authors") or [] if isinstance(a, dict) and _text(a.get("name")))
        date = p.get("publicationDate")
        out.append(Paper(
            doc_id=f"s2:{pid}", title=title, authors=authors, venue=_text(p.get("venue")) or None, year=_int(p.get("year")),
            date=date[:10] if isinstance(date, str) and date else None, citations=_int(p.get("citationCount")),
            abstract=_text(p.get("abstract")), url=f"https://www.semanticscholar.org/paper/{pid}", source="semantic-scholar",
        ))  # fmt: skip
    return out


def arxiv_params(query: str, args: ArxivSearchArgs) -> dict[str, str]:
    return {"search_query": f"all:{query}", "start": "0", "max_results": str(args.limit)}


def arxiv_feed(resp: Any) -> str | None:
    """The Atom feed's text (cached raw, read on use), None when the body is not an Atom feed."""
    text = resp.text
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return None
    return text if root.tag == f"{_ATOM}feed" else None


_VERSION = re.compile(r"v\d+$")


def arxiv_papers(feed: str) -> list[Paper | dict[str, Any]]:
    """Papers of an Atom feed in its order; raises `Rejected` for arXiv's error entry (a malformed query)."""
    out: list[Paper | dict[str, Any]] = []
    for e in ET.fromstring(feed).iter(f"{_ATOM}entry"):
        url = _text(e.findtext(f"{_ATOM}id"))
        if "/api/errors" in url:
            raise Rejected(_text(e.findtext(f"{_ATOM}summary")))
        arxiv_id = _VERSION.sub("", url.split("/abs/", 1)[1]) if "/abs/" in url else ""
        title = _text(e.findtext(f"{_ATOM}title"))
        if not arxiv_id or not title:
            out.append({"doc_id": f"arxiv:{arxiv_id}" if arxiv_id else None, "title": title or None, "reason": "incomplete"})
            continue
        published = _text(e.findtext(f"{_ATOM}published"))
        date = published[:10] if re.match(r"\d{4}-\d\d-\d\d", published) else None
        authors = tuple(n for a in e.iter(f"{_ATOM}author") if (n := _text(a.findtext(f"{_ATOM}name"))))
        out.append(Paper(
            doc_id=f"arxiv:{arxiv_id}", title=title, authors=authors, venue=_text(e.findtext(f"{_ARXIV}journal_ref")) or None,
            year=int(date[:4]) if date else None, date=date, citations=None, abstract=_text(e.findtext(f"{_ATOM}summary")),
            url=url, source="arxiv",
        ))  # fmt: skip
    return out
