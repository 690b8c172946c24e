"""Build the report (HTML, Markdown, plot files) from its sources. Deterministic: no clock, no host,
no ledger; the same sources give byte-identical files."""

from __future__ import annotations

import base64
import csv
import html
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ReportParams
from ..artifacts import atomic_write_bytes
from . import _charts
from ._sources import ReportSources

__all__ = ["Report", "build_report", "write_report", "AUDIT_FILES"]

AUDIT_FILES = ("audit.md", "audit.json")
"""The latest audit, written next to the report but not part of it (it depends on the runs ledger)."""

_SUFFIXES = ("_ci_low", "_ci_high", "_wilson_low", "_wilson_high")
_PREFERRED = (
    "n_pairs", "strict_accuracy", "soft_accuracy", "accuracy_without_ties", "tie_rate", "coverage", "n_no_verdict",
    "n_invalid", "n_truncated", "n_refusal", "n_error", "n_order_pairs", "order_flip_rate", "first_position_rate",
    "n_ideas", "pointwise_accuracy", "pointwise_coverage", "pointwise_macro_f1", "pointwise_auroc", "n_scored",
    "pointwise_n_invalid", "pointwise_n_truncated", "pointwise_n_refusal", "pointwise_n_error", "cost_usd",
)
_FAILED = ("n_invalid", "n_truncated", "n_refusal", "n_error")
_BY_REASON = (("pairwise", "n_error_by_reason"), ("pointwise", "pointwise_n_error_by_reason"))
"""metrics.json's failed calls by reason per task (novelty_audit.metrics.BY_REASON)."""
_COST_KEYS = ("cost_usd", "total_cost_usd")


@dataclass(frozen=True)
class Report:
    html: str
    markdown: str
    plots: dict[str, bytes] = field(default_factory=dict)
    """plots/<name> → bytes: SVG charts and the CSV data behind the `dvc plots` definitions."""


# -- values ------------------------------------------------------------------

def _names(d: dict[str, Any]) -> list[str]:
    # Nested values (failed calls by reason) have a table of their own.
    base = [k for k in d if not any(k.endswith(s) for s in _SUFFIXES) and not isinstance(d[k], dict)]
    return [m for m in _PREFERRED if m in base] + sorted(m for m in base if m not in _PREFERRED)


def _interval(d: dict[str, Any], m: str) -> tuple[float, float] | None:
    for lo, hi in ((f"{m}_ci_low", f"{m}_ci_high"), (f"{m}_wilson_low", f"{m}_wilson_high")):
        if d.get(lo) is not None and d.get(hi) is not None:
            return float(d[lo]), float(d[hi])
    return None


def _num(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) >= 2 else f"{v:.3f}"
    return str(v)


def _value(d: dict[str, Any], m: str) -> str:
    v = d.get(m)
    # Counts (n_*) may arrive as floats in JSON; show them as the integers they are.
    if m.startswith("n_") and isinstance(v, float) and v.is_integer():
        return str(int(v))
    return _num(v)


def _cell(d: dict[str, Any], m: str) -> str:
    if m not in d:
        return "—"
    iv = _interval(d, m)
    return _value(d, m) + (f" [{iv[0]:.3f}, {iv[1]:.3f}]" if iv else "")


def _label(m: str) -> str:
    return m.replace("_", " ")


# -- tables as rows of strings -------------------------------------------------

@dataclass(frozen=True)
class _Table:
    id: str
    header: list[str]
    rows: list[list[str]]
    note: str = ""


def _main_table(metrics: dict[str, Any]) -> _Table:
    rows = []
    for ds in sorted(metrics):
        for judge in sorted(metrics[ds]):
            d = metrics[ds][judge]
            failed = "/".join(_value(d, k) for k in _FAILED)
            rows.append([judge, ds, _cell(d, "strict_accuracy"), _cell(d, "soft_accuracy"), _cell(d, "tie_rate"),
                         failed, _cell(d, "coverage"), _cell(d, "order_flip_rate"), _cell(d, "first_position_rate")])
    return _Table(
        "judges",
        ["judge", "dataset", "strict accuracy", "soft accuracy", "tie rate", "invalid/truncated/refusal/error",
         "coverage", "order flip rate", "first-position rate"],
        rows,
    )


