"""The audit for people: a Markdown document (summary, judges added/removed, groups, one block per change)."""

from __future__ import annotations

from typing import Any

from ._model import CAUSES, AuditResult, Change, Diff, Outcome, TextDiff

__all__ = ["audit_markdown", "outcome_text", "diff_text"]

_CAUSE_TEXT = {
    "dataset": "the item exists on one side only",
    "config": "how the judge was asked changed (knobs named)",
    "evidence": "what the judge saw changed (documents / edits named); adjudicable",
    "harness": "only the code (or the call keys it built) changed",
    "provider": "only the provider-reported model id changed",
    "spurious": "same call keys, inputs and provider model: nondeterminism",
}
_CONTEXT_WORDS = 8


def _short(v: Any) -> str:
    if v is None:
        return "—"
    s = str(v)
    return s[:12] if len(s) == 64 and all(c in "0123456789abcdef" for c in s) else s


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _diffs(ds: list[Diff] | None, titles: tuple[str, ...]) -> str:
    def name(d: Diff) -> str:
        # Name an edited idea by its title: "idea_0_text" alone makes people look the slot up.
        for slot in range(len(titles)):
            if d.name == f"idea_{slot}_text":
                return f"{d.name} ({titles[slot]})"
        return d.name

    return "; ".join(f"{name(d)}: {_short(d.before)} → {_short(d.after)}" for d in ds or [])


def _score(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def outcome_text(o: Outcome) -> str:
    """`Alpha ✓ (scores 0.4100 / 0.3800)`: the verdict as a title, correct/wrong, scores."""
    mark = "" if o.correct is None else (" ✓ correct" if o.correct else " ✗ wrong")
    scores = f" (score{'s' * (len(o.scores) > 1)} {' / '.join(_score(s) for s in o.scores)})" if o.scores else ""
    return f"{o.label}{mark}{scores}"


def diff_text(t: TextDiff) -> str:
    """Markdown of a word diff: removed ~~struck~~, added **bold**, long kept runs elided."""
    out = []
    for i, (op, words) in enumerate(t.ops):
        if op == "=":
            w = words.split()
            if len(w) > 2 * _CONTEXT_WORDS:
                head = " ".join(w[:_CONTEXT_WORDS]) if i > 0 else ""
                tail = " ".join(w[-_CONTEXT_WORDS:]) if i < len(t.ops) - 1 else ""
                words = " … ".join(x for x in (head, tail) if x) or "…"
            out.append(_cell(words))
        elif op == "-":
            out.append(f"~~{_cell(words)}~~")
        else:
            out.append(f"**{_cell(words)}**")
    return " ".join(out)


def _change_block(ch: Change) -> list[str]:
    head = f"### {ch.dataset} · {ch.judge} · {ch.pair} — {ch.cause}, {ch.status}"
    lines = [head, "", f"- change `{ch.id}`" + (f", group `{ch.group}`" if ch.group else "") + f" ({ch.kind})"]
    if ch.kind == "pairwise" and len(ch.titles) == 2:
        lines.append(f"- ideas: **{_cell(ch.titles[0])}** vs **{_cell(ch.titles[1])}**; gold: {_cell(ch.gold_title or '—')}")
    elif ch.titles:
        lines.append(f"- item: **{_cell(ch.titles[0])}**" + (f"; gold: {ch.gold}" if ch.gold else ""))
    lines.append(f"- before: {_cell(outcome_text(ch.outcome_before))} → after: {_cell(outcome_text(ch.outcome_after))}")
    if ch.family:
        lines.append(f"- injection probe, attack family: {ch.family}")
    if ch.knobs:
        lines.append(f"- knobs: {_cell(_diffs(ch.knobs, ch.titles))}")
    if ch.evidence is not None:
        for d in ch.evidence.docs:
            sim = " → ".join(_score(s) for s in (d.similarity_before, d.similarity_after))
            rank = d.rank_after if d.rank_after is not None else d.rank_before
            tag = "decisive: " if d.decisive else ""
            verb = "moved in" if d.movement == "moved" else d.movement
            lines.append(f"- {tag}\"{_cell(d.title)}\" ({d.year or 'n.d.'}) {verb} {d.slot}'s evidence "
                         f"(rank {rank}, similarity {sim}; {d.source or 'source n/a'}, id {d.doc_id})")
        for t in ch.evidence.text_diffs:
            lines.append(f"- text edit ({_cell(t.title or t.idea_id or t.slot)}): {diff_text(t)}")
    if ch.inputs:
        lines.append(f"- moved: {_cell(_diffs(ch.inputs, ch.titles))}")
    if ch.adjudication is not None:
        cur = ch.adjudication.current
        lines.append(f"- adjudicated **{cur.decision}** by {cur.who} on {cur.when} — {_cell(cur.reason or 'no reason given')}")
        for old in ch.adjudication.superseded:
            lines.append(f"  - superseded: {old.decision} by {old.who} on {old.when} — {_cell(old.reason or 'no reason given')}")
    for old in ch.unbound:
        lines.append(f"- earlier decision not bound to evidence (not applied; decide again): {old.decision} by {old.who} "
                     f"on {old.when} — {_cell(old.reason or 'no reason given')}")
    if ch.cause == "evidence" and ch.adjudication is None:
        lines.append(f"- decide: `novelty-audit adjudicate {ch.dataset} {ch.judge} {ch.pair} --from {ch.before} --to {ch.after} "
                     f"--decision correct|incorrect|unclear --who NAME`")
    return lines + [""]


def audit_markdown(result: AuditResult) -> str:
    """Render the audit: summary by cause, judges added/removed, groups, then one block per change."""
    lines = [f"# Verdict-change audit: {result.from_run} → {result.to_run}", ""]
    lines.append(
        f"{result.compared} verdicts compared; {len(result.changes)} changed; "
        f"{result.unchanged_with_changed_digests} unchanged although a digest moved."
    )
    if result.filters:
        lines.append(f"Filters: {', '.join(f'{k}={v}' for k, v in result.filters.items())} ({result.hidden} change(s) hidden).")
    for m in result.membership:
        lines.append(f"- {m.line()}")
    lines += ["", "| cause | changes | meaning |", "|---|---:|---|"]
    summary = result.summary
    for c in CAUSES:
        lines.append(f"| {c} | {summary[c]} | {_CAUSE_TEXT[c]} |")
    status = result.status_counts()
    if status:
        lines += ["", "Evidence changes by status: " + ", ".join(f"{k} {v}" for k, v in status.items()) + "."]
    groups = result.groups
    if groups:
        lines += ["", "## Groups (one evidence delta each)", "", "| group | changes | what | status |", "|---|---:|---|---|"]
        for g in groups:
            st = ", ".join(f"{k} {v}" for k, v in g.status.items())
            lines.append(f"| `{g.id}` | {len(g.changes)} | {_cell(g.label)} | {st} |")
        lines += ["", "Decide a whole group: `novelty-audit adjudicate --group ID --decision ... --who NAME --reason ...`"]
    if not result.changes:
        lines += ["", "No verdict changed."]
        return "\n".join(lines) + "\n"
    lines += ["", "## Changes", ""]
    for ch in result.changes:
        lines += _change_block(ch)
    return "\n".join(lines).rstrip("\n") + "\n"
