"""Tables for papers from metrics.json and sweeps.json: LaTeX (a plain `tabular`), CSV or Markdown.

One rounding rule everywhere (`fmt_value`): shares, deltas and p-values to 3 decimals, counts as integers, an
interval as `[low, high]` after its value; a value metrics.json leaves out (undefined) is `–`. The caption names
the run id and the pinned datasets (name and sha256 prefix), so a table in a paper says which data it is.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import BadInputError

__all__ = ["TABLE_FORMATS", "TABLE_KINDS", "PaperTable", "fmt_value", "paper_table", "render_table"]

TABLE_KINDS = ("metrics", "sweeps")
TABLE_FORMATS = ("latex", "csv", "markdown")
DIGITS = 3
MISSING = "–"

_METRICS_COLUMNS = (("n_pairs", False), ("strict_accuracy", True), ("tie_rate", True), ("order_flip_rate", True), ("coverage", True))
_SWEEP_COLUMNS = (("n_items", False), ("delta_strict_accuracy", True), ("mcnemar_p", False), ("mcnemar_p_holm", False),
                  ("disagreement_rate", True), ("tie_rate", False), ("delta_tie_rate", True), ("delta_order_flip_rate", False))  # fmt: skip


def fmt_value(d: Mapping[str, Any], name: str, interval: bool) -> str:
    """`name` of `d` under the one rounding rule, with its bootstrap interval (`name_ci_low/high`) when asked."""
    v = d.get(name)
    if v is None:
        return MISSING
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    text = f"{float(v):.{DIGITS}f}"
    lo, hi = d.get(f"{name}_ci_low"), d.get(f"{name}_ci_high")
    if interval and lo is not None and hi is not None:
        text += f" [{float(lo):.{DIGITS}f}, {float(hi):.{DIGITS}f}]"
    return text


@dataclass(frozen=True)
class PaperTable:
    """A table's header, rows (cells as text) and caption."""

    header: list[str]
    rows: list[list[str]]
    caption: str


def paper_table(kind: str, data: Mapping[str, Any], *, run_id: str | None, pins: Mapping[str, str | None]) -> PaperTable:
    """The rows of metrics.json (`kind` metrics: one row per dataset and judge) or sweeps.json (`sweeps`: one row
    per dataset, sweep and variant); `pins`: dataset → sha256 (or revision) for the caption."""
    if kind not in TABLE_KINDS:
        raise BadInputError(f"export table {kind}: expected one of {', '.join(TABLE_KINDS)}")
    rows: list[list[str]] = []
    if kind == "metrics":
        header = ["dataset", "judge", *(c for c, _ in _METRICS_COLUMNS)]
        for ds, judges in sorted(data.items()):
            for judge, m in sorted(judges.items()):
                if "n_pairs" in m:  # pairwise judges (NovBench generators have their own figures)
                    rows.append([ds, judge, *(fmt_value(m, c, ci) for c, ci in _METRICS_COLUMNS)])
    else:
        header = ["dataset", "variant", *(c for c, _ in _SWEEP_COLUMNS)]
        for ds, sweeps in sorted(data.items()):
            for _, variants in sorted(sweeps.items()):
                for vid, m in sorted((k, v) for k, v in variants.items() if k != "_sweep"):
                    rows.append([ds, vid, *(fmt_value(m, c, ci) for c, ci in _SWEEP_COLUMNS)])
    datasets = sorted({r[0] for r in rows})
    pinned = ", ".join(f"{ds} ({(pins.get(ds) or 'unpinned')[:12]})" for ds in datasets) or "none"
    what = "Judge metrics" if kind == "metrics" else "Sweep variants against their base"
    caption = (f"{what}, values with {DIGITS}-decimal rounding and bootstrap intervals [low, high]; "
               f"run {run_id or 'not recorded'}; datasets: {pinned}.")
    return PaperTable(header, rows, caption)


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--"}  # fmt: skip


def latex_escape(text: str) -> str:
    """`text` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def render_table(t: PaperTable, fmt: str) -> str:
    """The table as LaTeX (a `table` with a plain `tabular`, no package needed), CSV or Markdown."""
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(t.header)
        w.writerows(t.rows)
        return buf.getvalue()
    if fmt == "markdown":
        lines = ["| " + " | ".join(t.header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(t.header) - 2)) + "|"]
        lines += ["| " + " | ".join(c.replace("|", r"\|") for c in r) + " |" for r in t.rows]
        return "\n".join(lines) + f"\n\n{t.caption}\n"
    if fmt == "latex":
        spec = "ll" + "r" * (len(t.header) - 2)
        lines = [r"\begin{table}", r"\centering", rf"\caption{{{latex_escape(t.caption)}}}", rf"\begin{{tabular}}{{{spec}}}", r"\hline",
                 " & ".join(latex_escape(h) for h in t.header) + r" \\", r"\hline"]  # fmt: skip
        lines += [" & ".join(latex_escape(c) for c in r) + r" \\" for r in t.rows]
        lines += [r"\hline", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines) + "\n"
    raise BadInputError(f"export table --format {fmt}: expected one of {', '.join(TABLE_FORMATS)}")