def _error_table(metrics: dict[str, Any]) -> _Table | None:
    """Failed calls (outcome error) per judge, dataset and task, by reason, most frequent first."""
    rows = []
    for ds in sorted(metrics):
        for judge in sorted(metrics[ds]):
            for task, key in _BY_REASON:
                reasons = metrics[ds][judge].get(key) or {}
                for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
                    rows.append([judge, ds, task, reason, _num(n)])
    if not rows:
        return None
    return _Table("error-reasons", ["judge", "dataset", "task", "error reason", "failed calls"], rows,
                  note="A failed call is nobody's vote and stays in every denominator; the next run asks it again.")


def _detail_tables(metrics: dict[str, Any]) -> list[_Table]:
    out = []
    for ds in sorted(metrics):
        names: list[str] = []
        for judge in sorted(metrics[ds]):
            names += [m for m in _names(metrics[ds][judge]) if m not in names]
        names = [m for m in _PREFERRED if m in names] + sorted(m for m in names if m not in _PREFERRED)
        rows = [[judge] + [_cell(metrics[ds][judge], m) for m in names] for judge in sorted(metrics[ds])]
        out.append(_Table(f"metrics-{ds}", ["judge"] + [_label(m) for m in names], rows))
    return out


def _ci_note(sources: ReportSources) -> str:
    df = sources.tables.get("metrics")
    if df is None or "ci_method" not in df.columns:
        return "Intervals: bootstrap where metrics.json has `_ci_low/_ci_high`, else Wilson (`_wilson_low/_wilson_high`)."
    methods = sorted({m for m in df["ci_method"].to_list() if m})
    return "Intervals (95%): " + ("; ".join(methods) if methods else "none") + "; Wilson where no bootstrap interval."


def _prompt_table(sources: ReportSources) -> _Table | None:
    df = sources.tables.get("prompt_sensitivity")
    if df is None or df.height == 0:
        return None
    rows = []
    for r in df.sort("dataset", "backbone").iter_rows(named=True):
        judges = r.get("judges")
        rows.append([r["dataset"], r["backbone"], ", ".join(judges) if isinstance(judges, list) else _num(judges),
                     _num(r.get("strict_accuracy_min")), _num(r.get("strict_accuracy_max")),
                     _num(r.get("strict_accuracy_spread")), _num(r.get("mean_flip_rate")), _num(r.get("max_flip_rate"))])
    return _Table("prompt-sensitivity", ["dataset", "backbone", "prompt variants (judges)", "min strict acc.", "max strict acc.",
                                         "spread", "mean flip rate", "max flip rate"], rows)


def _distance_judges(sources: ReportSources) -> list[str]:
    if sources.judges is None:
        return []
    return sorted(r["judge"] for r in sources.judges.iter_rows(named=True) if str(r.get("backend") or "").startswith("distance"))


def _nearest_table(sources: ReportSources, params: ReportParams) -> _Table | None:
    judges = _distance_judges(sources)
    v = sources.verdicts
    if not judges or v is None or "evidence_titles" not in v.columns or params.nearest_pairs == 0:
        return None
    rows = []

    def title(ds: str, idea: str) -> str:
        return sources.titles.get((ds, idea), idea)

    for (ds, judge), grp in sorted(v.filter(v["judge"].is_in(judges)).group_by(["dataset", "judge"]), key=lambda g: g[0]):
        for r in grp.sort("pair_id").head(params.nearest_pairs).iter_rows(named=True):
            ev = list(r.get("evidence_titles") or [])
            # The judge lists idea_0's neighbours then idea_1's, equally many.
            half = len(ev) // 2 if len(ev) % 2 == 0 else len(ev)
            near0, near1 = ev[:half][: params.nearest_titles], ev[half:][: params.nearest_titles]
            verdict = r["verdict"]
            rows.append([
                ds, judge, r["pair_id"],
                f"{title(ds, r['idea_0'])} (score {_num(r.get('score_0'))})", "; ".join(near0) or "—",
                f"{title(ds, r['idea_1'])} (score {_num(r.get('score_1'))})", "; ".join(near1) or "—",
                title(ds, verdict) if verdict not in ("tie", "none") else verdict,
            ])
    return _Table("nearest-prior-work", ["dataset", "judge", "pair", "idea 0", "nearest prior work (idea 0)", "idea 1",
                                         "nearest prior work (idea 1)", "verdict (more novel)"], rows)


