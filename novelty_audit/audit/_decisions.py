"""The latest audit's decisions per judge: how many evidence changes are decided correct, incorrect, unclear, and
how many are still open.

Rendered into reports/audit.md and audit.json, which the report stage writes from the runs ledger and the
adjudication file after the report itself, and which every decision rewrites. Never into report.html: its bytes
are decided by its identity, which holds neither (docs/design/report.md, docs/design/review.md).
"""

from __future__ import annotations

from ..markdown import md_text

__all__ = ["DECISIONS_KEY", "decisions_markdown", "with_decisions"]

DECISIONS_KEY = "decisions_per_judge"
"""audit.json's key for {judge: {correct, incorrect, unclear, open}}."""
_COLUMNS = ("correct", "incorrect", "unclear", "open")


def decisions_markdown(tally: dict[str, dict[str, int]]) -> str:
    """A Markdown section: one row per judge with evidence changes, its counts by decision."""
    lines = ["## Decisions per judge", ""]
    if not tally:
        return "\n".join([*lines, "No evidence change to decide in this audit.", ""])
    lines += ["Evidence changes of this audit by decision (`novelty-audit review` or `adjudicate` to decide; "
              "`export adjudications` for a reference set).", "",
              "| judge | " + " | ".join(_COLUMNS) + " |", "|---|" + "---:|" * len(_COLUMNS)]
    for judge, counts in tally.items():
        lines.append(f"| {md_text(judge)} | " + " | ".join(str(counts.get(c, 0)) for c in _COLUMNS) + " |")
    return "\n".join([*lines, ""])


def with_decisions(markdown: str, tally: dict[str, dict[str, int]]) -> str:
    """The audit's Markdown with the decisions section before its first second-level heading (after the summary)."""
    section = decisions_markdown(tally)
    at = markdown.find("\n## ")
    if at < 0:
        return markdown.rstrip("\n") + "\n\n" + section
    return markdown[: at + 1] + section + "\n" + markdown[at + 1:]
