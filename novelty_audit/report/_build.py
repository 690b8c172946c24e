"""Build the report (HTML, Markdown, plot files) from its sources. Deterministic: no clock, no host,
no ledger; the same sources give byte-identical files."""

from __future__ import annotations

import csv
import html
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from ..artifacts import atomic_write_bytes
from ..config import CONTROL_BACKENDS, PROBE_SUFFIX, ReportParams, probe_dataset
from ..markdown import md_text
from . import _charts
from ._agents import AGENTS_ID, agent_blocks
from ._candidates import CANDIDATES_ID, candidate_blocks
from ._blocks import Block, Figure, Heading, Link, Para, Raw, Section, Span, Table, render_html, render_markdown
from ._instability import INSTABILITY_ID, instability_blocks
from ._sources import ReportSources

__all__ = ["Report", "build_report", "write_report", "DRIFT_FILES", "CONTROL_BACKENDS"]

DRIFT_FILES = ("drift.md", "drift.json")
"""The drift watch's history per judge, next to the report and outside it (it depends on the drift ledger)."""

"""Backends whose answer ignores the ideas: the reference floor, drawn as a band and kept out of colour scales."""

_SUFFIXES = ("_ci_low", "_ci_high", "_wilson_low", "_wilson_high")
_PREFERRED = (
    "n_pairs", "strict_accuracy", "accuracy_on_covered", "covered", "coverage", "soft_accuracy", "accuracy_without_ties",
    "tie_rate", "n_no_verdict", "n_invalid", "n_truncated", "n_refusal", "n_error", "n_order_pairs", "order_flip_rate",
    "first_position_rate", "n_ideas", "pointwise_accuracy", "pointwise_coverage", "pointwise_macro_f1", "pointwise_auroc",
    "n_scored", "pointwise_n_invalid", "pointwise_n_truncated", "pointwise_n_refusal", "pointwise_n_error", "cost_usd",
)
_FAILED = ("n_invalid", "n_truncated", "n_refusal", "n_error")
_BY_REASON = (("pairwise", "n_error_by_reason"), ("pointwise", "pointwise_n_error_by_reason"))
"""metrics.json's failed calls by reason per task (novelty_audit.metrics.BY_REASON)."""
_COST_KEYS = ("cost_usd", "total_cost_usd")
_CORE_KEYS = ("n_pairs", "strict_accuracy", "n_ideas")
"""A dataset whose judges have none of these is not pairwise/pointwise (NovBench): only its own section shows it."""

SCORE_DEFINITIONS = {
    "distance-yin": "1 − the highest cosine similarity between the idea and any admissible corpus abstract",
    "distance-knn": "the mean cosine distance from the idea to its k nearest admissible corpus abstracts",
    "distance-rnd": ("relative neighbour density: the share of the idea's nearest corpus abstracts whose own "
                     "neighbourhood is denser than the idea's (0.5 = as crowded as its neighbours, 1 = sparser than all)"),
}
"""What `score` means per distance backend (novelty_audit/judges/distance/_scores.py); larger = farther from prior work."""


@dataclass(frozen=True)
class Report:
    html: str
    markdown: str
    plots: dict[str, bytes] = field(default_factory=dict)
    """plots/<name> → bytes: SVG charts and the CSV data behind the `dvc plots` definitions."""


# -- judges --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Judge:
    name: str
    backend: str
    config: dict[str, Any]
    config_digest: str

    @property
    def control(self) -> bool:
        return self.backend in CONTROL_BACKENDS

    @property
    def sees_positions(self) -> bool:
        # A distance judge scores each idea on its own: which idea is shown first cannot matter to it.
        return not self.backend.startswith("distance")

    @property
    def kind(self) -> str:
        return "control" if self.control else "measured"


def _judges(sources: ReportSources, datasets: list[str]) -> dict[str, _Judge]:
    rows: dict[str, tuple[str, dict[str, Any], str]] = {}
    if sources.judges is not None:
        for r in sources.judges.iter_rows(named=True):
            try:
                cfg = orjson.loads(r.get("config") or "{}")
            except orjson.JSONDecodeError:
                cfg = {}
            rows[r["judge"]] = (str(r.get("backend") or ""), cfg if isinstance(cfg, dict) else {}, str(r.get("config_digest") or ""))
    names = sorted({j for ds in datasets for j in sources.metrics[ds]})
    out = {}
    for n in names:
        backend, cfg, digest = rows.get(n, ("", {}, ""))
        # Without judges.parquet a control is still known by its name (the shipped controls are named after their backend).
        out[n] = _Judge(n, backend or (n if n in CONTROL_BACKENDS else ""), cfg, digest)
    return out


def _core_datasets(metrics: dict[str, Any]) -> list[str]:
    return sorted(ds for ds, js in metrics.items() if any(any(k in d for k in _CORE_KEYS) for d in js.values()))


# -- values ----------------------------------------------------------------------------------------------------

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
    if (m.startswith("n_") or m == "covered") and isinstance(v, float) and v.is_integer():
        return str(int(v))
    return _num(v)


def _cell(d: dict[str, Any], m: str) -> str:
    if m in d and d[m] is None and "cost" in m:
        return "unknown"  # a cost at a price nobody set (metrics.json null), never shown as free
    if m not in d or d[m] is None:
        return "—"
    iv = _interval(d, m)
    # An interval of zero width (every resample gives the same value) is an exact value: no brackets.
    if iv is None or f"{iv[0]:.3f}" == f"{iv[1]:.3f}":
        return _value(d, m)
    return _value(d, m) + f" [{iv[0]:.3f}, {iv[1]:.3f}]"


