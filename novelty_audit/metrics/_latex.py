"""A LaTeX table a paper can use: booktabs rules, short row labels and column heads with a legend holding the full
ids, intervals stacked under their values, sized for the `\\textwidth` of a one-column article (or resized, or a
two-column `table*`). Every text from data is escaped; a newline in a name shows as `\\n` and never ends a row."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LatexRow", "latex_escape", "latex_table", "short_head"]

LABEL_CHARS = 16
"""A row label longer than this is shown by a short label (V1, V2, …) and named in full in the legend; a table of
`FEW_COLUMNS` value columns or fewer (the paper layout) has room for `LABEL_CHARS_FEW`."""
FEW_COLUMNS, LABEL_CHARS_FEW = 5, 24

_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
             "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--", "Δ": r"$\Delta$", "†": r"$^\dagger$",
             "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "\n": r"\textbackslash{}n",
             "\r": r"\textbackslash{}r", "\t": " "}  # fmt: skip
_HEAD_WORDS = (("attack success rate", "ASR"), ("delta ", "Δ "), ("accuracy", "acc."), ("disagreement", "disagr."),
               ("mcnemar p holm", "McNemar p (Holm)"), ("mcnemar p", "McNemar p"), ("pointwise ", "pw. "),
               ("cost per decision usd", "USD per decision"), ("cost usd", "cost USD"), ("macro f1", "macro-F1"),
               ("order flip rate", "order flip"), ("length control rate", "length control"), ("instruction", "instr."),
               ("authority", "auth."), ("coverage", "cover."))  # fmt: skip
_NEGATIVE = re.compile(r"(?<![\w.])-(?=\d)")
_NUMBER = re.compile(r"-?\d+(\.\d+)?( \[-?\d+(\.\d+)?, -?\d+(\.\d+)?\])?|-?\d+(\.\d+)?, -?\d+(\.\d+)?")
_BREAK_AFTER = re.compile(r"([/:+=.,_&-])")


def latex_escape(text: str) -> str:
    """`text` with LaTeX's special characters escaped (a newline shown as `\\n`, so a record stays one row)."""
    return "".join(_SPECIALS.get(ch, ch) for ch in str(text))


def _breakable(text: str) -> str:
    """`text` escaped, with break points after separators and inside long runs, for ids in the legend."""
    parts = []
    for piece in _BREAK_AFTER.split(str(text)):
        chunks = [piece[i: i + 12] for i in range(0, len(piece), 12)] or [""]
        parts.append(r"\allowbreak{}".join(latex_escape(c) for c in chunks))
    return r"\allowbreak{}".join(p for p in parts if p)


def short_head(name: str) -> str:
    """A column head for a field name: words shortened (`delta_strict_accuracy` → `Δ strict acc.`, a nested
    `compared_on.base` → `compared on base`)."""
    text = " " + name.replace(".", " ").replace("_", " ") + " "
    for long, short in _HEAD_WORDS:
        text = text.replace(long, short)
    return " ".join(text.split()).removeprefix("n ")


def _minus(text: str) -> str:
    """A number with a typeset minus sign (a hyphen reads as a dash in a table); any other text escaped."""
    return _NEGATIVE.sub(r"$-$", text) if _NUMBER.fullmatch(text) else latex_escape(text)


def _stack(lines: Sequence[str], align: str = "c") -> str:
    """Lines stacked in one cell (a nested tabular: plain LaTeX, no package)."""
    if len(lines) == 1:
        return lines[0]
    return rf"\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}" + r"\\".join(lines) + r"\end{tabular}"


def _head_cell(title: str) -> str:
    """A head on up to two lines, split at the space nearest the middle."""
    words = title.split()
    if len(title) <= 8 or len(words) < 2:
        return latex_escape(title)
    cut = min(range(1, len(words)), key=lambda i: abs(len(" ".join(words[:i])) - len(" ".join(words[i:]))))
    return _stack([latex_escape(" ".join(words[:cut])), latex_escape(" ".join(words[cut:]))])


