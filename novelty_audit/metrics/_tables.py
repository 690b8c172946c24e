"""Tables for papers from metrics.json and sweeps.json: LaTeX (booktabs), CSV or Markdown.

The columns are the fields the data holds, found in it (not a fixed list), so a field a later version of the metrics
stage adds is a column without a code change; `--columns` picks them (`all`: every one), the default is a short set
per kind. An interval travels with its value (`name_ci_low/high`, the bootstrap one, else `name_wilson_low/high`).
A value left out of metrics.json (undefined) or null in sweeps.json (not measured, e.g. an unknown price) is `–`
(CSV: empty), and a legend line says so. Rounding: LaTeX gives shares in percent to one decimal (deltas in
percentage points), the others keep shares to 3 decimals; counts are integers, p-values 3 decimals, costs in USD to
4. CSV keeps every value unrounded, one row per record with the full ids. The caption names the run id and the
pinned datasets (name and sha256 prefix; a probe dataset names the split it was derived from).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import PROBE_SUFFIX
from ..errors import BadInputError
from ..markdown import md_table, md_text
from ._latex import LatexRow, latex_table

__all__ = ["LATEX_FITS", "TABLE_FORMATS", "TABLE_KINDS", "PaperTable", "fmt_value", "paper_table", "render_table",
           "table_columns"]  # fmt: skip

TABLE_KINDS = ("metrics", "sweeps", "probe", "paper", "candidates")
TABLE_FORMATS = ("latex", "csv", "markdown")
LATEX_FITS = ("textwidth", "resize", "wide")
DIGITS = 3
MISSING = "–"
LEGEND_MISSING = "– unknown or not measured (null, or left out as undefined)."
_INTERVAL_SUFFIXES = ("_ci_low", "_ci_high", "_wilson_low", "_wilson_high")
_DEFAULTS = {
    "metrics": ("n_pairs", "strict_accuracy", "soft_accuracy", "tie_rate", "order_flip_rate",
                "pointwise_macro_f1", "cost_usd"),
    "sweeps": ("n_items", "delta_strict_accuracy", "mcnemar_p_holm", "disagreement_rate",
               "delta_tie_rate", "delta_macro_f1"),
    "probe": ("n_probes", "n_eligible", "attack_success_rate", *(f"attack_success_rate_{f}" for f in
              ("instruction", "authority", "claim", "format")), "length_control_rate"),
    "candidates": ("n_pairs", "candidate_win_rate", "candidate_win_rate_low", "tie_rate", "coverage"),
}  # fmt: skip
_WHAT = {"metrics": ("Judge metrics", "bootstrap intervals"), "sweeps": ("Sweep variants against their base", "bootstrap intervals (paired where both hold the same items)"),
         "probe": ("Injection probe: attack success per judge", "Wilson intervals"),
         "paper": ("Strict and soft accuracy per judge and dataset", "bootstrap intervals"),
         "candidates": ("Candidate sets: win rate against human ideas of the same area (D+; floor: D-)", "Wilson intervals")}  # fmt: skip
_PAPER_DATASETS = {"human-only": "Human-Only", "human-plus-generated": "Human+Generated"}
_PAPER_METRICS = (("strict_accuracy", "strict"), ("soft_accuracy", "soft"))


@dataclass(frozen=True)
class Column:
    """A value column: `key` into a row's values, `name` the field it shows, `group` a header over columns (paper
    layout: the dataset)."""

    key: str
    name: str
    group: str = ""


@dataclass(frozen=True)
class Row:
    """`group` (dataset; paper layout: empty), `label` (judge or variant id, whole) and the values by column key: the
    record each value and its interval come from."""

    group: str
    label: str
    records: dict[str, Mapping[str, Any]]


@dataclass(frozen=True)
class PaperTable:
    """A table's kind, label headers, value columns, rows and caption; `intervals`: show `[low, high]`."""

    kind: str
    label_header: list[str]
    columns: list[Column]
    rows: list[Row]
    caption: str
    intervals: bool = False


