"""The review page's layout: the audit's adjudicable changes in pages, the others apart.

Presentation only (which cards go on which page); every change, group and status comes from the audit library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadInputError

__all__ = ["PAGE_SIZE", "OTHER_CAP", "Layout", "layout", "page_number"]

PAGE_SIZE = 25
"""Change cards per page: a page of cards stays near 150 KB and renders in a fraction of a second."""
OTHER_CAP = 200
"""Rows of the collapsed list of changes that are not adjudicable (one line each); the rest are counted."""


@dataclass(frozen=True)
class Layout:
    """One page of the review: sections of change cards, plus the not-adjudicable changes listed apart."""

    number: int
    pages: int
    first: int
    """1-based position of the page's first card among all adjudicable changes (0 when there are none)."""
    last: int
    total: int
    """Adjudicable changes (every page)."""
    sections: list[dict[str, Any]] = field(default_factory=list)
    """[{id (group id or None), info (the audit's group), changes, size (the group's changes on every page),
    continued (the group began on an earlier page), continues (it goes on on the next page)}]."""
    other: list[dict[str, Any]] = field(default_factory=list)
    other_total: int = 0
    other_causes: dict[str, int] = field(default_factory=dict)


def page_number(raw: str | None) -> int:
    """The `page` query value as a page number (1 when absent); anything else than a positive integer is a 400."""
    if raw is None or raw == "":
        return 1
    if not raw.isdigit() or int(raw) < 1:
        raise BadInputError(f"page '{raw[:40]}' is not a page number", hint="pages are numbered from 1")
    return int(raw)


def layout(result: Mapping[str, Any] | None, number: int = 1, size: int = PAGE_SIZE) -> Layout:
    """Page `number` (clamped to the last page) of the audit JSON's adjudicable changes, in the audit's group
    order (largest group first, then changes in no group); a group split across pages appears on each with
    `continued`/`continues` set. Not-adjudicable changes (config, harness, provider, spurious, dataset) are
    listed apart, at most OTHER_CAP of them, with counts by cause."""
    if not result:
        return Layout(number=1, pages=1, first=0, last=0, total=0)
    changes = list(result.get("changes", []))
    by_id = {c.get("id"): c for c in changes}
    decidable = [c for c in changes if c.get("status") != "not-adjudicable"]
    other = [c for c in changes if c.get("status") == "not-adjudicable"]
    ordered: list[tuple[dict[str, Any] | None, dict[str, Any]]] = []
    placed: set[Any] = set()
    for g in result.get("groups", []):
        members = [by_id[cid] for cid in g.get("changes", []) if cid in by_id and by_id[cid].get("status") != "not-adjudicable"]
        ordered.extend((g, c) for c in members)
        placed.update(c.get("id") for c in members)
    ordered.extend((None, c) for c in decidable if c.get("id") not in placed)
    pages = max(1, -(-len(ordered) // size))
    number = min(max(1, number), pages)
    start = (number - 1) * size
    chunk = ordered[start:start + size]
    sizes: dict[str, int] = {}
    for g, _ in ordered:
        if g is not None:
            sizes[g["id"]] = sizes.get(g["id"], 0) + 1
    sections: list[dict[str, Any]] = []
    for g, c in chunk:
        gid = g["id"] if g is not None else None
        if gid is not None and sections and sections[-1]["id"] == gid:
            sections[-1]["changes"].append(c)
            continue
        sections.append({"id": gid, "info": g or {}, "changes": [c], "size": sizes.get(gid, 1) if gid else 1,
                         "continued": gid is not None and start > 0 and ordered[start - 1][0] is g and not sections,
                         "continues": False})
    if sections and sections[-1]["id"] is not None:
        nxt = ordered[start + len(chunk)][0] if start + len(chunk) < len(ordered) else None
        sections[-1]["continues"] = nxt is not None and nxt["id"] == sections[-1]["id"]
    causes: dict[str, int] = {}
    for c in other:
        causes[c.get("cause", "")] = causes.get(c.get("cause", ""), 0) + 1
    return Layout(number=number, pages=pages, first=start + 1 if chunk else 0, last=start + len(chunk), total=len(ordered),
                  sections=sections, other=other[:OTHER_CAP], other_total=len(other), other_causes=dict(sorted(causes.items())))
