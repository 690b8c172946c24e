"""Sentence spans inside a review section, so every snippet is a verbatim slice of the review.

Lines are hard boundaries (reviews are bullet lists and one-line paragraphs); inside a line,
a sentence ends at . ! or ? followed by space and an upper-case letter, a quote or a bracket,
except after common abbreviations. Leading list markers ("- ", "1. ", "(a) ", "* ") are not
part of a sentence.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["sentence_spans", "sentences", "match_key"]

_MARKER = re.compile(r"^\s*(?:(?:[-*•>]+|\(?\d{1,2}[.)]|\(?[a-zA-Z][.)]|\[\d+\])\s+|\(?\d{1,2}[.)](?=[A-Z]))+")
_BOUNDARY = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[A-Z\"'“‘(\[*])")
_ABBREV = {
    "e.g", "i.e", "al", "etc", "vs", "fig", "figs", "eq", "eqs", "sec", "cf", "resp", "approx", "tab", "no",
    "ref", "refs", "dr", "mr", "ms", "prof", "st", "appx", "app", "ch", "thm", "lem", "def", "w.r.t", "a.k.a",
}


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text`; `text[start:end]` is the sentence."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        start = pos
        pos += len(line) + 1
        m = _MARKER.match(line)
        s = m.end() if m else 0
        cut = s
        for b in _BOUNDARY.finditer(line, s):
            head = line[cut : b.start()].rstrip("\"'”’)]")
            word = re.split(r"\s", head)[-1].rstrip(".!?").lower() if head else ""
            if word in _ABBREV or (len(word) == 1 and word.isalpha()):
                continue
            _add(spans, line, start, cut, b.start())
            cut = b.end()
        _add(spans, line, start, cut, len(line))
    return spans


def _add(spans: list[tuple[int, int]], line: str, offset: int, a: int, b: int) -> None:
    seg = line[a:b]
    lead = len(seg) - len(seg.lstrip())
    trail = len(seg.rstrip())
    if trail - lead > 0 and any(ch.isalnum() for ch in seg):
        spans.append((offset + a + lead, offset + a + trail))


def sentences(text: str) -> list[str]:
    """The sentences of `text`, verbatim."""
    return [text[a:b] for a, b in sentence_spans(text)]


_EMPH = re.compile(r"[*_`]+")
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def match_key(text: str) -> str:
    """A comparison form for matching sentences across sources: NFKC, lower case, markdown
    emphasis removed, whitespace collapsed, punctuation stripped at both ends."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = _EMPH.sub("", t)
    t = t.replace("’", "'").replace("“", '"').replace("”", '"').replace("—", "-").replace("–", "-")
    t = " ".join(t.split())
    return _EDGE.sub("", t)