def _cost_rows(sources: ReportSources) -> tuple[list[dict[str, Any]], str]:
    rows, summed = [], False
    per_verdict: dict[tuple[str, str], float] = {}
    if sources.verdicts is not None and "cost_usd" in sources.verdicts.columns:
        for r in sources.verdicts.select("dataset", "judge", "cost_usd").iter_rows(named=True):
            k = (r["dataset"], r["judge"])
            per_verdict[k] = per_verdict.get(k, 0.0) + float(r["cost_usd"] or 0.0)
    for ds in sorted(sources.metrics):
        for judge in sorted(sources.metrics[ds]):
            d = sources.metrics[ds][judge]
            acc = d.get("strict_accuracy")
            cost = next((d[k] for k in _COST_KEYS if d.get(k) is not None), None)
            if cost is None and (ds, judge) in per_verdict:
                cost, summed = per_verdict[(ds, judge)], True
            if acc is not None and cost is not None:
                rows.append({"dataset": ds, "judge": judge, "cost_usd": round(float(cost), 6), "strict_accuracy": acc})
    note = ("Cost is the sum of `cost_usd` in verdicts.parquet (metrics.json has no cost metric)." if summed
            else "Cost from metrics.json.")
    return rows, note


# -- plot data -------------------------------------------------------------------

def _csv(rows: list[dict[str, Any]], columns: list[str]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if r.get(c) is None else (repr(r[c]) if isinstance(r[c], float) else r[c]) for c in columns])
    return buf.getvalue().encode("utf-8")


def _series(metrics: dict[str, Any], m: str) -> list[dict[str, Any]]:
    rows = []
    for ds in sorted(metrics):
        for judge in sorted(metrics[ds]):
            d = metrics[ds][judge]
            if d.get(m) is None:
                continue
            iv = _interval(d, m)
            rows.append({"dataset": ds, "judge": judge, "label": f"{judge} ({ds})", m: d[m],
                         "ci_low": iv[0] if iv else None, "ci_high": iv[1] if iv else None})
    return rows


@dataclass
class _Figure:
    id: str
    title: str
    svg_name: str | None
    note: str = ""