@dataclass(frozen=True)
class LatexRow:
    """A body row: `group` (a heading row when it changes; empty: none), the label (whole id), and per column the
    value text and its interval text (None: no interval); `short`: the label as shown under its group (e.g. a
    variant without its sweep's name), when it fits."""

    group: str
    label: str
    cells: list[tuple[str, str | None]]
    short: str | None = None
    unpaired: bool = False
    """Marked † (the legend says what that means)."""


def _labels(rows: Sequence[LatexRow], prefix: str, width: int) -> tuple[dict[str, str], list[str]]:
    """Row label → what the table shows (up to `width` characters); the legend entries of the shortened ones."""
    shown, legend = {}, []
    for r in rows:
        if r.label in shown:
            continue
        text = r.short or r.label
        if len(text) <= width:
            shown[r.label] = latex_escape(text)
        else:
            short = f"{prefix}{len(legend) + 1}"
            shown[r.label] = short
            legend.append(rf"{short}: \texttt{{{_breakable(r.label)}}}")
    return shown, legend


def latex_table(*, label_head: str, heads: Sequence[str], rows: Sequence[LatexRow], caption: str,
                groups: Sequence[tuple[str, int]] = (), notes: Sequence[str] = (), fit: str = "textwidth",
                label_prefix: str = "V") -> str:
    """The table: `heads` (field names, shortened here; the legend names them), `groups` (a head spanning that many
    columns, e.g. a dataset over strict and soft), `notes` (legend lines, plain text), `fit` (`textwidth`: small
    type and narrow gaps; `resize`: scaled to `\\textwidth` with graphicx; `wide`: `table*` over two columns)."""
    n = len(heads)
    shown, label_legend = _labels(rows, label_prefix, LABEL_CHARS_FEW if n <= FEW_COLUMNS else LABEL_CHARS)
    titles = [short_head(h) for h in heads]
    out = ["% \\usepackage{booktabs}" + ("  % and \\usepackage{graphicx} for \\resizebox" if fit == "resize" else ""),
           rf"\begin{{{'table*' if fit == 'wide' else 'table'}}}", r"\centering", r"\footnotesize", r"\setlength{\tabcolsep}{3pt}",
           rf"\caption{{{latex_escape(caption)}}}"]  # fmt: skip
    tab = [rf"\begin{{tabular}}{{@{{}}l{'r' * n}@{{}}}}", r"\toprule"]
    if groups:
        spans, at = [], 2
        for name, width in groups:
            spans.append((rf"\multicolumn{{{width}}}{{c}}{{{latex_escape(name)}}}", at, at + width - 1))
            at += width
        tab.append(" & " + " & ".join(s for s, _, _ in spans) + r" \\")
        tab.append("".join(rf"\cmidrule(lr){{{a}-{b}}}" for _, a, b in spans))
    tab.append(" & ".join([latex_escape(label_head), *(_head_cell(t) for t in titles)]) + r" \\")
    tab.append(r"\midrule")
    group = None
    for r in rows:
        if r.group and r.group != group:
            if group is not None:
                tab.append(r"\midrule")
            tab.append(rf"\multicolumn{{{n + 1}}}{{@{{}}l}}{{\textit{{{latex_escape(r.group)}}}}} \\")
            group = r.group
        cells = [_stack([_minus(v), r"\scriptsize[" + _minus(i).replace(", ", r",\,") + "]"], "r") if i else _minus(v)
                 for v, i in r.cells]
        tab.append(" & ".join([shown[r.label] + (r"$^\dagger$" if r.unpaired else ""), *cells]) + r" \\")
    tab += [r"\bottomrule", r"\end{tabular}"]
    out += [r"\resizebox{\textwidth}{!}{%", *tab, "}"] if fit == "resize" else tab
    renamed = list(dict.fromkeys(f"{t} = {h}" for t, h in zip(titles, heads) if t != h))
    legend = [*label_legend, *(latex_escape(x) for x in notes)]
    if renamed:
        legend.append("Columns: " + "; ".join(latex_escape(x) for x in renamed) + ".")
    if legend:
        out += [r"\par\smallskip\begin{minipage}{\linewidth}\raggedright\footnotesize", r"\par ".join(legend),
                r"\end{minipage}"]  # fmt: skip
    out.append(rf"\end{{{'table*' if fit == 'wide' else 'table'}}}")
    return "\n".join(out) + "\n"