def _flat(m: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`m`'s fields, nested mappings flattened as `outer.inner` (as `dvc metrics show` names them)."""
    out: dict[str, Any] = {}
    for k, v in m.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _is_interval(name: str, fields: Mapping[str, Any]) -> bool:
    return any(name.endswith(s) and name[: -len(s)] in fields for s in _INTERVAL_SUFFIXES)


def table_columns(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every field of `records` a table can show, in order of first appearance: not an interval bound (it travels
    with its value) and not a list of lists or mappings (a matrix); a list of names (`compared_on`) is one."""
    seen: dict[str, None] = {}
    for r in records:
        flat = _flat(r)
        for name in flat:
            v = flat[name]
            if not _is_interval(name, flat) and not (isinstance(v, list) and any(isinstance(x, (list, dict)) for x in v)):
                seen.setdefault(name, None)
    return list(seen)


def _records(kind: str, data: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(dataset, judge or variant, record) of what `kind` tabulates, sorted."""
    out: list[tuple[str, str, Mapping[str, Any]]] = []
    if kind == "sweeps":
        for ds, sweeps in sorted(data.items()):
            for _, variants in sorted(sweeps.items()):
                # `_sweep` (and any `_`-key) holds the sweep's own figures, not a variant
                out += [(ds, vid, m) for vid, m in sorted(variants.items()) if not vid.startswith("_") and isinstance(m, Mapping)]
        return out
    if kind == "candidates":  # candidates.json: {set: {kind, judges: {judge: figures}}}; the floor sets sit in their set's rows
        for ds, e in sorted(data.items()):
            if e.get("kind") in ("candidates", "head-to-head"):
                out += [(ds, judge, m) for judge, m in sorted(e["judges"].items())]
        return out
    for ds, judges in sorted(data.items()):
        if ds.endswith(PROBE_SUFFIX) != (kind == "probe"):
            continue
        for judge, m in sorted(judges.items()):
            # pairwise or pointwise judges (NovBench generators have their own figures); probe: judges that saw probes
            # candidate sets have win rates, no accuracy: `export table candidates`
            if ("n_probes" in m) if kind == "probe" else ("n_pairs" in m or "n_ideas" in m) and "candidate_win_rate" not in m:
                out.append((ds, judge, m))
    return out


def _choose(kind: str, available: list[str], columns: Sequence[str] | None) -> list[str]:
    if columns is None:
        return [c for c in _DEFAULTS[kind] if c in available]
    if list(columns) == ["all"]:
        return available
    if not columns:
        raise BadInputError(f"export table {kind} --columns: no column named", hint=f"available: {', '.join(available)} (or `all`)")
    unknown = [c for c in columns if c not in available]
    if unknown:
        raise BadInputError(f"export table {kind} --columns: unknown column(s) {', '.join(unknown)}",
                            hint=f"available: {', '.join(available)} (or `all`)")
    return list(columns)


def _paper_layout(data: Mapping[str, Any], columns: Sequence[str] | None) -> tuple[list[Column], list[Row]]:
    """Rows = judges, columns = (dataset, strict | soft): the study's layout."""
    if columns is not None:
        raise BadInputError("export table paper: --columns does not apply (the layout is strict and soft accuracy "
                            "per dataset)", hint="use export table metrics --columns … for other fields")
    recs = [r for r in _records("metrics", data) if "n_pairs" in r[2]]  # pairwise judges: strict and soft accuracy
    datasets = [d for d in _PAPER_DATASETS if any(ds == d for ds, _, _ in recs)]
    datasets += sorted({ds for ds, _, _ in recs} - set(datasets))
    cols = [Column(f"{ds}\t{m}", m, _PAPER_DATASETS.get(ds, ds)) for ds in datasets for m, _ in _PAPER_METRICS]
    by_judge: dict[str, dict[str, Mapping[str, Any]]] = {}
    for ds, judge, m in recs:
        by_judge.setdefault(judge, {}).update({f"{ds}\t{name}": m for name, _ in _PAPER_METRICS})
    return cols, [Row("", judge, recs_) for judge, recs_ in sorted(by_judge.items())]


def paper_table(kind: str, data: Mapping[str, Any], *, run_id: str | None, pins: Mapping[str, str | None],
                columns: Sequence[str] | None = None, intervals: bool = False) -> PaperTable:
    """The rows of metrics.json (`metrics`: one row per dataset and judge; `probe`: per probe dataset and judge,
    attack success by family; `paper`: one row per judge, strict and soft accuracy per dataset) or sweeps.json
    (`sweeps`: one row per dataset, sweep and variant). `columns`: field names (None: the kind's short set; `all`:
    every field the data holds); an unknown one is an error listing the available ones. `pins`: dataset → sha256
    (or revision) for the caption. A table without rows is an error naming what is missing."""
    if kind not in TABLE_KINDS:
        raise BadInputError(f"export table {kind}: expected one of {', '.join(TABLE_KINDS)}")
    if kind == "paper":
        cols, rows = _paper_layout(data, columns)
        label_header = ["judge"]
    else:
        recs = _records(kind, data)
        names = _choose(kind, table_columns([m for _, _, m in recs]), columns) if recs else []
        cols = [Column(n, n) for n in names]
        rows = [Row(ds, label, {n: m for n in names}) for ds, label, m in recs]
        label_header = ["set" if kind == "candidates" else "dataset", "variant" if kind == "sweeps" else "judge"]
    if not rows:
        where = {"sweeps": "sweeps.json holds no sweep (params.yaml judge.sweeps)",
                 "probe": "metrics.json holds no probe dataset (params.yaml judge.probe_datasets)",
                 "candidates": "candidates.json holds no judged candidate set (params.yaml pools.candidates, judge.datasets)"}.get(kind, "no pairwise judge in metrics.json")  # fmt: skip
        raise BadInputError(f"export table {kind}: nothing to tabulate: {where}")
    datasets = sorted({c.key.split("\t")[0] for c in cols} if kind == "paper" else {r.group for r in rows})
    what, method = _WHAT[kind]
    caption = (f"{what}{f', with {method} [low, high]' if intervals else ''}; run {run_id or 'not recorded'}; "
               f"datasets: {', '.join(_pin(ds, pins) for ds in datasets)}.")
    return PaperTable(kind, label_header, cols, rows, caption, intervals)


def _pin(ds: str, pins: Mapping[str, str | None]) -> str:
    if ds.endswith(PROBE_SUFFIX):  # derived by the probe stage from a pinned split: name that split's pin
        split = ds[: -len(PROBE_SUFFIX)]
        return f"{ds} (from {split} {(pins.get(split) or 'unpinned')[:12]})"
    return f"{ds} ({(pins.get(ds) or 'unpinned')[:12]})"


def _value(rec: Mapping[str, Any], name: str) -> tuple[Any, Any, Any]:
    """The value of `name` (a flattened field) and its interval (bootstrap, else Wilson; None when absent)."""
    flat = _flat(rec) if "." in name else rec
    v = flat.get(name)
    lo, hi = flat.get(f"{name}_ci_low"), flat.get(f"{name}_ci_high")
    if lo is None or hi is None:
        lo, hi = flat.get(f"{name}_wilson_low"), flat.get(f"{name}_wilson_high")
    return v, lo, hi


def _kind_of(name: str) -> str:
    """How a field is read: `p` (a p-value), `usd`, `plain` (per-decision counts), else `share` (a rate,
    accuracy or their difference)."""
    base = name.rsplit(".", 1)[-1]
    if "mcnemar_p" in base or base.endswith("_p"):
        return "p"
    if "cost" in base or base.endswith("_usd"):
        return "usd"
    if "per_decision" in base or "tokens" in base:
        return "plain"
    return "share"


def _num(x: float, kind: str, percent: bool) -> str:
    if kind == "usd":
        return f"{x:.4f}"
    if kind == "plain":
        return f"{x:.1f}"
    if kind == "share" and percent:
        return f"{100 * x:.1f}"
    return f"{x:.{DIGITS}f}"


def fmt_value(d: Mapping[str, Any], name: str, interval: bool, *, percent: bool = False) -> str:
    """`name` of `d` under the tables' rounding rule, with its interval when asked: the bootstrap one
    (`name_ci_low/high`), else the Wilson one (`name_wilson_low/high`); `percent`: shares as percent, one decimal."""
    v, lo, hi = _value(d, name)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ", ".join(map(str, v))
    kind = _kind_of(name)
    text = _num(float(v), kind, percent)
    if interval and lo is not None and hi is not None:
        low, high = _num(float(lo), kind, percent), _num(float(hi), kind, percent)
        if low != high:  # an interval of zero width at the shown precision (every resample agreed): the bare value
            text += f" [{low}, {high}]"
    return text


def _csv(t: PaperTable) -> str:
    """Unrounded values and full ids, one line per record (the csv module quotes a cell holding a newline)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = list(t.label_header)
    for c in t.columns:
        name = f"{c.group} {c.name}" if c.group else c.name
        head += [name, f"{name}_low", f"{name}_high"] if t.intervals else [name]
    w.writerow(head)
    for r in t.rows:
        line: list[Any] = _row_labels(t, r)
        for c in t.columns:
            rec = r.records.get(c.key)
            v, lo, hi = _value(rec, c.name) if rec is not None else (None, None, None)
            line += [_csv_cell(v), _csv_cell(lo), _csv_cell(hi)] if t.intervals else [_csv_cell(v)]
        w.writerow(line)
    return buf.getvalue()


def _row_labels(t: PaperTable, r: Row) -> list[Any]:
    return [r.label] if t.kind == "paper" else [r.group, r.label]


def _csv_cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, list):
        return ";".join(map(str, v))
    return v


def _cell(r: Row, c: Column, t: PaperTable, *, percent: bool = False) -> str:
    rec = r.records.get(c.key)
    return MISSING if rec is None else fmt_value(rec, c.name, t.intervals, percent=percent)


def _markdown(t: PaperTable) -> str:
    head = list(t.label_header)
    header = [*head, *(f"{c.group} {c.name}" if c.group else c.name for c in t.columns)]
    rows = [_row_labels(t, r) + [_cell(r, c, t) for c in t.columns] for r in t.rows]
    align = ["l"] * len(head) + ["r"] * len(t.columns)
    legend = [md_text(LEGEND_MISSING)] if any(MISSING in row for row in rows) else []
    return "\n\n".join([md_table(header, rows, align=align), md_text(t.caption), *legend]) + "\n"


def _latex(t: PaperTable, fit: str) -> str:
    """Shares in percent (deltas in percentage points), one decimal; intervals under their values."""
    rows = []
    for r in t.rows:
        group, short = r.group, None
        if t.kind == "sweeps" and "/" in r.label:  # the sweep's name heads its variants' rows
            sweep, short = r.label.split("/", 1)
            group = f"{group}: {sweep}"
        cells = []
        for c in t.columns:
            rec = r.records.get(c.key)
            value = MISSING if rec is None else fmt_value(rec, c.name, False, percent=True)
            with_ci = fmt_value(rec, c.name, True, percent=True) if rec is not None and t.intervals else value
            cells.append((value, with_ci[len(value):].strip(" []") or None))
        unpaired = any(rec.get("paired") is False for rec in r.records.values())
        rows.append(LatexRow(group, r.label, cells, short, unpaired))
    notes = ["Shares in percent, differences (Δ) in percentage points, one decimal."]
    if any(v == MISSING for r in rows for v, _ in r.cells):
        notes.append(LEGEND_MISSING)
    if any(r.unpaired for r in rows):
        notes.append("† unpaired: compared with the base on another split's items (no disagreement or McNemar test).")
    groups = []
    for c in t.columns:
        if groups and groups[-1][0] == c.group:
            groups[-1] = (c.group, groups[-1][1] + 1)
        else:
            groups.append((c.group, 1))
    return latex_table(label_head=t.label_header[-1], heads=[c.name for c in t.columns], rows=rows, caption=t.caption,
                       groups=groups if any(g for g, _ in groups) else (), notes=notes, fit=fit,
                       label_prefix="V" if t.kind == "sweeps" else "J")


def render_table(t: PaperTable, fmt: str, *, fit: str = "textwidth") -> str:
    """The table as LaTeX (booktabs; `fit`: textwidth, resize to \\textwidth, or wide for `table*`), CSV or
    Markdown."""
    if fmt == "csv":
        return _csv(t)
    if fmt == "markdown":
        return _markdown(t)
    if fmt == "latex":
        if fit not in LATEX_FITS:
            raise BadInputError(f"export table --fit {fit}: expected one of {', '.join(LATEX_FITS)}")
        return _latex(t, fit)
    raise BadInputError(f"export table --format {fmt}: expected one of {', '.join(TABLE_FORMATS)}")

