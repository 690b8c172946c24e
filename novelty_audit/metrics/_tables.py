"""Tables for papers from metrics.json and sweeps.json: LaTeX (a plain `tabular`), CSV or Markdown.

One rounding rule everywhere (`fmt_value`): shares, deltas and p-values to 3 decimals, counts as integers, an
interval as `[low, high]` after its value (the bootstrap interval, else the Wilson one: the probe's rates have only
Wilson intervals); a value metrics.json leaves out (undefined) is `–`. The caption names the run id, the interval
method and the pinned datasets (name and sha256 prefix; a probe dataset names the split it was derived from), so
a table in a paper says which data it is.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import PROBE_SUFFIX
from ..errors import BadInputError

__all__ = ["TABLE_FORMATS", "TABLE_KINDS", "PaperTable", "fmt_value", "paper_table", "render_table"]

TABLE_KINDS = ("metrics", "sweeps", "probe", "candidates")
TABLE_FORMATS = ("latex", "csv", "markdown")
DIGITS = 3
MISSING = "–"

_METRICS_COLUMNS = (("n_pairs", False), ("strict_accuracy", True), ("tie_rate", True), ("order_flip_rate", True), ("coverage", True))
_SWEEP_COLUMNS = (("n_items", False), ("delta_strict_accuracy", True), ("mcnemar_p", False), ("mcnemar_p_holm", False),
                  ("disagreement_rate", True), ("tie_rate", False), ("delta_tie_rate", True), ("delta_order_flip_rate", False))  # fmt: skip
_PROBE_COLUMNS = (("n_probes", False), ("n_eligible", False), ("n_no_verdict", False), ("attack_success_rate", True),
                  *((f"attack_success_rate_{f}", True) for f in ("instruction", "authority", "claim", "format")),
                  ("length_control_rate", True))  # fmt: skip
_CANDIDATE_COLUMNS = (("n_pairs", False), ("candidate_win_rate", True), ("candidate_win_rate_low", True), ("tie_rate", True),
                      ("coverage", False))  # fmt: skip
_WHAT = {"candidates": ("Candidate sets: win rate against human ideas of the same area (D+; floor: D-)", "Wilson intervals"),
         "metrics": ("Judge metrics", "bootstrap intervals"), "sweeps": ("Sweep variants against their base", "paired bootstrap intervals"),
         "probe": ("Injection probe: attack success per judge", "Wilson intervals")}  # fmt: skip


def fmt_value(d: Mapping[str, Any], name: str, interval: bool) -> str:
    """`name` of `d` under the one rounding rule, with its interval when asked: the bootstrap one (`name_ci_low/high`),
    else the Wilson one (`name_wilson_low/high`)."""
    v = d.get(name)
    if v is None:
        return MISSING
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    text = f"{float(v):.{DIGITS}f}"
    lo, hi = d.get(f"{name}_ci_low"), d.get(f"{name}_ci_high")
    if lo is None or hi is None:
        lo, hi = d.get(f"{name}_wilson_low"), d.get(f"{name}_wilson_high")
    if interval and lo is not None and hi is not None:
        text += f" [{float(lo):.{DIGITS}f}, {float(hi):.{DIGITS}f}]"
    return text


@dataclass(frozen=True)
class PaperTable:
    """A table's header, rows (cells as text) and caption."""

    header: list[str]
    rows: list[list[str]]
    caption: str


def _pin(ds: str, pins: Mapping[str, str | None]) -> str:
    if ds.endswith(PROBE_SUFFIX):  # derived by the probe stage from a pinned split: name that split's pin
        split = ds[: -len(PROBE_SUFFIX)]
        return f"{ds} (from {split} {(pins.get(split) or 'unpinned')[:12]})"
    return f"{ds} ({(pins.get(ds) or 'unpinned')[:12]})"


def paper_table(kind: str, data: Mapping[str, Any], *, run_id: str | None, pins: Mapping[str, str | None]) -> PaperTable:
    """The rows of metrics.json (`kind` metrics: one row per dataset and judge; `probe`: one row per probe dataset
    and judge, attack success by family) or sweeps.json (`sweeps`: one row per dataset, sweep and variant); `pins`:
    dataset → sha256 (or revision) for the caption. A table without rows is an error naming what is missing."""
    if kind not in TABLE_KINDS:
        raise BadInputError(f"export table {kind}: expected one of {', '.join(TABLE_KINDS)}")
    rows: list[list[str]] = []
    if kind in ("metrics", "probe"):
        columns, has = (_METRICS_COLUMNS, "n_pairs") if kind == "metrics" else (_PROBE_COLUMNS, "n_probes")
        header = ["dataset", "judge", *(c for c, _ in columns)]
        for ds, judges in sorted(data.items()):
            if ds.endswith(PROBE_SUFFIX) != (kind == "probe"):
                continue
            for judge, m in sorted(judges.items()):
                if has in m and "candidate_win_rate" not in m:  # pairwise judges; candidate sets: `candidates` (NovBench generators have their own figures); probe: judges that saw probes
                    rows.append([ds, judge, *(fmt_value(m, c, ci) for c, ci in columns)])
    elif kind == "candidates":  # candidates.json: {set: {kind, judges: {judge: figures}}}; the floor sets sit in their set's rows
        header = ["set", "judge", *(c for c, _ in _CANDIDATE_COLUMNS)]
        for ds, e in sorted(data.items()):
            if e.get("kind") in ("candidates", "head-to-head"):
                rows += [[ds, judge, *(fmt_value(m, c, ci) for c, ci in _CANDIDATE_COLUMNS)] for judge, m in sorted(e["judges"].items())]
    else:
        header = ["dataset", "variant", *(c for c, _ in _SWEEP_COLUMNS)]
        for ds, sweeps in sorted(data.items()):
            for _, variants in sorted(sweeps.items()):
                for vid, m in sorted((k, v) for k, v in variants.items() if k != "_sweep"):
                    rows.append([ds, vid, *(fmt_value(m, c, ci) for c, ci in _SWEEP_COLUMNS)])
    if not rows:
        where = {"metrics": "no pairwise judge in metrics.json", "sweeps": "sweeps.json holds no sweep (params.yaml judge.sweeps)",
                 "probe": "metrics.json holds no probe dataset (params.yaml judge.probe_datasets)",
                 "candidates": "candidates.json holds no judged candidate set (params.yaml pools.candidates, judge.datasets)"}[kind]  # fmt: skip
        raise BadInputError(f"export table {kind}: nothing to tabulate: {where}")
    datasets = sorted({r[0] for r in rows})
    pinned = ", ".join(_pin(ds, pins) for ds in datasets)
    what, intervals = _WHAT[kind]
    caption = (f"{what}, values with {DIGITS}-decimal rounding and {intervals} [low, high]; "
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
