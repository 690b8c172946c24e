"""The instability section: each `judge.sweeps` sweep from reports/sweeps.json (never recomputed here).

Per dataset and sweep: a table of the variants, each grouped under its own base (a sweep may have several) and
naming what it was compared with — the base, the split the base was judged on (`compared_on.base`: on a plan split,
the original split), paired or unpaired, and the items on each side — with ties in columns of their own (never
folded into accuracy) and the dataset's published rows below ("published, not rerun"); a pointwise table when
variants were judged pointwise; a forest plot of each variant's change in strict accuracy with its interval; and a
heatmap of the disagreement between every two judges of the sweep judged on the dataset
(`_sweep.disagreement_matrix`: no label needed). A value sweeps.json holds as null was not measured: "not measured"
(disagreement and McNemar of an unpaired row) or "unknown" (a cost at a price nobody set), never 0. Without sweeps
there is no section.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from . import _charts
from ._blocks import Block, Cell, Figure, Heading, Para, Table

__all__ = ["INSTABILITY_ID", "instability_blocks"]

INSTABILITY_ID = "instability"

_HEADER = ["judge", "compared with", "strict accuracy", "Δ strict accuracy", "McNemar p (Holm)", "disagreement with base",
           "tie rate", "Δ tie rate", "Δ order flip rate", "items (variant / base)", "cost per decision (variant / base)"]
_POINTWISE_HEADER = ["judge", "compared with", "macro-F1", "Δ macro-F1", "pointwise accuracy", "Δ pointwise accuracy",
                     "disagreement with base", "ideas (variant / base)", "cost per decision (variant / base)"]
_INTRO = ("Each sweep changes knobs of a base judge (params.yaml judge.sweeps; a sweep may have several bases). Each "
          "variant's row names what it was compared with: its base, the split the base was judged on (a variant on "
          "another split is compared with its base on the split that split is a variant of) and the items counted on "
          "each side. Δ is the variant minus its base, with a bootstrap interval. Ties are shown on their own (tie rate "
          "and its change) and count as wrong in strict accuracy. A base's own row is its metrics.json figure on its "
          "split. Published figures for the dataset follow the measured rows; they were not rerun here and are never "
          "merged into a measured row.")
_PAIRED = ("Paired rows (the same split, or the same pairs rewritten, as in the plan format) compare the two judges on "
           "the items both were asked about, item by item: the interval is a paired bootstrap, McNemar's exact p on "
           "correctness is Holm-adjusted across the sweep's variants on the dataset, and disagreement is the share of "
           "those items on which the two verdicts (an idea, a tie or none) differ, so it needs no gold label.")
_UNPAIRED = ("Unpaired rows (a split with other ideas, such as a regenerated low side) compare two samples: each judge "
             "on its own items, with an unpaired bootstrap interval (each side resampled on its own draws). "
             "Disagreement and McNemar's test need the same items on both sides, so they were not measured on these "
             "rows: \"not measured\", never 0.")
_NOT_MEASURED = "not measured"

_Figure = Callable[[str, str, str, "Callable[[], Any] | None", str, str], Figure]
_Fmt = Callable[[dict[str, Any], str], str]


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s)


def _measured(d: Mapping[str, Any], m: str, cell: _Fmt) -> str:
    """A field sweeps.json holds as null was not measured; one it leaves out does not apply to the row ("—")."""
    return _NOT_MEASURED if m in d and d[m] is None else cell(dict(d), m)


def _delta_cell(d: Mapping[str, Any], m: str, cell: _Fmt) -> str:
    text = _measured(d, m, cell)
    return text if text in ("—", _NOT_MEASURED) or text.startswith("-") else "+" + text


def _p_cell(d: Mapping[str, Any]) -> str:
    if "mcnemar_p" not in d:
        return "—"
    if d["mcnemar_p"] is None:
        return _NOT_MEASURED
    holm = d.get("mcnemar_p_holm")
    return f"{float(d['mcnemar_p']):.3f}" + (f" ({float(holm):.3f})" if holm is not None else "")


def _usd(d: Mapping[str, Any], m: str) -> str:
    if m not in d:
        return "—"
    if d[m] is None:
        return "unknown"  # a price nobody set: never shown as free
    v = float(d[m])
    return "free" if v == 0 else f"${v:.3g}"


def _pair(d: Mapping[str, Any], a: str, b: str, fmt: Callable[[Mapping[str, Any], str], str]) -> str:
    """"variant / base"; "—" when neither applies to the row (a variant compared on no item)."""
    return "—" if a not in d and b not in d else f"{fmt(d, a)} / {fmt(d, b)}"


def _count(d: Mapping[str, Any], m: str) -> str:
    return str(int(d[m])) if d.get(m) is not None else "—"


def _base_of(d: Mapping[str, Any], ds: str) -> tuple[str, str]:
    """(base judge, the split the base was judged on) of a variant's row."""
    return str(d.get("base") or "—"), str((d.get("compared_on") or {}).get("base") or ds)


