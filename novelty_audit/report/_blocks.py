"""The report as a list of blocks (headings, notes, tables, figures, sections), rendered once to HTML and once to
Markdown, so the two never say different things."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from typing import Union

from ..markdown import md_code, md_link, md_table, md_text

__all__ = ["Heading", "Para", "Link", "Span", "Table", "Figure", "Raw", "Section", "Block", "render_html", "render_markdown"]


@dataclass(frozen=True)
class Heading:
    level: int
    id: str
    text: str


@dataclass(frozen=True)
class Para:
    text: str
    cls: str = "note"
    code: bool = False
    """Render `backticked` spans as code."""


@dataclass(frozen=True)
class Link:
    text: str
    url: str


@dataclass(frozen=True)
class Span:
    """A cell over `n` columns (Markdown: the content, then empty cells)."""

    content: Union[str, Link]
    n: int


Cell = Union[str, Link, Span]


@dataclass(frozen=True)
class Table:
    id: str
    header: list[str]
    rows: list[list[Cell]]
    row_classes: list[str] = field(default_factory=list)
    """Optional CSS class per row (e.g. `control`, `published`), same length as rows when given."""
    wide: bool = False
    cls: str = ""
    """CSS class of the table (`nums`: numeric cells do not wrap; `facts`: a key–value list)."""


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    svg_name: str | None
    note: str = ""


@dataclass(frozen=True)
class Raw:
    """A fragment from another module (already escaped HTML, and its Markdown)."""

    id: str
    html: str
    markdown: str


@dataclass(frozen=True)
class Section:
    id: str
    cls: str
    blocks: list["Block"]


Block = Union[Heading, Para, Table, Figure, Raw, Section]


def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _inline(text: str, code: bool) -> str:
    if not code:
        return _e(text)
    parts = text.split("`")
    return "".join(f"<code>{_e(p)}</code>" if i % 2 else _e(p) for i, p in enumerate(parts))


_WITH_INTERVAL = re.compile(r"(\S+) (\[[^\[\]]+\])")


def _cell_html(c: Cell) -> str:
    if isinstance(c, Span):
        return _cell_html(c.content)
    if isinstance(c, Link):
        return f'<a href="{_e(c.url)}">{_e(c.text)}</a>'
    # A value and its interval may wrap between them, never inside the interval: a narrow page wraps, not overflows.
    m = _WITH_INTERVAL.fullmatch(c)
    return f'{_e(m.group(1))} <span class="ci">{_e(m.group(2))}</span>' if m else _e(c)


def _table_html(t: Table) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in t.header)
    body = []
    for i, row in enumerate(t.rows):
        cls = t.row_classes[i] if i < len(t.row_classes) and t.row_classes[i] else ""
        attr = f' class="{_e(cls)}"' if cls else ""
        body.append(f"<tr{attr}>" + "".join(f'<td colspan="{c.n}">{_cell_html(c)}</td>' if isinstance(c, Span)
                                            else f"<td>{_cell_html(c)}</td>" for c in row) + "</tr>")
    cls = f' class="{_e(t.cls)}"' if t.cls else ""
    table = f'<table id="{_e(t.id)}"{cls}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    return f'<div class="wide">{table}</div>' if t.wide else table


def _figure_html(f: Figure, plots: dict[str, bytes]) -> str:
    if f.svg_name is None:
        return f'<p class="note" id="{_e(f.id)}">{_e(f.title)}: {_e(f.note)}</p>'
    uri = "data:image/svg+xml;base64," + base64.b64encode(plots[f.svg_name]).decode("ascii")
    cap = _e(f.title) + (f". {_e(f.note)}" if f.note else "")
    return f'<figure id="{_e(f.id)}"><img alt="{_e(f.title)}" src="{uri}"><figcaption>{cap}</figcaption></figure>'


def _block_html(b: Block, plots: dict[str, bytes]) -> str:
    if isinstance(b, Heading):
        return f'<h{b.level} id="{_e(b.id)}">{_e(b.text)}</h{b.level}>'
    if isinstance(b, Para):
        return f'<p class="{_e(b.cls)}">{_inline(b.text, b.code)}</p>'
    if isinstance(b, Table):
        return _table_html(b)
    if isinstance(b, Figure):
        return _figure_html(b, plots)
    if isinstance(b, Raw):
        return f'<div id="{_e(b.id)}">{b.html}</div>'
    inner = "\n".join(_block_html(x, plots) for x in b.blocks)
    return f'<section class="{_e(b.cls)}" id="{_e(b.id)}">\n{inner}\n</section>'


def render_html(title: str, css: str, nav: list[tuple[str, str]], blocks: list[Block], plots: dict[str, bytes]) -> str:
    links = "".join(f'<a href="#{_e(i)}">{_e(t)}</a>' for i, t in nav)
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>',
        f"<style>{css}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<nav>{links}</nav>",
        *(_block_html(b, plots) for b in blocks),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _md_cell(c: Cell) -> str:
    if isinstance(c, Span):
        return " | ".join([_md_cell(c.content)] + [""] * (c.n - 1))
    return md_link(c.text, c.url) if isinstance(c, Link) else md_text(c)


def _md_inline(text: str, code: bool) -> str:
    """As `_inline` does for HTML: the text as written, `backticked` spans as code when `code`."""
    if not code:
        return md_text(text)

    def plain(p: str) -> str:  # md_text trims; the spaces around a code span stay
        return (" " if p[:1].isspace() else "") + md_text(p) + (" " if p[-1:].isspace() and p.strip() else "")

    return "".join(md_code(p) if i % 2 else plain(p) for i, p in enumerate(text.split("`")) if p)


def _block_md(b: Block) -> str:
    if isinstance(b, Heading):
        return "#" * b.level + " " + md_text(b.text)
    if isinstance(b, Para):
        return _md_inline(b.text, b.code)
    if isinstance(b, Table):
        return md_table([_md_cell(h) for h in b.header], ([_md_cell(c) for c in row] for row in b.rows), escaped=True)
    if isinstance(b, Figure):
        if b.svg_name is None:
            return f"_{md_text(b.title)}: {md_text(b.note)}_"
        return f"![{md_text(b.title)}](plots/{b.svg_name})" + (f"\n\n_{md_text(b.note)}_" if b.note else "")
    if isinstance(b, Raw):
        return b.markdown.strip()
    return "\n\n".join(_block_md(x) for x in b.blocks)


def render_markdown(title: str, blocks: list[Block]) -> str:
    return "\n\n".join([f"# {md_text(title)}", *(_block_md(b) for b in blocks)]) + "\n"