def build_report(sources: ReportSources, params: ReportParams) -> Report:
    """Render every section; charts go to plots/ as SVG and are embedded in the HTML as data: URIs."""
    plots: dict[str, bytes] = {}
    figures: dict[str, _Figure] = {}

    def figure(fid: str, title: str, name: str, chart_fn, rows: list[dict[str, Any]], empty: str) -> None:
        if not rows:
            figures[fid] = _Figure(fid, title, None, empty)
            return
        plots[f"{name}.svg"] = _charts.to_svg(chart_fn(rows)).encode("utf-8")
        figures[fid] = _Figure(fid, title, f"{name}.svg")

    acc = _series(sources.metrics, "strict_accuracy")
    plots["accuracy.csv"] = _csv(acc, ["dataset", "judge", "label", "strict_accuracy", "ci_low", "ci_high"])
    figure("accuracy", "Strict accuracy with 95% intervals", "accuracy", _charts.accuracy_chart, acc,
           "metrics.json has no strict_accuracy.")
    flips = _series(sources.metrics, "order_flip_rate")
    plots["order_flips.csv"] = _csv(flips, ["dataset", "judge", "label", "order_flip_rate", "ci_low", "ci_high"])
    figure("order", "Order flips: forward vs reverse verdicts", "order_flips", _charts.order_flip_chart, flips,
           "No judge ran both orders (metrics.json has no order_flip_rate).")
    cost, cost_note = _cost_rows(sources)
    plots["accuracy_cost.csv"] = _csv(cost, ["dataset", "judge", "cost_usd", "strict_accuracy"])
    figure("cost", "Accuracy vs cost", "accuracy_cost", _charts.cost_chart, cost, "No cost figures.")
    figures["cost"].note = figures["cost"].note or cost_note

    heatmaps: list[_Figure] = []
    fm = sources.tables.get("flip_matrix")
    if fm is None:
        heatmaps.append(_Figure("flip-matrix", "Flip matrix", None, "The metrics outputs hold no flip_matrix table."))
    else:
        for ds in sorted(set(fm["dataset"].to_list())):
            rows = [r for r in fm.sort("judge_a", "judge_b").iter_rows(named=True) if r["dataset"] == ds and r["flip_rate"] is not None]
            name = f"flip_matrix_{ds}"
            plots[f"{name}.svg"] = _charts.to_svg(_charts.flip_matrix_chart(rows)).encode("utf-8")
            heatmaps.append(_Figure(f"flip-matrix-{ds}", f"Flip matrix — {ds}", f"{name}.svg",
                                    "Share of commonly judged pairs on which two judges' verdicts differ (ties are a third verdict)."))
    prompt = _prompt_table(sources)
    spread_rows = [] if prompt is None else [
        r for r in sources.tables["prompt_sensitivity"].sort("dataset", "backbone").iter_rows(named=True)
    ]
    figure("prompt-spread", "Strict accuracy across prompt variants", "prompt_spread", _charts.spread_chart,
           [{k: r[k] for k in ("dataset", "backbone", "strict_accuracy_min", "strict_accuracy_max")} for r in spread_rows],
           "No backbone was run with two or more prompt variants.")

    ctx = {
        "main": _main_table(sources.metrics),
        "errors": _error_table(sources.metrics),
        "details": _detail_tables(sources.metrics),
        "ci_note": _ci_note(sources),
        "figures": figures,
        "heatmaps": heatmaps,
        "prompt": prompt,
        "nearest": _nearest_table(sources, params),
        "distance_judges": _distance_judges(sources),
    }
    return Report(html=_html(ctx, plots), markdown=_markdown(ctx), plots=dict(sorted(plots.items())))


# -- HTML ----------------------------------------------------------------------------

_AUDIT_TEXT = (
    "The verdict-change audit between the previous recorded run and this one depends on the runs ledger, which is "
    "not an input of this report; it is written next to this file as audit.md and audit.json on every report run "
    "(and by `novelty-audit audit`). Keeping it out makes this report a function of its hashed inputs only "
    "(docs/design/report.md)."
)