def _compared_with(d: Mapping[str, Any], ds: str) -> str:
    base, split = _base_of(d, ds)
    pairing = "paired" if d.get("paired", True) else "unpaired"
    return f"{base} on {split}, {pairing}"


def _variant_row(vid: str, d: Mapping[str, Any], ds: str, cell: _Fmt) -> list[Cell]:
    return [vid, _compared_with(d, ds), cell(dict(d), "strict_accuracy"), _delta_cell(d, "delta_strict_accuracy", cell),
            _p_cell(d), _measured(d, "disagreement_rate", cell), cell(dict(d), "tie_rate"),
            _delta_cell(d, "delta_tie_rate", cell), _delta_cell(d, "delta_order_flip_rate", cell),
            _pair(d, "n_items", "n_items_base", _count),
            _pair(d, "cost_per_decision_usd", "cost_per_decision_usd_base", _usd)]


def _pointwise_row(vid: str, d: Mapping[str, Any], ds: str, cell: _Fmt) -> list[Cell]:
    return [vid, _compared_with(d, ds), cell(dict(d), "macro_f1"), _delta_cell(d, "delta_macro_f1", cell),
            cell(dict(d), "pointwise_accuracy"), _delta_cell(d, "delta_pointwise_accuracy", cell),
            _measured(d, "pointwise_disagreement_rate", cell),
            _pair(d, "pointwise_n_items", "pointwise_n_items_base", _count),
            _pair(d, "pointwise_cost_per_decision_usd", "pointwise_cost_per_decision_usd_base", _usd)]


def _spread_text(summary: Mapping[str, Any], where: str) -> str:
    parts = [f"across the {knob} knob {float(summary[f'{knob}_spread']):.3f} ({summary[f'{knob}_spread_n_variants']} "
             f"variants, {summary[f'{knob}_spread_n_items']} items judged by all)"
             for knob in ("prompt", "model") if summary.get(f"{knob}_spread") is not None]
    return (f"Spread of strict accuracy in {where} (largest max − min with the other knobs fixed): " + "; ".join(parts) + "."
            if parts else "")


def _heatmap_rows(summary: Mapping[str, Any], bases: set[str]) -> tuple[list[dict[str, Any]], list[str]]:
    matrix = summary.get("disagreement_matrix") or {}
    counts = summary.get("disagreement_matrix_n_items") or {}
    rows = [{"judge_a": a, "judge_b": b, "disagreement_rate": float(rate), "n_items": (counts.get(a) or {}).get(b)}
            for a in sorted(matrix) for b, rate in sorted(matrix[a].items())]
    return rows, sorted(matrix, key=lambda j: (j not in bases, j))  # the bases first


def _tables(ds: str, sweep: str, slug: str, variants: list[tuple[str, Mapping[str, Any]]], metrics: Mapping[str, Any],
            published: list[list[Cell]], cell: _Fmt) -> list[Block]:
    """The pairwise table (each base's own row, then its variants; published rows below) and, when any variant was
    judged pointwise, the pointwise table."""
    groups: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
    for vid, d in variants:
        groups.setdefault(_base_of(d, ds), []).append((vid, d))
    table: list[list[Cell]] = []
    classes: list[str] = []
    for (base, split), members in sorted(groups.items()):
        b = dict((metrics.get(split) or {}).get(base) or {})
        table.append([f"{base} (base)", f"its own run on {split}", cell(b, "strict_accuracy"), "—", "—", "—",
                      cell(b, "tie_rate"), "—", "—", _count(b, "n_pairs"), "—"])
        classes.append("base")
        for vid, d in members:
            table.append(_variant_row(vid, d, ds, cell))
            classes.append("measured")
    table += published
    classes += ["published"] * len(published)
    blocks: list[Block] = [Table(f"sweep-table-{slug}", _HEADER, table, classes, wide=True, cls="nums sweep")]
    point = [(vid, d) for vid, d in variants if d.get("pointwise_n_items")]
    if point:
        blocks.append(Para(f"Pointwise, {sweep} on {ds}: each idea labelled on its own (POSITIVE, NEGATIVE or none); "
                           "disagreement is the share of ideas whose two labels differ."))
        blocks.append(Table(f"sweep-pointwise-{slug}", _POINTWISE_HEADER, [_pointwise_row(vid, d, ds, cell) for vid, d in point],
                            ["measured"] * len(point), wide=True, cls="nums sweep"))
    return blocks


