"""The search agents' section: grounding and effort per decision beside macro-F1, with the study's published rows.

Renders metrics.json only (the agent metrics are computed in novelty_audit.metrics): one table per dataset on which
a judge has agent metrics, every pointwise judge of that dataset in it (prompted judges show their macro-F1 with
no effort columns: they never search), then the published pointwise macro-F1 rows for that dataset or for no
recorded dataset, labelled "published, not rerun" — rows of their own, never merged into a measured row. A judge
of a comparator backend (`ai-scientist`, `idea-novelty-checker`) is labelled by what it is: "rebuilt after" the
original (the default mode, the project's own prompts; docs/design/agents.md lists every difference) or "faithful
to" it (the original's templates from the user's checkout at a pinned commit), so no measured row of a rebuilt
comparator stands unlabelled beside the published figures of the original.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ._blocks import Block, Heading, Link, Para, Span, Table
from ._sources import ReportSources

__all__ = ["AGENTS_ID", "COMPARATORS", "agent_blocks", "comparator_labels"]

AGENTS_ID = "agents"
_COLUMNS = (("grounded rate", "grounded_rate"), ("USD / decision", "cost_per_decision_usd"),
            ("queries / decision", "queries_per_decision"), ("rounds / decision", "rounds_per_decision"),
            ("tokens / decision", "tokens_per_decision"), ("undecided", "n_undecided"))
_MARKERS = ("queries_per_decision", "pairwise_queries_per_decision")
"""A judge with either key in metrics.json searched (novelty_audit.metrics reports them for agents only)."""


COMPARATORS = {"ai-scientist": "AI-Scientist's novelty check", "idea-novelty-checker": "the Idea Novelty Checker"}
"""Backends modelled on a published system: measured rows say whether they are rebuilt after it or faithful to it."""


def comparator_labels(sources: ReportSources) -> dict[str, str]:
    """judge → "rebuilt after <original>" / "faithful to <original> @<commit>" for comparator backends (judges.parquet)."""
    if sources.judges is None:
        return {}
    out: dict[str, str] = {}
    for r in sources.judges.iter_rows(named=True):
        if r["backend"] not in COMPARATORS:
            continue
        cfg = json.loads(r["config"] or "{}")
        original = COMPARATORS[r["backend"]]
        if cfg.get("mode") == "faithful":
            out[r["judge"]] = f"faithful to {original} @{str((cfg.get('original') or {}).get('commit', ''))[:7]}"
        else:
            out[r["judge"]] = f"rebuilt after {original}"
    return out


def _is_agent(d: dict[str, Any]) -> bool:
    return any(k in d for k in _MARKERS)


def _published(sources: ReportSources, ds: str) -> list[dict[str, Any]]:
    return [p for p in sources.published if p.get("metric") == "pointwise_macro_f1" and p.get("dataset") in (None, ds)]


def _pub_cell(p: dict[str, Any]) -> str:
    if p.get("value") is not None:
        return ("≈" if p.get("approximate") else "") + f"{float(p['value']):.3f}"
    return f"{float(p['low']):.3f}–{float(p['high']):.3f}"


def _table(ds: str, judges: dict[str, dict[str, Any]], sources: ReportSources, cell: Callable[[dict, str], str]) -> Table:
    labels = comparator_labels(sources)
    header = ["judge", "pointwise macro-F1", *(c for c, _ in _COLUMNS), "pairwise: USD / queries / rounds per decision"]
    rows: list[list[Any]] = []
    classes: list[str] = []

    def key(n: str) -> tuple[int, float, str]:
        f1 = judges[n].get("pointwise_macro_f1")
        return (0 if _is_agent(judges[n]) else 1, -(f1 if isinstance(f1, (int, float)) else -1.0), n)

    for n in sorted((n for n, d in judges.items() if _is_agent(d) or "pointwise_macro_f1" in d), key=key):
        d = judges[n]
        pair = " / ".join(cell(d, f"pairwise_{m}") for m in ("cost_per_decision_usd", "queries_per_decision", "rounds_per_decision"))
        rows.append([f"{n} ({labels[n]})" if n in labels else n, cell(d, "pointwise_macro_f1"), *(cell(d, m) for _, m in _COLUMNS),
                     pair if "pairwise_queries_per_decision" in d else "—"])
        classes.append("agent" if _is_agent(d) else "judge")
    for p in _published(sources, ds):
        src = f"published, not rerun: {p['source']}" + ("" if p.get("dataset") else " (split not recorded)")
        note: Any = Link(src, p["url"]) if p.get("url") else src
        rows.append([f"{p['judge']} (published)", _pub_cell(p), Span(note, len(header) - 2)])
        classes.append("published")
    return Table(f"agents-{re.sub(r'[^A-Za-z0-9._-]+', '_', ds)}", header, rows, classes, wide=True, cls="nums")


def agent_blocks(sources: ReportSources, cell: Callable[[dict, str], str]) -> list[Block]:
    """The section's blocks, or none when no judge searched."""
    datasets = [ds for ds, judges in sorted(sources.metrics.items()) if any(_is_agent(d) for d in judges.values())]
    if not datasets:
        return []
    blocks: list[Block] = [
        Heading(2, AGENTS_ID, "Search agents: grounding and cost per decision"),
        Para("A decision is one agent run (one call to the judge, of any outcome, undecided included). Grounded rate: "
             "share of \"not novel\" decisions whose cited paper is among the papers their own searches returned. "
             "USD per decision is what the recorded answers cost at the configured prices (\"unknown\" for a model "
             "without a price, never 0); queries, rounds (LLM calls) and tokens per decision hold for any provider. "
             "Published rows are figures from the study, not rerun here. A judge marked \"rebuilt after\" an original "
             "runs this project's own prompts and decision rule modelled on it, not the original (what differs: "
             "docs/design/agents.md); \"faithful to\" runs the original's templates from a checkout at the commit shown. "
             "Only the latter compares with the original's published figures, and still not row for row."),
    ]
    for ds in datasets:
        blocks += [Heading(3, f"{AGENTS_ID}-{re.sub(r'[^A-Za-z0-9._-]+', '_', ds)}-title", ds), _table(ds, sources.metrics[ds], sources, cell)]
    return blocks