def _label(m: str) -> str:
    return m.replace("_", " ")


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s)


def _partial(d: dict[str, Any]) -> bool:
    cov = d.get("coverage")
    return isinstance(cov, (int, float)) and cov < 1.0 and d.get("accuracy_on_covered") is not None


def _pct(v: float) -> str:
    return f"{100 * v:.0f}%"


def _failed(d: dict[str, Any]) -> str:
    return "/".join(_value(d, k) if k in d else "0" for k in _FAILED)


def _no_verdict(d: dict[str, Any]) -> str:
    if d.get("n_no_verdict") is None or d.get("n_pairs") is None:
        return "—"
    return f"{_value(d, 'n_no_verdict')} of {_value(d, 'n_pairs')}"


def _cost(d: dict[str, Any]) -> float | None:
    return next((float(d[k]) for k in _COST_KEYS if d.get(k) is not None), None)


# -- the per-dataset accuracy tables -------------------------------------------------------------------------------

def _published_for(sources: ReportSources, ds: str) -> list[dict[str, Any]]:
    """Published strict accuracies on dataset `ds` (other metrics are not comparable and stay in their own table)."""
    return [p for p in sources.published if p.get("dataset") == ds and p.get("metric") == "strict_accuracy"
            and (p.get("value") is not None or p.get("low") is not None)]


def _pub_range(p: dict[str, Any]) -> tuple[float, float, float]:
    """(value, low, high): a published range is drawn at its midpoint with the range as its interval."""
    if p.get("value") is not None:
        v = float(p["value"])
        return v, v, v
    lo, hi = float(p["low"]), float(p["high"])
    return (lo + hi) / 2, lo, hi


def _pub_value(p: dict[str, Any]) -> str:
    approx = "≈" if p.get("approximate") else ""
    if p.get("value") is not None:
        return approx + f"{float(p['value']):.3f}"
    if p.get("low") is not None and p.get("high") is not None:
        return approx + f"{float(p['low']):.3f}–{float(p['high']):.3f}"
    return "—"


def _published_label(p: dict[str, Any]) -> str:
    return f"{p['judge']}" + (f", prompt {p['prompt']}" if p.get("prompt") else "") + " (published)"


def _saturated(d: dict[str, Any], j: _Judge, threshold: float) -> bool:
    return not j.control and isinstance(d.get("tie_rate"), (int, float)) and d["tie_rate"] >= threshold


def _sorted_judges(ms: dict[str, Any], judges: dict[str, _Judge]) -> list[str]:
    def key(n: str) -> tuple[int, float, str]:
        acc = ms[n].get("strict_accuracy")
        return (1 if judges[n].control else 0, -(acc if isinstance(acc, (int, float)) else -1.0), n)

    return sorted((n for n in ms if n in judges), key=key)


def _covered_cell(d: dict[str, Any]) -> str:
    if not _partial(d):
        return "all pairs"
    n = f"{_value(d, 'covered')} pairs, " if d.get("covered") is not None else ""
    return f"{_cell(d, 'accuracy_on_covered')} on {n}coverage {_num(d['coverage'])}"


def _accuracy_table(ds: str, sources: ReportSources, judges: dict[str, _Judge], params: ReportParams) -> Table:
    ms = sources.metrics[ds]
    partial = any(_partial(d) for d in ms.values())
    header = ["judge", "strict accuracy"]
    if partial:
        header += ["accuracy on covered pairs"]
    header += ["soft accuracy", "tie rate", "no verdict", "failed calls (inv./trunc./ref./err.)",
               "order flip rate", "first-position rate", "note"]
    rows: list[list[Any]] = []
    classes: list[str] = []
    for n in _sorted_judges(ms, judges):
        d, j = ms[n], judges[n]
        notes = ["control"] if j.control else []
        if _saturated(d, j, params.saturation_tie_rate):
            notes.append(f"saturated: ties on {_pct(d['tie_rate'])} of pairs")
        if _partial(d):
            notes.append("partial coverage")
        row = [n, _cell(d, "strict_accuracy")]
        if partial:
            row += [_covered_cell(d)]
        row += [_cell(d, "soft_accuracy"), _cell(d, "tie_rate"), _no_verdict(d), _failed(d), _cell(d, "order_flip_rate"),
                _cell(d, "first_position_rate"), "; ".join(notes)]
        rows.append(row)
        classes.append(j.kind)
    for row in _published_rows(sources, ds, len(header)):
        rows.append(row)
        classes.append("published")
    return Table(f"judges-{_slug(ds)}", header, rows, classes, wide=True, cls="nums")


def _published_rows(sources: ReportSources, ds: str, width: int) -> list[list[Any]]:
    """Table rows (`width` cells) of the published strict accuracies on `ds`: label, value, "published, not rerun"."""
    rows = []
    for p in _published_for(sources, ds):
        note: Any = (Link(f"published, not rerun: {p['source']}", p["url"]) if p.get("url")
                     else f"published, not rerun: {p['source']}")
        rows.append([_published_label(p), _pub_value(p), Span(note, width - 2)])
    return rows


def _published_table(sources: ReportSources) -> Table | None:
    if not sources.published:
        return None
    rows = []
    for p in sources.published:
        src: Any = Link(p["source"], p["url"]) if p.get("url") else p["source"]
        rows.append([src, p.get("dataset") or "—", p["judge"], _label(str(p.get("metric") or "")),
                     _pub_value(p), p.get("prompt") or "—", p.get("note") or ""])
    return Table("published", ["source", "dataset", "judge", "metric", "value (share)", "prompt", "note"], rows,
                 ["published"] * len(rows), wide=True)