def _sweep_blocks(ds: str, sweep: str, rows: Mapping[str, Any], metrics: Mapping[str, Any], published: list[list[Cell]],
                  cell: _Fmt, figure: _Figure) -> list[Block]:
    slug = f"{_slug(ds)}-{_slug(sweep)}"
    summary = rows.get("_sweep") or {}
    variants = sorted((k, v) for k, v in rows.items() if k != "_sweep")
    bases = sorted({_base_of(d, ds)[0] for _, d in variants})
    forest = [{"label": vid, "comparison": "paired" if d.get("paired", True) else "unpaired",
               "delta": d["delta_strict_accuracy"], "n_items": d.get("n_items"),
               "ci_low": d.get("delta_strict_accuracy_ci_low", d["delta_strict_accuracy"]),
               "ci_high": d.get("delta_strict_accuracy_ci_high", d["delta_strict_accuracy"])}
              for vid, d in variants if d.get("delta_strict_accuracy") is not None]
    unpaired = any(not d.get("paired", True) for _, d in variants)
    heat, judges = _heatmap_rows(summary, set(bases))
    vmax = max([0.05, *(r["disagreement_rate"] for r in heat)])
    named = f" (base {bases[0]})" if len(bases) == 1 else f" (bases {', '.join(bases)})"
    blocks: list[Block] = [
        Heading(3, f"sweep-{slug}", f"{sweep} on {ds}" + (named if bases else "")),
        *_tables(ds, sweep, slug, variants, metrics, published, cell),
        figure(f"sweep-forest-{slug}", f"Change in strict accuracy against the base, {sweep} on {ds}", f"sweep_forest_{slug}",
               (lambda r=forest: _charts.forest_chart(r)) if forest else None, "no variant was compared with its base",
               f"Unpaired rows of {sweep} on {ds} (the legend's \"unpaired\") compare two samples: their interval is unpaired."
               if unpaired else ""),
        figure(f"sweep-disagreement-{slug}", f"Disagreement between the judges of {sweep} on {ds}",
               f"sweep_disagreement_{slug}", (lambda r=heat, j=judges, v=vmax: _charts.disagreement_chart(r, j, v)) if heat else None,
               f"no two judges of the sweep share an item on {ds}",
               f"Judges of {sweep} judged on {ds}, each two on the items both were asked about; colour scale 0–{vmax:.2f}"),
    ]
    spread = _spread_text(summary, f"{sweep} on {ds}")
    if spread:
        blocks.append(Para(spread))
    return blocks


def instability_blocks(sweeps: Mapping[str, Any], metrics: Mapping[str, Any],
                       published: Callable[[str, int], list[list[Cell]]], cell: _Fmt, figure: _Figure) -> list[Block]:
    """The section's blocks from sweeps.json (`{dataset: {sweep: {variant: {...}, "_sweep": {...}}}}`); [] without
    sweeps. Each variant's row names its `base`, `compared_on` ({variant, base} splits) and `paired`. `metrics`:
    metrics.json (each base's own row, on its split); `published(ds, width)`: the dataset's published rows as table
    rows; `cell`: the report's value-with-interval format; `figure`: the report's chart renderer."""
    present = [(ds, sweep) for ds in sorted(sweeps) for sweep in sorted(sweeps[ds] or {})]
    if not present:
        return []
    rows = [d for ds, sweep in present for k, d in sweeps[ds][sweep].items() if k != "_sweep"]
    blocks: list[Block] = [Heading(2, INSTABILITY_ID, "Instability: sweeps"), Para(_INTRO)]
    if any(d.get("paired", True) for d in rows):
        blocks.append(Para(_PAIRED))
    if any(not d.get("paired", True) for d in rows):
        blocks.append(Para(_UNPAIRED))
    for ds, sweep in present:
        # Published rows have no base: an empty "compared with" keeps their value under strict accuracy.
        pub = [[row[0], "—", *row[1:]] for row in published(ds, len(_HEADER) - 1)]
        blocks += _sweep_blocks(ds, sweep, sweeps[ds][sweep], metrics, pub, cell, figure)
    return blocks
