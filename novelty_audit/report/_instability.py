"""The instability section: each `judge.sweeps` sweep from reports/sweeps.json (never recomputed here).

Per dataset and sweep: a table of the variants against their base (ties in columns of their own, never folded into
accuracy; published rows of the dataset below, "published, not rerun"), a forest plot of each variant's change in
strict accuracy with its paired interval, and a heatmap of the disagreement between every two judges of the sweep
(`_sweep.disagreement_matrix`: no label needed). Without sweeps there is no section.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from . import _charts
from ._blocks import Block, Cell, Figure, Heading, Para, Table

__all__ = ["INSTABILITY_ID", "instability_blocks"]

INSTABILITY_ID = "instability"

_HEADER = ["judge", "strict accuracy", "Δ strict accuracy", "McNemar p (Holm)", "disagreement with base", "tie rate",
           "Δ tie rate", "Δ order flip rate", "items"]
_INTRO = ("Each sweep changes knobs of a base judge (params.yaml judge.sweeps). A variant is compared with its base on "
          "the items both were asked about: Δ is the variant minus the base, with a paired bootstrap interval; McNemar's "
          "exact p on correctness is Holm-adjusted across the sweep's variants. Disagreement is the share of those items "
          "on which the two verdicts (an idea, a tie or none) differ, so it needs no gold label. Ties are shown on their "
          "own (tie rate and its change) and count as wrong in strict accuracy. Published figures for the dataset follow "
          "the measured rows; they were not rerun here and are never merged into a measured row.")

_Figure = Callable[[str, str, str, "Callable[[], Any] | None", str, str], Figure]


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s)


def _delta_cell(d: Mapping[str, Any], m: str, cell: Callable[[dict[str, Any], str], str]) -> str:
    text = cell(dict(d), m)
    return text if text == "—" or text.startswith("-") else "+" + text


def _p_cell(d: Mapping[str, Any]) -> str:
    if d.get("mcnemar_p") is None:
        return "—"
    holm = d.get("mcnemar_p_holm")
    return f"{float(d['mcnemar_p']):.3f}" + (f" ({float(holm):.3f})" if holm is not None else "")


def _variant_row(vid: str, d: Mapping[str, Any], cell: Callable[[dict[str, Any], str], str]) -> list[Cell]:
    return [vid, cell(dict(d), "strict_accuracy"), _delta_cell(d, "delta_strict_accuracy", cell), _p_cell(d),
            cell(dict(d), "disagreement_rate"), cell(dict(d), "tie_rate"), _delta_cell(d, "delta_tie_rate", cell),
            _delta_cell(d, "delta_order_flip_rate", cell), str(d.get("n_items", 0))]


def _spread_text(summary: Mapping[str, Any], where: str) -> str:
    parts = [f"across the {knob} knob {float(summary[f'{knob}_spread']):.3f} ({summary[f'{knob}_spread_n_variants']} "
             f"variants, {summary[f'{knob}_spread_n_items']} items judged by all)"
             for knob in ("prompt", "model") if summary.get(f"{knob}_spread") is not None]
    return (f"Spread of strict accuracy in {where} (largest max − min with the other knobs fixed): " + "; ".join(parts) + "."
            if parts else "")


def _heatmap_rows(summary: Mapping[str, Any], base_id: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    matrix = summary.get("disagreement_matrix") or {}
    counts = summary.get("disagreement_matrix_n_items") or {}
    rows = [{"judge_a": a, "judge_b": b, "disagreement_rate": float(rate), "n_items": (counts.get(a) or {}).get(b)}
            for a in sorted(matrix) for b, rate in sorted(matrix[a].items())]
    return rows, sorted(matrix, key=lambda j: (j != base_id, j))  # the base first


def _sweep_blocks(ds: str, sweep: str, rows: Mapping[str, Any], base: Mapping[str, Any] | None, base_id: str | None,
                  published: list[list[Cell]], cell: Callable[[dict[str, Any], str], str], figure: _Figure) -> list[Block]:
    slug = f"{_slug(ds)}-{_slug(sweep)}"
    summary = rows.get("_sweep") or {}
    variants = sorted((k, v) for k, v in rows.items() if k != "_sweep")
    table: list[list[Cell]] = []
    classes: list[str] = []
    if base_id is not None:
        b = dict(base or {})
        table.append([f"{base_id} (base)", cell(b, "strict_accuracy"), "—", "—", "—", cell(b, "tie_rate"), "—", "—",
                      str(b.get("n_pairs", "—"))])
        classes.append("base")
    for vid, d in variants:
        table.append(_variant_row(vid, d, cell))
        classes.append("measured")
    table += published
    classes += ["published"] * len(published)
    forest = [{"label": vid, "delta": d["delta_strict_accuracy"], "n_items": d.get("n_items"),
               "ci_low": d.get("delta_strict_accuracy_ci_low", d["delta_strict_accuracy"]),
               "ci_high": d.get("delta_strict_accuracy_ci_high", d["delta_strict_accuracy"])}
              for vid, d in variants if d.get("delta_strict_accuracy") is not None]
    heat, judges = _heatmap_rows(summary, base_id)
    vmax = max([0.05, *(r["disagreement_rate"] for r in heat)])
    blocks: list[Block] = [
        Heading(3, f"sweep-{slug}", f"{sweep} on {ds}" + (f" (base {base_id})" if base_id else "")),
        Table(f"sweep-table-{slug}", _HEADER, table, classes, wide=True, cls="nums"),
        figure(f"sweep-forest-{slug}", f"Change in strict accuracy against the base, {sweep} on {ds}", f"sweep_forest_{slug}",
               (lambda r=forest: _charts.forest_chart(r)) if forest else None, "no variant shares an item with its base", ""),
        figure(f"sweep-disagreement-{slug}", f"Disagreement between the judges of {sweep} on {ds}",
               f"sweep_disagreement_{slug}", (lambda r=heat, j=judges, v=vmax: _charts.disagreement_chart(r, j, v)) if heat else None,
               "no two judges of the sweep share an item",
               f"Colour scale of {sweep} on {ds}: 0–{vmax:.2f}"),
    ]
    spread = _spread_text(summary, f"{sweep} on {ds}")
    if spread:
        blocks.append(Para(spread))
    return blocks


def _base_id(rows: Mapping[str, Any]) -> str | None:
    """The base: the one judge of the disagreement matrix that is not a variant of the sweep (sweeps.json holds
    numbers only, for `dvc metrics`)."""
    return next((j for j in sorted((rows.get("_sweep") or {}).get("disagreement_matrix") or {}) if j not in rows), None)


def instability_blocks(sweeps: Mapping[str, Any], metrics: Mapping[str, Any],
                       published: Callable[[str, int], list[list[Cell]]], cell: Callable[[dict[str, Any], str], str],
                       figure: _Figure) -> list[Block]:
    """The section's blocks from sweeps.json (`{dataset: {sweep: {variant: {...}, "_sweep": {...}}}}`); [] without
    sweeps. `metrics`: metrics.json (the base's own row); `published(ds, width)`:
    the dataset's published rows as table rows; `cell`: the report's value-with-interval format; `figure`: the
    report's chart renderer."""
    present = [(ds, sweep) for ds in sorted(sweeps) for sweep in sorted(sweeps[ds] or {})]
    if not present:
        return []
    blocks: list[Block] = [Heading(2, INSTABILITY_ID, "Instability: sweeps"), Para(_INTRO)]
    for ds, sweep in present:
        base_id = _base_id(sweeps[ds][sweep])
        base = (metrics.get(ds) or {}).get(base_id) if base_id else None
        blocks += _sweep_blocks(ds, sweep, sweeps[ds][sweep], base, base_id, published(ds, len(_HEADER)), cell, figure)
    return blocks