_NO_ERRORS = "No call failed with an error."

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem;font-size:0.85rem}
th,td{border:1px solid #ccc;padding:0.25rem 0.5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}
figure{margin:1rem 0}
figcaption,.note{color:#555;font-size:0.85rem}
nav a{margin-right:1rem}
.wide{overflow-x:auto}
"""


def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _html_table(t: _Table) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in t.header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    return f'<table id="{_e(t.id)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _html_figure(f: _Figure, plots: dict[str, bytes]) -> str:
    if f.svg_name is None:
        return f'<p class="note" id="{_e(f.id)}">{_e(f.title)}: {_e(f.note)}</p>'
    uri = "data:image/svg+xml;base64," + base64.b64encode(plots[f.svg_name]).decode("ascii")
    cap = _e(f.title) + (f" — {_e(f.note)}" if f.note else "")
    return f'<figure id="{_e(f.id)}"><img alt="{_e(f.title)}" src="{uri}"><figcaption>{cap}</figcaption></figure>'


def _html(ctx: dict[str, Any], plots: dict[str, bytes]) -> str:
    figs = ctx["figures"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>novelty-audit report</title>',
        f"<style>{_CSS}</style></head><body>",
        "<h1>novelty-audit report</h1>",
        '<nav><a href="#overview">judges × datasets</a><a href="#charts">charts</a><a href="#flip-matrices">flip matrices</a>'
        '<a href="#prompts">prompt sensitivity</a><a href="#cost-section">cost</a><a href="#nearest">prior work</a>'
        '<a href="#audit">audit</a><a href="#all-metrics">all metrics</a></nav>',
        '<h2 id="overview">Judges × datasets</h2>',
        f'<p class="note">{_e(ctx["ci_note"])} Strict accuracy counts a tie or a missing verdict as wrong; soft accuracy '
        "counts a tie as ½. Order flip rate: share of pairs run in both orders whose two verdicts differ.</p>",
        _html_table(ctx["main"]),
        '<h3 id="failed-calls">Failed calls by reason</h3>',
        (f'<p class="note">{_e(ctx["errors"].note)}</p>' + _html_table(ctx["errors"]) if ctx["errors"]
         else f'<p class="note">{_e(_NO_ERRORS)}</p>'),
        '<h2 id="charts">Accuracy and order effects</h2>',
        _html_figure(figs["accuracy"], plots),
        _html_figure(figs["order"], plots),
        '<h2 id="flip-matrices">Flip matrices</h2>',
        *(_html_figure(f, plots) for f in ctx["heatmaps"]),
        '<h2 id="prompts">Prompt sensitivity</h2>',
        _html_table(ctx["prompt"]) if ctx["prompt"] else '<p class="note">No backbone was run with two or more prompt variants.</p>',
        _html_figure(figs["prompt-spread"], plots),
        '<h2 id="cost-section">Accuracy vs cost</h2>',
        _html_figure(figs["cost"], plots),
        '<h2 id="nearest">Distance judges: nearest prior work</h2>',
        (_html_table(ctx["nearest"]) if ctx["nearest"] else
         f'<p class="note">{"No distance judge in this run." if not ctx["distance_judges"] else "No evidence titles recorded."}</p>'),
        '<h2 id="audit">Latest audit</h2>',
        f'<p class="note">{_e(_AUDIT_TEXT)}</p>',
        '<h2 id="all-metrics">All metrics</h2>',
    ]
    for t in ctx["details"]:
        parts += [f"<h3>{_e(t.id.removeprefix('metrics-'))}</h3>", f'<div class="wide">{_html_table(t)}</div>']
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# -- Markdown --------------------------------------------------------------------------

def _md_cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _md_table(t: _Table) -> str:
    lines = ["| " + " | ".join(_md_cell(h) for h in t.header) + " |", "|" + "---|" * len(t.header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
    return "\n".join(lines)


def _md_figure(f: _Figure) -> str:
    if f.svg_name is None:
        return f"_{f.title}: {f.note}_"
    return f"![{f.title}](plots/{f.svg_name})" + (f"\n\n_{f.note}_" if f.note else "")


def _markdown(ctx: dict[str, Any]) -> str:
    figs = ctx["figures"]
    parts = [
        "# novelty-audit report",
        "## Judges × datasets",
        ctx["ci_note"],
        _md_table(ctx["main"]),
        "### Failed calls by reason",
        (ctx["errors"].note + "\n\n" + _md_table(ctx["errors"])) if ctx["errors"] else f"_{_NO_ERRORS}_",
        "## Accuracy and order effects",
        _md_figure(figs["accuracy"]),
        _md_figure(figs["order"]),
        "## Flip matrices",
        *(_md_figure(f) for f in ctx["heatmaps"]),
        "## Prompt sensitivity",
        _md_table(ctx["prompt"]) if ctx["prompt"] else "_No backbone was run with two or more prompt variants._",
        _md_figure(figs["prompt-spread"]),
        "## Accuracy vs cost",
        _md_figure(figs["cost"]),
        "## Distance judges: nearest prior work",
        _md_table(ctx["nearest"]) if ctx["nearest"] else "_No distance judge evidence in this run._",
        "## Latest audit",
        _AUDIT_TEXT,
        "## All metrics",
    ]
    for t in ctx["details"]:
        parts += [f"### {t.id.removeprefix('metrics-')}", _md_table(t)]
    return "\n\n".join(parts) + "\n"


def write_report(report: Report, out_dir: Path) -> dict[str, list[str] | None]:
    """Write report.html, report.md and plots/*; returns the outputs for the stage manifest."""
    out_dir = Path(out_dir)
    atomic_write_bytes(out_dir / "report.html", report.html.encode("utf-8"))
    atomic_write_bytes(out_dir / "report.md", report.markdown.encode("utf-8"))
    for name, data in report.plots.items():
        atomic_write_bytes(out_dir / "plots" / name, data)
    return {"report.html": None, "report.md": None, **{f"plots/{n}": None for n in report.plots}}
