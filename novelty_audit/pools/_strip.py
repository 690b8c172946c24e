"""Result stripping: the LLM rewrite (optional, cached) and the rule check that flags what is left.

The check flags, in any abstract or idea text: numbers (not years, not digits inside a name such
as 'GPT-4' or 'Qwen3'), percentages and multipliers, and result phrases ('outperforms',
'surpasses', 'state-of-the-art', 'improves … by', 'compared with baselines'), plus code links.
A flag is a prompt for a person to look, not a verdict: flagged items are reported, never dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["StripFlag", "check_results", "strip_results", "STRIP_CHECK_VERSION", "STRIP_PROMPT", "GENERATE_PROMPT"]

STRIP_CHECK_VERSION = "strip-check-1"
STRIP_PROMPT = "pools-strip-v1"
GENERATE_PROMPT = "pools-generate-v1"

_CHECKS: list[tuple[str, re.Pattern[str]]] = [
    ("percentage", re.compile(r"\d+(?:\.\d+)?\s?(?:%|percent\b|pp\b|percentage points?)", re.I)),
    ("multiplier", re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?[x×](?![\w])", re.I)),
    ("number", re.compile(r"(?<![\w.\-/@])(?!(?:19|20)\d\d\b)\d+(?:[.,]\d+)*(?![\w%\-]|\.\d)")),
    ("outperforms", re.compile(r"\b(?:outperform\w*|surpass\w*|beats?|beating|exceed(?:s|ed|ing)?\s+(?:the\s+)?(?:baselines?|state|prior|existing|previous))\b", re.I)),
    ("state-of-the-art", re.compile(r"\bstate[- ]of[- ]the[- ]art\b|\bSOTA\b", re.I)),
    ("improvement", re.compile(r"\b(?:improv\w+|gains?|boost\w*|reduc\w+|increas\w+)\s+(?:\w+\s+){0,4}?by\s+(?:up to\s+)?(?:\d|an? average|a (?:large|wide|significant) margin)", re.I)),
    ("baseline-comparison", re.compile(r"\b(?:compared|relative)\s+(?:to|with)\s+(?:the\s+|strong\s+|existing\s+|competitive\s+)*(?:baselines?|state[- ]of[- ]the[- ]art|prior methods|existing methods)\b", re.I)),
    ("code-link", re.compile(
        r"https?://\S+|\bgithub\.com\S*|\b(?:code|implementation|models?|data(?:set)?)s? (?:is|are|will be|has been|have been) (?:publicly |made )?"
        r"(?:available|released|open[- ]sourced)\b|\bwe (?:will )?(?:release|open[- ]source)\b|\bopen[- ]sourced?\s+(?:at|on|here|upon)\b",
        re.I)),
]


_ENUMERATOR = re.compile(r"\(?\d{1,2}\)|(?<=\()\d{1,2}\)|\s\d{1,2}\)")


@dataclass(frozen=True)
class StripFlag:
    """One match of a result check in a text."""

    check: str
    match: str
    start: int


def check_results(text: str) -> list[StripFlag]:
    """Every result-like span left in `text`, in text order."""
    flags = [StripFlag(name, m.group(0), m.start()) for name, pat in _CHECKS for m in pat.finditer(text)]
    # A percentage also matches as a number; keep the more specific flag only. List markers such as
    # "(1)" or "2)" are enumerations, not results.
    covered = {(f.start) for f in flags if f.check in ("percentage", "multiplier")}
    flags = [
        f for f in flags
        if not (f.check == "number" and (f.start in covered or _ENUMERATOR.match(text, max(f.start - 1, 0))))
    ]
    return sorted(flags, key=lambda f: (f.start, f.check))


def strip_results(client, text: str, *, prompt: str | None = None) -> str:
    """The LLM rewrite of an abstract without results, metrics, baseline comparisons or code links."""
    from ..signals import load_text_prompt

    template = prompt if prompt is not None else load_text_prompt(STRIP_PROMPT)
    out = client.complete([{"role": "user", "content": template.replace("{abstract}", text)}])
    return " ".join(out.strip().split())
