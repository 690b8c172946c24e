"""The report's NovBench section: measured generators × datasets, and the study's published rows beside them.

The report renders metrics.json and never recomputes; published figures (each NovBench dataset's own rows, from
the file pinned beside it, `_published.py`) are shown in their own table, labelled "published, not rerun", never
merged with measured rows. The published relevance is the study's IMS (1–5 scale); ours is `relevance_cos`
(0–1), a different metric: the two never share a column.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import polars as pl

from ..markdown import md_table

__all__ = ["ReportSection", "report_section"]

MEASURED_COLUMNS = (
    ("coverage", "coverage"), ("dist_acc", "dist_acc"), ("clarity", "clarity"), ("clarity_kc", "clarity_kc"),
    ("clarity_ls", "clarity_ls"), ("clarity_fs", "clarity_fs"), ("relevance_cos", "relevance_cos (MiniLM, 0–1)"),
    ("relevance_ims", "relevance_ims (1–5)"), ("n_papers", "papers"), ("n_items", "items"), ("n_invalid", "invalid"),
)


@dataclass(frozen=True)
class ReportSection:
    id: str
    title: str
    html: str
    """An HTML fragment, every value escaped."""
    markdown: str


def _fmt(entry: dict[str, Any], key: str) -> str:
    if key not in entry:
        return ""
    v = entry[key]
    if v is None:
        return "null"
    if key.startswith("n_"):
        return str(int(v))
    lo, hi = entry.get(f"{key}_ci_low"), entry.get(f"{key}_ci_high")
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else f"{v:.3f}"


def _table_html(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _table_md(head: list[str], rows: list[list[str]]) -> str:
    return md_table(head, rows)


def report_section(metrics: dict[str, Any], published: list[dict[str, Any]] | None = None,
                   reviews: pl.DataFrame | None = None, *, notes: dict[str, Any] | None = None) -> ReportSection | None:
    """The NovBench section, or None when metrics.json holds no NovBench entry (and nothing is published).

    NovBench entries are recognised by their `dist_acc` key (pairwise entries never have one). `notes` is
    artifacts/metrics/novbench.json (why clarity_fs is null, the relevance substitute) when available.
    """
    measured = [(ds, gen, e) for ds, gens in sorted(metrics.items()) if isinstance(gens, dict)
                for gen, e in sorted(gens.items()) if isinstance(e, dict) and "dist_acc" in e]
    if not measured and not published:
        return None
    present = [(k, label) for k, label in MEASURED_COLUMNS if any(k in e for _, _, e in measured)]
    head = ["dataset", "generator"] + [label for _, label in present]
    rows = [[ds, gen] + [_fmt(e, k) for k, _ in present] for ds, gen, e in measured]
    intro = ("Generative novelty evaluation (NovBench): each generator writes a positive / neutral / negative "
             "novelty evaluation per paper from the paper's novelty sentences; scores are per paper, then averaged "
             "(95% bootstrap intervals). An invalid output scores 0 and stays in the denominator. `expert` is the "
             "reference evaluation itself (the study's \"expert as model\" row).")
    notes_lines = []
    if notes:
        if notes.get("clarity_fs_unavailable"):
            notes_lines.append(f"clarity_fs and clarity are null: {notes['clarity_fs_unavailable']}.")
        if notes.get("relevance"):
            notes_lines.append(str(notes["relevance"]) + ".")
    if reviews is not None and reviews.height:
        inv = reviews.filter(~pl.col("valid")).group_by("dataset", "judge").len().sort("dataset", "judge")
        for r in inv.iter_rows(named=True):
            notes_lines.append(f"{r['judge']} on {r['dataset']}: {r['len']} output(s) could not be parsed (counted invalid).")
    parts_html = [f"<p>{html.escape(intro)}</p>"]
    parts_md = [intro, ""]
    if measured:
        parts_html.append(_table_html(head, rows))
        parts_md += [_table_md(head, rows), ""]
    for line in notes_lines:
        parts_html.append(f"<p class=\"note\">{html.escape(line)}</p>")
        parts_md += [f"- {line}"]
    if published:
        p_head = ["dataset", "generator", "prompt", "data", "coverage", "dist_acc", "clarity", "relevance_ims (1–5)", "note"]
        p_rows = [[str(r.get("dataset") or "—"), str(r["generator"]), str(r["prompt"]), str(r["data"])] +
                  [("" if r.get(k) is None else f"{r[k]:.3f}") for k in ("coverage", "dist_acc", "clarity", "relevance_ims")] +
                  [str(r.get("note") or "")] for r in published]
        sources = "; ".join(dict.fromkeys(f"{r.get('dataset') or '—'}: {r.get('source', '')}" for r in published))
        caption = (f"Published, not rerun ({sources}). The study's own figures for each dataset's own data set, shown "
                   "as published; never merged with the measured rows above (its relevance is IMS, not relevance_cos).")
        parts_html += [f"<h3>{html.escape('Published, not rerun')}</h3>", f"<p>{html.escape(caption)}</p>", _table_html(p_head, p_rows)]
        parts_md += ["", "**Published, not rerun**", "", caption, "", _table_md(p_head, p_rows)]
    return ReportSection(id="novbench", title="NovBench: generated novelty evaluations",
                         html="\n".join(parts_html), markdown="\n".join(parts_md).strip() + "\n")
