"""The audit for people: a Markdown document."""

from __future__ import annotations

from typing import Any

from ._model import CAUSES, AuditResult, Diff

__all__ = ["audit_markdown"]

_CAUSE_TEXT = {
    "dataset": "the pair exists on one side only",
    "config": "how the judge was asked changed (knobs named)",
    "evidence": "what the judge saw changed (inputs named); adjudicable",
    "harness": "only the code (or the call keys it built) changed",
    "provider": "only the provider-reported model id changed",
    "spurious": "same call keys, inputs and provider model: nondeterminism",
}


def _short(v: Any) -> str:
    if v is None:
        return "—"
    s = str(v)
    return s[:12] if len(s) == 64 and all(c in "0123456789abcdef" for c in s) else s


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _diffs(ds: list[Diff] | None, titles: tuple[str, str]) -> str:
    def name(d: Diff) -> str:
        # Name an edited idea by its title: "idea_0_text" alone makes people look the slot up.
        for slot in (0, 1):
            if d.name == f"idea_{slot}_text":
                return f"{d.name} ({titles[slot]})"
        return d.name

    return "; ".join(f"{name(d)}: {_short(d.before)} → {_short(d.after)}" for d in ds or [])


def audit_markdown(result: AuditResult) -> str:
    """Render the audit: summary by cause, then one row per change (adjudication history included)."""
    lines = [f"# Verdict-change audit: {result.from_run} → {result.to_run}", ""]
    lines.append(
        f"{result.compared} verdicts compared; {len(result.changes)} changed; "
        f"{result.unchanged_with_changed_digests} unchanged although a digest moved."
    )
    lines += ["", "| cause | changes | meaning |", "|---|---:|---|"]
    summary = result.summary
    for c in CAUSES:
        lines.append(f"| {c} | {summary[c]} | {_CAUSE_TEXT[c]} |")
    status = result.status_counts()
    if status:
        lines += ["", "Evidence changes by status: " + ", ".join(f"{k} {v}" for k, v in status.items()) + "."]
    if not result.changes:
        lines += ["", "No verdict changed."]
        return "\n".join(lines) + "\n"
    lines += ["", "## Changes", "", "| dataset | judge | pair | ideas | before | after | cause | what moved | status |",
              "|---|---|---|---|---|---|---|---|---|"]
    for ch in result.changes:
        moved = _diffs(ch.knobs, ch.titles) if ch.cause == "config" else _diffs(ch.inputs, ch.titles)
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    ch.dataset,
                    ch.judge,
                    ch.pair,
                    f"{ch.titles[0]} / {ch.titles[1]}",
                    ch.before or "(absent)",
                    ch.after or "(absent)",
                    ch.cause,
                    moved or "—",
                    ch.status,
                )
            )
            + " |"
        )
    adjudicated = [c for c in result.changes if c.adjudication is not None]
    if adjudicated:
        lines += ["", "## Adjudications", ""]
        for ch in adjudicated:
            adj = ch.adjudication
            assert adj is not None
            cur = adj.current
            lines.append(
                f"- {ch.dataset} · {ch.judge} · {ch.pair} ({ch.before} → {ch.after}): **{cur.decision}** "
                f"by {cur.who} on {cur.when} — {cur.reason or 'no reason given'}"
            )
            for old in adj.superseded:
                lines.append(f"  - superseded: {old.decision} by {old.who} on {old.when} — {old.reason or 'no reason given'}")
    return "\n".join(lines) + "\n"
