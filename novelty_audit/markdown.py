"""Text from data inside Markdown, for every Markdown writer (paper tables, report.md, audit.md, drift pages, the
flow summaries): names of judges, variants and datasets, titles and reasons are data a user or a sweep knob set, so
they are shown as written and never as markup.

`md_text` is the one escaping rule: whitespace runs (newlines included) become one space, so a name never splits a
table row or a heading; Markdown's markers (`\\`, backtick, `*`, `|`, `~`, `#`, a loose `_`, a `]` that would close
a link) are backslash-escaped; `&`, `<`, `>` are HTML-escaped, so `<b>x</b>` reads as text."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["md_code", "md_link", "md_table", "md_text"]

_MARKERS = "\\`*|~#"
# A bracket pair is a link only when `]` is followed by `(`, `[` or `:` (inline, full reference, definition): that
# `]` is escaped, so intervals such as `0.5 [0.4, 0.6]` stay readable in the Markdown source.
_LINK_CLOSE = re.compile(r"\](?=[(\[:])")
# An underscore between two letters or digits never opens or closes emphasis (CommonMark): left as it is, so
# names such as idea_0_text stay readable.
_LOOSE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_text(s: Any) -> str:
    """Data as inline Markdown text: one line, Markdown markers backslash-escaped, HTML-escaped (&, <, >)."""
    out = " ".join(str(s).split())
    for ch in _MARKERS:  # the backslash first, so the escapes added after it stay single
        out = out.replace(ch, "\\" + ch)
    out = _LINK_CLOSE.sub(r"\\]", _LOOSE_UNDERSCORE.sub(r"\\_", out))
    return html.escape(out, quote=False)


def md_code(s: Any) -> str:
    """Data as an inline code span: Markdown and HTML inside it are shown as written; a backtick inside gets a
    longer fence. One line."""
    text = " ".join(str(s).split())
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_link(text: Any, url: str) -> str:
    """A link whose text is data; the target is percent-encoded where Markdown or a table would read it."""
    target = "".join(f"%{ord(ch):02X}" if ch in " ()<>|\n\r\t" else ch for ch in url)
    return f"[{md_text(text)}]({target})"


def md_table(header: Sequence[Any], rows: Iterable[Sequence[Any]], *, align: Sequence[str] | None = None,
             escaped: bool = False) -> str:
    """A GFM table, one line per row whatever the cells hold. Cells are data (`md_text`) unless `escaped` (already
    Markdown, made by the helpers above); `align`: one of `l`/`r` per column (default left)."""
    cell = (lambda c: str(c)) if escaped else md_text
    rule = "|" + "|".join("---:" if a == "r" else "---" for a in (align or ["l"] * len(header))) + "|"
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", rule]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
