"""The report's NovBench section: measured generators × datasets, and the study's published rows beside them.

The report renders metrics.json and never recomputes; published figures (result_dict_change.json of the
NovBench release, pinned by sha256) are shown in their own table, labelled "published, not rerun", never
merged with measured rows. The published relevance is the study's IMS (1–5 scale); ours is `relevance_cos`
(0–1), a different metric: the two never share a column.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ..artifacts import digest_file
from ..errors import BadInputError, PinMismatchError

__all__ = ["PUBLISHED_PATH", "PUBLISHED_SHA256", "ReportSection", "published_rows", "report_section"]

PUBLISHED_PATH = "data/novbench/result_dict_change.json"
PUBLISHED_SHA256 = "19ca4ebfbaaf2b4aa570e8ff8ec0825692ad2869ce9e334194fb2e0ccac61f9a"
PUBLISHED_SOURCE = "NovBench (ACL 2026 Findings), github njust-winchy/llm4novelty, rebuttal_result/result_dict_change.json"
_VARIANTS = {"": "original", "change": "change (paraphrased novelty sentences)", "del": "del (novelty sentences cut)"}

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


def published_rows(path: str | Path = PUBLISHED_PATH, sha256: str | None = PUBLISHED_SHA256) -> list[dict[str, Any]]:
    """The study's published GPT-4o (and expert-as-model) scores, one row per (model, prompt, data variant)."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"{path}: not found", hint="the NovBench published results ship in data/novbench/")
    if sha256 is not None and digest_file(path) != sha256:
        raise PinMismatchError(f"{path}: does not match its pin (sha256 {sha256})", hint="restore the file from the NovBench release")
    data = orjson.loads(path.read_bytes())
    rows: list[dict[str, Any]] = []
    for key, vals in sorted(data.items()):
        model, _, rest = key.partition("_")
        prompt, _, variant = rest.partition("_")
        if not isinstance(vals, dict):
            raise BadInputError(f"{path}: entry {key}: expected an object of scores")
        for who, prefix in ((model, "model_"), ("expert as model", "exp_")):
            rows.append({
                "source": PUBLISHED_SOURCE, "generator": who, "prompt": prompt, "data": _VARIANTS.get(variant, variant),
                "coverage": vals.get(f"{prefix}coverage"), "dist_acc": vals.get(f"{prefix}dist_acc"),
                "clarity": vals.get(f"{prefix}clarity"), "relevance_ims": vals.get(f"{prefix}relevance"),
            })
    # The expert rows repeat per prompt; keep one per data variant.
    seen, out = set(), []
    for r in rows:
        k = (r["generator"], r["data"]) if r["generator"] == "expert as model" else (r["generator"], r["prompt"], r["data"])
        if k not in seen:
            seen.add(k)
            out.append({**r, "prompt": r["prompt"] if r["generator"] != "expert as model" else "—"})
    return out


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
    esc = [[c.replace("|", "\\|") for c in r] for r in rows]
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in esc])


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
        p_head = ["generator", "prompt", "data", "coverage", "dist_acc", "clarity", "relevance_ims (1–5)"]
        p_rows = [[str(r["generator"]), str(r["prompt"]), str(r["data"])] +
                  [("" if r.get(k) is None else f"{r[k]:.3f}") for k in ("coverage", "dist_acc", "clarity", "relevance_ims")]
                  for r in published]
        caption = (f"Published, not rerun: {published[0].get('source', PUBLISHED_SOURCE)}. The study's own figures, shown "
                   "as published; never merged with the measured rows above (its relevance is IMS, not relevance_cos; its "
                   "expert clarity is not reproduced by this file's reference items).")
        parts_html += [f"<h3>{html.escape('Published, not rerun')}</h3>", f"<p>{html.escape(caption)}</p>", _table_html(p_head, p_rows)]
        parts_md += ["", "**Published, not rerun**", "", caption, "", _table_md(p_head, p_rows)]
    return ReportSection(id="novbench", title="NovBench: generated novelty evaluations",
                         html="\n".join(parts_html), markdown="\n".join(parts_md).strip() + "\n")