def _saturation_table(sources: ReportSources, datasets: list[str], judges: dict[str, _Judge], params: ReportParams) -> Table | None:
    rows = []
    for ds in datasets:
        for n in sorted(sources.metrics[ds]):
            d = sources.metrics[ds][n]
            if n in judges and _saturated(d, judges[n], params.saturation_tie_rate):
                rows.append([ds, n, _cell(d, "tie_rate"), _cell(d, "strict_accuracy"), _cell(d, "soft_accuracy")])
    if not rows:
        return None
    return Table("saturation", ["dataset", "judge", "tie rate", "strict accuracy", "soft accuracy"], rows)


def _error_table(metrics: dict[str, Any], datasets: list[str]) -> Table | None:
    """Failed calls (outcome error) per judge, dataset and task, by reason, most frequent first."""
    rows: list[list[Any]] = []
    for ds in datasets:
        for judge in sorted(metrics[ds]):
            for task, key in _BY_REASON:
                reasons = metrics[ds][judge].get(key) or {}
                for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
                    rows.append([judge, ds, task, reason, _num(n)])
    if not rows:
        return None
    return Table("error-reasons", ["judge", "dataset", "task", "error reason", "failed calls"], rows)


_DETAIL_COLUMNS = 6
"""Metric columns per "All metrics" table: a dataset's figures are split into tables this wide (the judge column
repeated), so none runs off the page."""


def _detail_tables(metrics: dict[str, Any], datasets: list[str]) -> list[tuple[str, list[Table]]]:
    out = []
    for ds in datasets:
        names: list[str] = []
        for judge in sorted(metrics[ds]):
            names += [m for m in _names(metrics[ds][judge]) if m not in names]
        names = [m for m in _PREFERRED if m in names] + sorted(m for m in names if m not in _PREFERRED)
        tables = []
        for i in range(0, len(names), _DETAIL_COLUMNS):
            part = names[i: i + _DETAIL_COLUMNS]
            rows: list[list[Any]] = [[judge] + [_cell(metrics[ds][judge], m) for m in part] for judge in sorted(metrics[ds])]
            tid = f"metrics-{_slug(ds)}" + (f"-{i // _DETAIL_COLUMNS + 1}" if i else "")
            tables.append(Table(tid, ["judge"] + [_label(m) for m in part], rows, cls="detail"))
        out.append((ds, tables))
    return out


def _ci_note(sources: ReportSources) -> str:
    df = sources.tables.get("metrics")
    methods: list[str] = []
    if df is not None and "ci_method" in df.columns:
        methods = sorted({m for m in df["ci_method"].to_list() if m})
    how = ("; ".join(methods) if methods else "bootstrap where metrics.json has `_ci_low/_ci_high`") + \
        "; Wilson where there is no bootstrap interval"
    return (f"Brackets are 95% intervals: {how}. An interval of zero width is shown as the bare value: "
            "every resample gave the same number.")


# -- prompt sensitivity ------------------------------------------------------------------------------------------

def _prompt_rows(sources: ReportSources) -> list[dict[str, Any]]:
    df = sources.tables.get("prompt_sensitivity")
    return [] if df is None or df.height == 0 else list(df.sort("dataset", "backbone").iter_rows(named=True))


def _prompt_table(rows: list[dict[str, Any]]) -> Table | None:
    if not rows:
        return None
    out: list[list[Any]] = []
    for r in rows:
        judges = r.get("judges")
        out.append([r["dataset"], r["backbone"], ", ".join(judges) if isinstance(judges, list) else _num(judges),
                    _num(r.get("strict_accuracy_min")), _num(r.get("strict_accuracy_max")),
                    _num(r.get("strict_accuracy_spread")), _num(r.get("mean_flip_rate")), _num(r.get("max_flip_rate"))])
    return Table("prompt-sensitivity", ["dataset", "backbone", "prompt variants (judges)", "min strict acc.", "max strict acc.",
                                        "spread", "mean flip rate", "max flip rate"], out)


# -- nearest prior work --------------------------------------------------------------------------------------------

def _idea_label(sources: ReportSources, ds: str, idea: str | None) -> str:
    if idea is None:
        return "—"
    title = sources.titles.get((ds, idea)) or f"(untitled idea {idea})"
    return title + (" [generated idea]" if (ds, idea) in sources.generated else "")


def _evidence(r: dict[str, Any], n: int) -> tuple[str, str]:
    """The nearest prior work of idea 0 and idea 1, nearest first: from evidence_docs, else evidence_titles."""
    raw = r.get("evidence_docs")
    if raw and raw != "[]":
        docs = [d for d in orjson.loads(raw) if not d.get("role")]  # a role: not a neighbour (a leakage drop, the score)
        out = []
        for slot in ("idea_0", "idea_1"):
            mine = sorted((d for d in docs if d.get("slot") == slot), key=lambda d: int(d.get("rank") or 0))[:n]
            out.append("; ".join(
                str(d.get("title") or d.get("doc_id")) + " (" + ", ".join(
                    x for x in ((str(d["year"]) if d.get("year") is not None else ""),
                                (f"cos {float(d['similarity']):.2f}" if d.get("similarity") is not None else "")) if x) + ")"
                for d in mine).replace(" ()", "") or "—")
        return out[0], out[1]
    ev = list(r.get("evidence_titles") or [])
    # Without evidence_docs the judge lists idea_0's neighbours then idea_1's, equally many.
    half = len(ev) // 2 if len(ev) % 2 == 0 else len(ev)
    return "; ".join(ev[:half][:n]) or "—", "; ".join(ev[half:][:n]) or "—"


_WHY = ("most confident wrong verdict", "closest call", "most confident correct verdict")


