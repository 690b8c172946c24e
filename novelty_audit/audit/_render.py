"""The audit for people: a Markdown document (summary, judges added/removed, groups, one block per change).

Every text that comes from data (idea and document titles and texts, reasons, names, knob values) goes through
`md_text` (`novelty_audit.markdown`, the one rule of every Markdown writer): HTML-escaped and with Markdown's
inline markers backslash-escaped, so an idea holding `<script>` or `**` shows as written and never as markup."""

from __future__ import annotations

from typing import Any

from ..markdown import md_code, md_text
from ._model import CAUSES, AuditResult, Change, CorpusChange, Diff, Outcome, TextDiff

__all__ = ["audit_markdown", "outcome_text", "diff_text", "md_text", "md_code"]

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
            out.append(md_text(words))
        elif op == "-":
            out.append(f"~~{md_text(words)}~~")
        else:
            out.append(f"**{md_text(words)}**")
    return " ".join(out)


def _sim(d: Any) -> str:
    return " → ".join(_score(x) for x in (d.similarity_before, d.similarity_after))


def _change_block(ch: Change) -> list[str]:
    t = md_text
    head = f"### {t(ch.dataset)} · {t(ch.judge)} · {t(ch.pair)} — {ch.cause}, {ch.status}"
    lines = [head, "", f"- change `{ch.id}`" + (f", group `{ch.group}`" if ch.group else "") + f" ({ch.kind})"]
    if ch.kind == "pairwise" and len(ch.titles) == 2:
        lines.append(f"- ideas: **{t(ch.titles[0])}** vs **{t(ch.titles[1])}**; gold: {t(ch.gold_title or '—')}")
    elif ch.titles:
        lines.append(f"- item: **{t(ch.titles[0])}**" + (f"; gold: {t(ch.gold)}" if ch.gold else ""))
    lines.append(f"- before: {t(outcome_text(ch.outcome_before))} → after: {t(outcome_text(ch.outcome_after))}")
    if ch.family or ch.probe:
        probe = ch.probe or {}
        line = f"- injection probe, attack family: {t(probe.get('family') or ch.family)}"
        if probe.get("template_id"):
            line += f" (template {t(probe['template_id'])}, {t(probe.get('position') or '?')}ed to {t(probe.get('slot') or probe.get('attacked_idea_id'))})"
        if probe.get("injected"):
            line += f"; injected text: “{t(probe['injected'])}”"
        lines.append(line)
    if ch.knobs:
        lines.append(f"- knobs: {t(_diffs(ch.knobs, ch.titles))}")
    if ch.evidence is not None:
        for why in ch.evidence.decisive:
            lines.append(f"- why: {t(why.text)}")
        for d in ch.evidence.docs:
            rank = d.rank_after if d.rank_after is not None else d.rank_before
            tag = "decisive: " if d.decisive else ""
            verb = "moved in" if d.movement == "moved" else d.movement
            density = "" if d.density_before is None and d.density_after is None else \
                f", density {_score(d.density_before)} → {_score(d.density_after)}"
            found = f" (search \"{t(d.query)}\")" if d.query is not None else ""
            lines.append(f"- {tag}\"{t(d.title)}\" ({d.year or 'n.d.'}) {verb} {d.slot}'s evidence{found} "
                         f"(rank {rank}, similarity {_sim(d)}{density}; {t(d.source or 'source n/a')}, id {t(d.doc_id)})")
        for d in ch.evidence.dropped:
            when = {"entered": "now", "left": "no longer", "kept": "still"}[d.movement]
            lines.append(f"- leakage filter {when} drops \"{t(d.title)}\" ({d.year or 'n.d.'}, id {t(d.doc_id)}) for {d.slot} "
                         f"({t(d.reason or '?')}, cosine {_sim(d)})")
        for td in ch.evidence.text_diffs:
            lines.append(f"- text edit ({t(td.title or td.idea_id or td.slot)}): {diff_text(td)}")
    if ch.inputs:
        lines.append(f"- moved: {t(_diffs(ch.inputs, ch.titles))}")
    if ch.adjudication is not None:
        cur = ch.adjudication.current
        lines.append(f"- adjudicated **{t(cur.decision)}** by {t(cur.who)} on {t(cur.when)} — {t(cur.reason or 'no reason given')}")
        for old in ch.adjudication.superseded:
            lines.append(f"  - superseded: {t(old.decision)} by {t(old.who)} on {t(old.when)} — {t(old.reason or 'no reason given')}")
    for old in ch.unbound:
        lines.append(f"- earlier decision not bound to evidence (not applied; decide again): {t(old.decision)} by {t(old.who)} "
                     f"on {t(old.when)} — {t(old.reason or 'no reason given')}")
    if ch.cause == "evidence" and ch.adjudication is None:
        lines.append("- decide: " + md_code(f"novelty-audit adjudicate {ch.dataset} {ch.judge} {ch.pair} --from {ch.before} "
                                            f"--to {ch.after} --decision correct|incorrect|unclear --who NAME"))
    return lines + [""]


