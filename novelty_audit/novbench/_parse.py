"""The three-section novelty evaluation format: parse reference texts and generated outputs alike.

Rule (the study's): a line `Positive|Neutral|Negative Novelty Evaluations` opens a section; each `- ` line
in a section is an item; items that are empty, `None`, or shorter than 10 characters are skipped. The same
parser reads the reference (`output_format`) and every generator's output, so a generated text is scored by
exactly the rule its reference was built with. Header lines may carry markdown decoration (`## `, `**`, a
trailing colon) because models add it; the shipped reference has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import orjson

__all__ = ["LABELS", "MIN_ITEM_CHARS", "Item", "Parsed", "parse_evaluation", "items_json", "label_counts", "render_items"]

LABELS = ("positive", "neutral", "negative")
MIN_ITEM_CHARS = 10

_HEADER = re.compile(r"^[#*\s]*(positive|neutral|negative)\s+novelty\s+evaluations?[*:\s]*$", re.IGNORECASE)


@dataclass(frozen=True)
class Item:
    label: str
    text: str


@dataclass(frozen=True)
class Parsed:
    """Items in text order; `valid` = at least one section header was found (an output with none cannot be
    read as an evaluation and is counted invalid, never dropped). `skipped`: (line number, text, reason)."""

    items: tuple[Item, ...]
    valid: bool
    skipped: tuple[tuple[int, str, str], ...] = field(default=())


def _skip_reason(text: str) -> str | None:
    if not text:
        return "empty item"
    if text == "None":
        return "item is None"
    if len(text) < MIN_ITEM_CHARS:
        return f"item shorter than {MIN_ITEM_CHARS} characters"
    return None


def parse_evaluation(text: str | None) -> Parsed:
    """Items (label, text) of a three-section evaluation text."""
    if not text:
        return Parsed((), False)
    items: list[Item] = []
    skipped: list[tuple[int, str, str]] = []
    section: str | None = None
    seen_header = False
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        m = _HEADER.match(line)
        if m:
            section = m.group(1).lower()
            seen_header = True
            continue
        if not (line.startswith("- ") or line == "-"):
            continue
        body = line[2:].strip() if line.startswith("- ") else ""
        if section is None:
            skipped.append((n, body, "item before any section header"))
            continue
        reason = _skip_reason(body)
        if reason:
            skipped.append((n, body, reason))
            continue
        items.append(Item(section, body))
    return Parsed(tuple(items), seen_header, tuple(skipped))


def items_json(items: tuple[Item, ...] | list[Item]) -> str:
    """Canonical JSON of the items (list of {"label", "text"}, in text order)."""
    return orjson.dumps([{"label": i.label, "text": i.text} for i in items], option=orjson.OPT_SORT_KEYS).decode()


def label_counts(items: tuple[Item, ...] | list[Item]) -> str:
    counts = {lab: 0 for lab in LABELS}
    for i in items:
        counts[i.label] += 1
    return " ".join(f"{lab}={counts[lab]}" for lab in LABELS)


def render_items(items: tuple[Item, ...] | list[Item]) -> str:
    """The three-section text of a list of items (empty sections keep their header)."""
    blocks = []
    for lab in LABELS:
        lines = [f"{lab.capitalize()} Novelty Evaluations"] + [f"- {i.text}" for i in items if i.label == lab]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