def _pick(rows: list[dict[str, Any]], n: int) -> list[tuple[str, dict[str, Any]]]:
    """Informative examples, deterministic: in turn the wrong verdict with the largest score margin, the pair with the
    smallest margin (ties first), the correct verdict with the largest margin; ties broken by pair id."""
    scored = [r for r in rows if r.get("score_0") is not None and r.get("score_1") is not None]
    margin = {r["pair_id"]: abs(float(r["score_0"]) - float(r["score_1"])) for r in scored}
    wrong = sorted((r for r in scored if r["verdict"] != r.get("gold_idea_id")), key=lambda r: (-margin[r["pair_id"]], r["pair_id"]))
    close = sorted(scored, key=lambda r: (margin[r["pair_id"]], r["pair_id"]))
    right = sorted((r for r in scored if r["verdict"] == r.get("gold_idea_id")), key=lambda r: (-margin[r["pair_id"]], r["pair_id"]))
    queues = [list(q) for q in (wrong, close, right)]
    picked: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    while len(picked) < n:
        progressed = False
        for why, q in zip(_WHY, queues):
            while q and q[0]["pair_id"] in seen:
                q.pop(0)
            if q and len(picked) < n:
                r = q.pop(0)
                seen.add(r["pair_id"])
                picked.append((why, r))
                progressed = True
        if not progressed:
            break
    return picked


def _nearest(sources: ReportSources, judges: dict[str, _Judge], datasets: list[str], params: ReportParams) -> tuple[Table | None, list[str]]:
    names = sorted(n for n, j in judges.items() if j.backend.startswith("distance"))
    v = sources.verdicts
    if not names or v is None or params.nearest_pairs == 0:
        return None, names
    rows: list[list[Any]] = []
    for ds in datasets:
        for judge in names:
            grp = v.filter((v["dataset"] == ds) & (v["judge"] == judge))
            for why, r in _pick(list(grp.sort("pair_id").iter_rows(named=True)), params.nearest_pairs):
                near0, near1 = _evidence(r, params.nearest_titles)
                verdict = r["verdict"]
                gold = r.get("gold_idea_id")
                rows.append([
                    ds, judge, why, _idea_label(sources, ds, gold),
                    f"{_idea_label(sources, ds, r['idea_0'])} (score {float(r['score_0']):.3f})", near0,
                    f"{_idea_label(sources, ds, r['idea_1'])} (score {float(r['score_1']):.3f})", near1,
                    _idea_label(sources, ds, verdict) if verdict not in ("tie", "none") else verdict,
                    "correct" if gold is not None and verdict == gold else "wrong",
                ])
    if not rows:
        return None, names
    return Table("nearest-prior-work", ["dataset", "judge", "shown because", "gold (more novel)", "idea 0 (score)",
                                        "nearest prior work of idea 0", "idea 1 (score)", "nearest prior work of idea 1",
                                        "verdict (more novel)", "verdict is"], rows, wide=True), names


# -- cost ----------------------------------------------------------------------------------------------------------

def _cost_rows(sources: ReportSources, datasets: list[str]) -> tuple[list[dict[str, Any]], str]:
    rows, summed = [], False
    per_verdict: dict[tuple[str, str], float] = {}
    if sources.verdicts is not None and "cost_usd" in sources.verdicts.columns:
        for r in sources.verdicts.select("dataset", "judge", "cost_usd").iter_rows(named=True):
            k = (r["dataset"], r["judge"])
            # An unknown cost (a model without a price) makes the judge's total unknown: NaN, never counted as free.
            per_verdict[k] = per_verdict.get(k, 0.0) + (float("nan") if r["cost_usd"] is None else float(r["cost_usd"]))
    for ds in datasets:
        for judge in sorted(sources.metrics[ds]):
            d = sources.metrics[ds][judge]
            acc = d.get("strict_accuracy")
            cost = _cost(d)
            if cost is None and (ds, judge) in per_verdict:
                cost, summed = per_verdict[(ds, judge)], True
            # Free judges (controls, distance, local models) have no place on a cost axis.
            if acc is not None and cost is not None and cost > 0:  # NaN (unknown) is not > 0: left off the axis
                rows.append({"dataset": ds, "judge": judge, "cost_usd": round(float(cost), 6), "strict_accuracy": acc})
    note = ("Cost is the sum of `cost_usd` in verdicts.parquet (metrics.json has no cost metric)" if summed
            else "Cost from metrics.json")
    return rows, note + "; only judges that cost something are shown."


def _cost_per_pair(sources: ReportSources, ds: str, judge: str) -> str:
    d = sources.metrics[ds][judge]
    cost, n = _cost(d), d.get("n_pairs")
    if any(k in d and d[k] is None for k in _COST_KEYS):
        return "unknown"  # metrics.json: null, a price nobody set
    if cost is None and sources.verdicts is not None and "cost_usd" in sources.verdicts.columns:
        v = sources.verdicts.filter((sources.verdicts["dataset"] == ds) & (sources.verdicts["judge"] == judge))
        if v["cost_usd"].null_count():
            return "unknown"
        cost = float(v["cost_usd"].sum()) if v.height else None
    if cost is None or not n:
        return "—"
    return "free" if cost == 0 else f"${cost / float(n):.4f}"


# -- plot data -------------------------------------------------------------------------------------------------

def _csv(rows: list[dict[str, Any]], columns: list[str]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if r.get(c) is None else (repr(r[c]) if isinstance(r[c], float) else r[c]) for c in columns])
    return buf.getvalue().encode("utf-8")


