"""How far adjudication has come: per judge, its evidence changes by decision."""

from __future__ import annotations

from ._model import AuditResult

__all__ = ["TALLY_COLUMNS", "decisions_per_judge"]

TALLY_COLUMNS = ("correct", "incorrect", "unclear", "open")
"""`open`: an evidence change nobody has decided (status `unadjudicated`)."""


def decisions_per_judge(result: AuditResult) -> dict[str, dict[str, int]]:
    """{judge: {correct, incorrect, unclear, open}} over the evidence changes of `result` (the only adjudicable
    ones), judges sorted by name; a judge without evidence changes is not listed."""
    out: dict[str, dict[str, int]] = {}
    for ch in result.changes:
        if ch.cause != "evidence":
            continue
        counts = out.setdefault(ch.judge, dict.fromkeys(TALLY_COLUMNS, 0))
        counts["open" if ch.status == "unadjudicated" else ch.status] += 1
    return dict(sorted(out.items()))