def _corpus_lines(c: CorpusChange) -> list[str]:
    t = md_text
    lines = [f"- {t(c.label())} — judges: {t(', '.join(c.judges))}"]
    for verb, docs in (("added", c.added), ("removed", c.removed), ("edited", c.edited)):
        for d in docs:
            line = f"  - {verb} \"{t(d.title)}\" ({d.year or 'n.d.'}, id {t(d.doc_id)})"
            if d.dropped_by:
                line += "; the leakage filter dropped it for " + "; ".join(
                    f"{t(x.judge)} ({t(x.reason)}, cosine {_score(x.similarity)}, idea {t(', '.join(x.ideas))})" for x in d.dropped_by)
            if d.kept_by:
                line += "; kept by " + ", ".join(f"{t(j)} (in {n} neighbour set{'s' * (n != 1)})" for j, n in d.kept_by.items())
            lines.append(line)
    return lines


def audit_markdown(result: AuditResult) -> str:
    """Render the audit: summary by cause, judges added/removed, corpus changes, groups, then one block per change."""
    t = md_text
    lines = [f"# Verdict-change audit: {t(result.from_run)} → {t(result.to_run)}", ""]
    header = (f"{result.compared} verdicts compared; {len(result.changes)} changed; "
              f"{result.unchanged_with_changed_digests} unchanged although a digest moved.")
    if result.not_judged:
        limited = ", ".join(f"{t(run)} (judge.limit {t(s.get('limit'))})" for run, s in result.subsets.items())
        header += f" {result.not_judged} item(s) not judged in one run: {limited} judged a subset; they are not changes."
    lines.append(header)
    if result.filters:
        lines.append(f"Filters: {t(', '.join(f'{k}={v}' for k, v in result.filters.items()))} ({result.hidden} change(s) hidden).")
    for m in result.membership:
        lines.append(f"- {t(m.line())}")
    lines += ["", "| cause | changes | meaning |", "|---|---:|---|"]
    summary = result.summary
    for c in CAUSES:
        lines.append(f"| {c} | {summary[c]} | {_CAUSE_TEXT[c]} |")
    status = result.status_counts()
    if status:
        lines += ["", "Evidence changes by status: " + ", ".join(f"{k} {v}" for k, v in status.items()) + "."]
    if result.corpus:
        lines += ["", "## Corpus changes", ""]
        for c in result.corpus:
            lines += _corpus_lines(c)
    groups = result.groups
    if groups:
        lines += ["", "## Groups (one cause each)", "", "| group | changes | what | status |", "|---|---:|---|---|"]
        for g in groups:
            st = ", ".join(f"{k} {v}" for k, v in g.status.items())
            lines.append(f"| `{g.id}` | {len(g.changes)} | {t(g.label)} | {st} |")
        lines += ["", "Decide a whole group: `novelty-audit adjudicate --group ID --decision ... --who NAME --reason ...`"]
    if not result.changes:
        lines += ["", "No verdict changed."]
        return "\n".join(lines) + "\n"
    lines += ["", "## Changes", ""]
    for ch in result.changes:
        lines += _change_block(ch)
    return "\n".join(lines).rstrip("\n") + "\n"