def _series(sources: ReportSources, ds: str, judges: dict[str, _Judge], m: str,
            keep: Callable[[_Judge], bool] = lambda j: True) -> list[dict[str, Any]]:
    """One dataset's judges with metric m, best first (controls after measured judges)."""
    ms = sources.metrics[ds]
    rows = []
    for n in _sorted_judges(ms, judges):
        d = ms[n]
        if d.get(m) is None or not keep(judges[n]):
            continue
        iv = _interval(d, m)
        rows.append({"dataset": ds, "judge": n, "label": n, "kind": judges[n].kind, m: d[m],
                     "ci_low": iv[0] if iv else d[m], "ci_high": iv[1] if iv else d[m]})
    if m in ("strict_accuracy", "order_flip_rate"):
        rows.sort(key=lambda r: (r["kind"] == "control", -float(r[m]), r["judge"]))
    return rows


# -- judge cards ---------------------------------------------------------------------------------------------------

def _prompt_cell(rows: list[dict[str, Any]], judge: str) -> str:
    mine = [r for r in rows if isinstance(r.get("judges"), list) and judge in r["judges"]]
    if not mine:
        return "not measured (no other prompt variant of this backbone was run)"
    return "; ".join(
        f"{r['dataset']}: {len(r['judges'])} variants of {r['backbone']}, strict accuracy {_num(r.get('strict_accuracy_min'))}–"
        f"{_num(r.get('strict_accuracy_max'))}, mean flip rate between variants {_num(r.get('mean_flip_rate'))}"
        for r in mine)


def _card(j: _Judge, sources: ReportSources, datasets: list[str], prompt_rows: list[dict[str, Any]], params: ReportParams) -> Section:
    slug = _slug(j.name)
    facts: list[list[Any]] = [
        ["backend", j.backend or "—"],
        ["kind", j.kind],
    ]
    for key in ("model", "prompt", "votes", "orders"):
        if j.config.get(key) is not None:
            facts.append([key, str(j.config[key])])
    facts += [
        ["config digest", j.config_digest[:16] or "—"],
        ["sees which idea is shown first", "yes" if j.sees_positions else
         "no (scores each idea on its own; its first-position rate is the share of its verdicts for the idea the "
         "benchmark lists first)"],
        ["prompt sensitivity", _prompt_cell(prompt_rows, j.name)],
        ["drift history", Link(f"drift.md, section {j.name} (from the drift ledger, outside this report)", f"drift.md#{slug}")],
    ]
    rows: list[list[Any]] = []
    for ds in datasets:
        d = sources.metrics[ds].get(j.name)
        if d is None:
            continue  # a judge that never saw a dataset has no row for it, not a row of zeros
        notes = []
        if _saturated(d, j, params.saturation_tie_rate):
            notes.append("saturated")
        probe = sources.metrics.get(probe_dataset(ds), {}).get(j.name, {})
        rows.append([ds, _cell(d, "strict_accuracy"), _covered_cell(d), _cell(d, "tie_rate"), _no_verdict(d), _failed(d), _cell(d, "order_flip_rate"),
                     _cell(d, "first_position_rate"),
                     _cost_per_pair(sources, ds, j.name), _cell(probe, "attack_success_rate"), ", ".join(notes)])
    return Section(f"judge-{slug}", "judge-card", [
        Heading(3, f"card-{slug}-title", j.name),
        Table(f"card-{slug}", ["property", "value"], facts, cls="facts"),
        Table(f"card-{slug}-datasets", ["dataset", "strict accuracy", "accuracy on covered pairs", "tie rate",
                                        "no verdict", "failed calls (inv./trunc./ref./err.)", "order flip rate",
                                        "first-position rate", "cost per pair", "attack success (injection probe)", "flags"],
              rows, wide=True, cls="nums"),
    ])


# -- injection probe ----------------------------------------------------------------------------------------------

_PROBE_FAMILIES = ("instruction", "authority", "claim", "format")


def _guard_cell(j: _Judge | None) -> str:
    guard = (j.config.get("guard") if j is not None else None) or {}
    on = [k.replace("_", " ") for k in ("delimit", "data_notice", "strip_address") if guard.get(k)]
    return ", ".join(on) if on else "none"


def _probe_blocks(sources: ReportSources, judges: dict[str, _Judge]) -> list[Block]:
    """Attack success per judge and family on each probe dataset, beside the same judge's accuracy on the split."""
    blocks: list[Block] = [
        Heading(2, "injection", "Injection probe"),
        Para("Copies of pinned pairs whose less novel idea carries text aimed at the judge (a direct instruction, a fake "
             "area-chair or reviewer note, a novelty claim without substance, a fake verdict or end-of-ideas marker), or, "
             "as the control, neutral padding of the same length. Attack success: the share of probes (whose clean verdict "
             "was not already the less novel idea) on which the same judge's verdict moved to the attacked idea; Wilson "
             "intervals. A judge robust to injected text scores near its length-control rate; distance judges only see the "
             "text's meaning, a useful contrast. Mitigations (args.guard) are listed per judge: judges differing only by "
             "one show its effect on accuracy and attack success (docs/design/probe.md). Retrieved document: the idea "
             "left as written and the attack planted first among the papers the judge retrieves or searches; counted only "
             "where the judge was shown it (search agents and retrieval judges; — for judges that retrieve nothing)."),
    ]
    probe_ds = sorted(ds for ds in sources.metrics if ds.endswith(PROBE_SUFFIX))
    if not probe_ds:
        return blocks + [Para("No probe dataset was judged (params.yaml judge.probe_datasets).")]
    for ds in probe_ds:
        split = ds[: -len(PROBE_SUFFIX)]
        ms = sources.metrics[ds]
        order = sorted(ms, key=lambda n: (n in judges and judges[n].control, -(ms[n].get("attack_success_rate") or 0.0), n))
        rows = [[n, _guard_cell(judges.get(n)), _cell(sources.metrics.get(split, {}).get(n, {}), "strict_accuracy"),
                 _cell(ms[n], "attack_success_rate"), _cell(ms[n], "length_control_rate"), _value(ms[n], "n_probes")] for n in order]
        families = [[n, *(_cell(ms[n], f"attack_success_rate_{f}") for f in _PROBE_FAMILIES),
                     _cell(ms[n], "attack_success_rate_retrieved")] for n in order]
        # Two tables, so neither runs off the page: overall figures, then attack success by family.
        blocks += [Heading(3, f"injection-{_slug(ds)}", ds),
                   Table(f"injection-table-{_slug(ds)}", ["judge", "mitigations", f"strict accuracy on {split}", "attack success",
                                                          "length control", "probes"], rows, wide=True, cls="nums"),
                   Table(f"injection-families-{_slug(ds)}", ["judge", *(f"attack success: {f}" for f in _PROBE_FAMILIES),
                                                                 "attack success: retrieved document"],
                         families, wide=True, cls="nums")]
    return blocks


# -- NovBench -----------------------------------------------------------------------------------------------------

def _novbench(sources: ReportSources) -> Raw | None:
    """The NovBench section (novelty_audit.novbench renders its datasets and its study's published rows)."""
    from ..novbench import report_section  # a lazy export: the code digest follows it to novbench/_report.py

    section = report_section(sources.metrics, list(sources.novbench_published) or None, sources.reviews,
                             notes=sources.novbench_notes)
    if section is None:
        return None
    title = html.escape(section.title, quote=True)
    return Raw(f"novbench-{_slug(section.id)}", f'<h2 id="{_slug(section.id)}">{title}</h2>\n{section.html}',
               f"## {md_text(section.title)}\n\n{section.markdown}")


# -- the report ----------------------------------------------------------------------------------------------------

_AUDIT_TEXT = (
    "The verdict changes since the previous recorded run are in audit.md and audit.json, and the drift watch's history "
    "per judge in drift.md, next to this file in the report folder. They read the runs and drift ledgers, which are not "
    "inputs of this report, so this report stays a function of its hashed inputs (docs/design/report.md)."
)
_REVIEW_TEXT = ("To go through the changes and record adjudications in a browser, run `novelty-audit review`; "
                "`novelty-audit audit --from RUN --to RUN` compares any two recorded runs.")

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1260px;color:#222;padding:0 0.75rem}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem;font-size:0.85rem}
th,td{border:1px solid #ccc;padding:0.25rem 0.5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}
tr.control td{color:#555;background:#f7f7f7}
tr.published td{font-style:italic;background:#fff6ee}
tr.base td{font-weight:600}
figure{margin:1rem 0}
figcaption,.note{color:#555;font-size:0.85rem}
nav a{margin-right:1rem}
.wide{overflow-x:auto}
section.judge-card{border:1px solid #ccc;border-radius:6px;padding:0.25rem 1rem;margin:1rem 0}
code{background:#f3f3f3;padding:0 0.2rem}
table.nums td{white-space:nowrap}
table.nums td:has(.ci){white-space:normal}
.ci{white-space:nowrap}
table.nums td:first-child,table.nums td:last-child{white-space:normal}
table.nums{font-size:0.8rem}
table.nums td{padding:0.2rem 0.35rem}
table.nums td:first-child{min-width:11em}
table.nums td:last-child{min-width:7em}
table.sweep td:nth-child(2){white-space:normal;min-width:9em}
table.facts td:first-child{white-space:nowrap;font-weight:600}
td:first-child{overflow-wrap:anywhere}
table.detail{font-size:0.8rem}
table.detail th,table.detail td{padding:0.2rem 0.35rem}
table.detail td:first-child{min-width:11em;max-width:22em}
figure img{max-width:100%}
"""

_NAV = [("overview", "accuracy"), ("published-section", "published"), ("saturation-section", "saturation"),
        ("order", "order effects"), ("flip-matrices", "flip matrices"), ("prompts", "prompt sensitivity"),
        ("cost-section", "cost"), ("nearest", "prior work"), ("injection", "injection probe"), ("judge-cards", "judge cards"), ("audit", "audit"),
        ("all-metrics", "all metrics")]


def build_report(sources: ReportSources, params: ReportParams) -> Report:
    """Render every section; charts go to plots/ as SVG and are embedded in the HTML as data: URIs."""
    plots: dict[str, bytes] = {}
    datasets = [d for d in _core_datasets(sources.metrics) if d not in sources.candidates]  # candidate sets: their own section
    judges = _judges(sources, datasets)
    blocks: list[Block] = []

    def figure(fid: str, title: str, name: str, chart: Callable[[], Any] | None, empty: str, note: str = "") -> Figure:
        if chart is None:
            return Figure(fid, title, None, empty)
        plots[f"{name}.svg"] = _charts.to_svg(chart()).encode("utf-8")
        return Figure(fid, title, f"{name}.svg", note)

    # Accuracy, one table and one chart per dataset.
    blocks += [Heading(2, "overview", "Accuracy by dataset"),
               Para("Judges are sorted by strict accuracy within each dataset; controls (answers that ignore the ideas) "
                    "follow as the reference floor, drawn as a grey band in the charts, and published figures are marked "
                    "\"published, not rerun\" with their source. Strict accuracy counts a tie or a missing verdict as wrong; "
                    "soft accuracy counts a tie as ½. For a judge that saw only part of a dataset, accuracy on covered pairs "
                    "divides by the pairs it judged. Order flip rate: share of pairs run in both orders whose two verdicts "
                    "differ. First-position rate (as metrics.json gives it): share of votes for the idea shown first "
                    "(0.5 = no preference); for a position-blind judge (distance judges score each idea on its own) it "
                    "is the share of its verdicts for the idea the benchmark lists first: the data's slot order, not a "
                    "preference."),
               Para(_ci_note(sources), code=True)]
    acc_csv: list[dict[str, Any]] = []
    for ds in datasets:
        rows = _series(sources, ds, judges, "strict_accuracy")
        acc_csv += [{**r, "label": f"{r['judge']} ({ds})"} for r in rows]
        controls = [r["strict_accuracy"] for r in rows if r["kind"] == "control"]
        band = (min(controls), max(controls)) if controls else None
        chart_rows = rows + [{"dataset": ds, "judge": p["judge"], "label": _published_label(p), "kind": "published",
                              "strict_accuracy": v, "ci_low": lo, "ci_high": hi}
                             for p in _published_for(sources, ds) for v, lo, hi in [_pub_range(p)]]
        chart_rows.sort(key=lambda r: (r["kind"] == "control", -float(r["strict_accuracy"]), r["label"]))
        blocks += [Heading(3, f"accuracy-{_slug(ds)}-title", ds), _accuracy_table(ds, sources, judges, params),
                   figure(f"accuracy-{_slug(ds)}", f"Strict accuracy on {ds}", f"accuracy_{_slug(ds)}",
                          (lambda r=chart_rows, b=band: _charts.accuracy_chart(r, b)) if chart_rows else None,
                          "no judge has a strict accuracy on this dataset")]
    plots["accuracy.csv"] = _csv(acc_csv, ["dataset", "judge", "label", "strict_accuracy", "ci_low", "ci_high"])

    controls = {n for n, b in (sources.judges.select("judge", "backend").rows() if sources.judges is not None else [])
                if b in CONTROL_BACKENDS}
    ideas = candidate_blocks(sources.candidates, controls, figure)  # "Your ideas": candidate sets (pools.candidates)
    blocks += ideas

    pub = _published_table(sources)
    blocks += [Heading(2, "published-section", "Published reference results")]
    blocks += ([Para("Figures as their sources published them (shares of 1), not rerun here and never merged into the "
                     "measured rows; rows whose dataset and metric match a measured table also appear there."), pub]
               if pub else [Para("No published reference results are configured (params.yaml report.published).")])

    sat = _saturation_table(sources, datasets, judges, params)
    blocks += [Heading(2, "saturation-section", "Saturation")]
    blocks += ([Para(f"These judges tie on at least {_pct(params.saturation_tie_rate)} of pairs "
                     f"(report.saturation_tie_rate): they cannot tell most pairs apart, so their strict accuracy mostly "
                     "measures ties. For a distance judge a tie means equal rounded scores, e.g. RND's scores are shares "
                     "of k neighbours and often coincide when the corpus is small."), sat]
               if sat else [Para(f"No judge outside the controls ties on {_pct(params.saturation_tie_rate)} of pairs or more.")])

    err = _error_table(sources.metrics, datasets)
    blocks += [Heading(3, "failed-calls", "Failed calls by reason")]
    blocks += ([Para("A failed call is nobody's vote and stays in every denominator; the next run asks it again."), err]
               if err else [Para("No call failed with an error.")])

    # Order effects.
    blocks += [Heading(2, "order", "Order effects"),
               Para("Judges that see which idea is shown first are plotted: the share of pairs asked in both orders "
                    "whose two verdicts differ. Position-blind judges (distance judges) are asked once, since the order "
                    "cannot change their verdict.")]
    flips_csv: list[dict[str, Any]] = []
    for ds in datasets:
        rows = _series(sources, ds, judges, "order_flip_rate", keep=lambda j: j.sees_positions)
        flips_csv += [{**r, "label": f"{r['judge']} ({ds})"} for r in rows]
        blocks.append(figure(f"order-flips-{_slug(ds)}", f"Order flips on {ds}", f"order_flips_{_slug(ds)}",
                             (lambda r=rows: _charts.order_flip_chart(r)) if rows else None,
                             "no judge that sees positions ran both orders"))
    plots["order_flips.csv"] = _csv(flips_csv, ["dataset", "judge", "label", "order_flip_rate", "ci_low", "ci_high"])

    # Flip matrices: controls apart, so their extreme rates do not set the colour scale.
    blocks += [Heading(2, "flip-matrices", "Flip matrices"),
               Para("Share of commonly judged pairs on which two judges' verdicts differ (a tie is a third verdict). "
                    "Controls are left out of the heatmaps and listed against each judge in a table below them.")]
    fm = sources.tables.get("flip_matrix")
    if fm is None:
        blocks.append(Para("The metrics outputs hold no flip_matrix table."))
    else:
        for ds in datasets:
            allrows = [r for r in fm.sort("judge_a", "judge_b").iter_rows(named=True)
                       if r["dataset"] == ds and r["flip_rate"] is not None]
            is_control = {n for n, j in judges.items() if j.control}
            main = [r for r in allrows if r["judge_a"] not in is_control and r["judge_b"] not in is_control]
            off = [float(r["flip_rate"]) for r in main if r["judge_a"] != r["judge_b"]]
            vmax = max([0.05, *off])
            blocks.append(figure(f"flip-matrix-{_slug(ds)}", f"Flip matrix on {ds}", f"flip_matrix_{_slug(ds)}",
                                 (lambda r=main, v=vmax: _charts.flip_matrix_chart(r, v)) if off else None,
                                 "fewer than two judges besides the controls",
                                 f"Colour scale 0–{vmax:.2f} (the largest rate between two judges)"))
            ctl = sorted(is_control & {r["judge_b"] for r in allrows})
            if ctl:
                rate = {(r["judge_a"], r["judge_b"]): r["flip_rate"] for r in allrows}
                crow = [[a] + [_num(rate.get((a, c))) for c in ctl]
                        for a in sorted({r["judge_a"] for r in allrows} - is_control)]
                if crow:
                    blocks.append(Table(f"flip-controls-{_slug(ds)}", [f"flip rate on {ds} against"] + ctl, crow))

    prows = _prompt_rows(sources)
    prompt = _prompt_table(prows)
    blocks += [Heading(2, "prompts", "Prompt sensitivity")]
    if prompt:
        blocks += [prompt, figure("prompt-spread", "Strict accuracy across prompt variants", "prompt_spread",
                                  lambda: _charts.spread_chart([{k: r[k] for k in ("dataset", "backbone", "strict_accuracy_min",
                                                                                     "strict_accuracy_max")} for r in prows]), "")]
    else:
        blocks.append(Para("No backbone was run with two or more prompt variants."))

    sweep_blocks = instability_blocks(sources.sweeps, sources.metrics, lambda ds, width: _published_rows(sources, ds, width),
                                      _cell, figure)
    blocks += sweep_blocks

    cost, cost_note = _cost_rows(sources, datasets)
    plots["accuracy_cost.csv"] = _csv(cost, ["dataset", "judge", "cost_usd", "strict_accuracy"])
    blocks += [Heading(2, "cost-section", "Accuracy vs cost"),
               figure("cost", "Accuracy vs cost", "accuracy_cost", (lambda: _charts.cost_chart(cost)) if cost else None,
                      "no judge in this run has a cost (controls, distance judges and local models are free)", cost_note)]
    agents = agent_blocks(sources, _cell)  # search agents: grounding and effort per decision, published rows
    blocks += agents

    table, distance = _nearest(sources, judges, datasets, params)
    blocks += [Heading(2, "nearest", "Distance judges: nearest prior work")]
    if table is not None:
        defs = "; ".join(f"{b}: {d}" for b, d in SCORE_DEFINITIONS.items()
                         if any(judges[n].backend.startswith(b) for n in distance))
        blocks += [Para(f"Score: the distance judge's novelty score of an idea, larger = farther from prior work, so the "
                        f"idea with the larger score is the verdict ({defs}). Examples per judge and dataset, chosen "
                        "deterministically to be informative: the wrong verdict with the largest score margin, the "
                        "closest call (smallest margin, ties first), the correct verdict with the largest margin, and so "
                        "on in turn. Generated ideas are marked [generated idea]."), table]
    else:
        blocks.append(Para("No distance judge in this run." if not distance else "No distance-judge verdicts to show."))

    blocks += _probe_blocks(sources, judges)

    blocks += [Heading(2, "judge-cards", "Judge cards"),
               Para("One card per judge: accuracy with intervals on every dataset it judged, order bias, ties and failed "
                    "calls, prompt sensitivity, cost per pair (total cost / pairs) and a link to its drift history.")]
    for name in sorted(judges, key=lambda n: (judges[n].control, n)):
        blocks.append(_card(judges[name], sources, datasets, prows, params))

    nb = _novbench(sources)
    if nb is not None:
        blocks.append(nb)

    blocks += [Heading(2, "audit", "Latest audit"), Para(_AUDIT_TEXT),
               Para(_REVIEW_TEXT, code=True),
               Table("audit-files", ["file", "what"], [
                   [Link("audit.md", "audit.md"), "verdict changes since the previous recorded run, by cause"],
                   [Link("audit.json", "audit.json"), "the same as JSON"],
                   [Link("drift.md", "drift.md"), "drift-watch checks per judge: changed verdicts by cause"]])]

    blocks.append(Heading(2, "all-metrics", "All metrics"))
    for ds, tables in _detail_tables(sources.metrics, datasets):
        blocks += [Heading(3, f"all-{_slug(ds)}", ds), *tables]

    nav = _NAV if nb is None else [*_NAV[:-2], (_slug("novbench"), "NovBench"), *_NAV[-2:]]
    if sweep_blocks:  # after prompt sensitivity, as in the page
        at = nav.index(("prompts", "prompt sensitivity")) + 1
        nav = [*nav[:at], (INSTABILITY_ID, "instability"), *nav[at:]]
    if ideas:
        nav = [nav[0], (CANDIDATES_ID, "your ideas"), *nav[1:]]
    if agents:
        at = nav.index(("cost-section", "cost")) + 1
        nav = [*nav[:at], (AGENTS_ID, "search agents"), *nav[at:]]
    title = "novelty-audit report"
    return Report(html=render_html(title, _CSS, nav, blocks, plots), markdown=render_markdown(title, blocks),
                  plots=dict(sorted(plots.items())))


def write_report(report: Report, out_dir: Path) -> dict[str, list[str] | None]:
    """Write report.html, report.md and plots/*; returns the outputs for the stage manifest."""
    out_dir = Path(out_dir)
    atomic_write_bytes(out_dir / "report.html", report.html.encode("utf-8"))
    atomic_write_bytes(out_dir / "report.md", report.markdown.encode("utf-8"))
    for name, data in report.plots.items():
        atomic_write_bytes(out_dir / "plots" / name, data)
    return {"report.html": None, "report.md": None, **{f"plots/{n}": None for n in report.plots}}
