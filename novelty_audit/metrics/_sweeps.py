"""Sweeps: each variant of a `judge.sweeps` entry against its own base judge (reports/sweeps.json).

Which items. A variant that changes a knob of how the judge asks is judged on the base's splits and compared with
the base split by split. A `dataset` variant (the base's config on another split) is compared with its base on
the split its split is a variant of (`pin.datasets.<split>.variant_of`; an original split: itself), named in
each row's `compared_on`. Two kinds of comparison:

- **paired** (same split, or a variant split holding the same two papers per pair: the plan-format rewrite, whose
  pair and idea ids are the original's): on the items both judges were asked about (`covered` in both, see
  _views.py), item by item. Paired intervals, exact McNemar on correctness, and the label-free disagreement: the
  share of those items whose two verdicts (idea, tie or none; pointwise: POSITIVE, NEGATIVE or none) differ.
- **unpaired** (different ideas: regenerated low sides): each judge on its own covered items, two independent
  samples. The difference of accuracies gets an unpaired bootstrap interval (each side resampled on its own);
  disagreement and McNemar are not measured and are null, never 0.

Strict accuracy, soft accuracy and ties have metrics.json's definitions (a tie or `none` is wrong; soft: a tie is
half right), macro-F1 is metrics.json's pointwise macro-F1, all restricted to the compared items. Intervals are
percentile bootstraps over items with seeded weight matrices per (dataset, sweep, compared split), so every
variant of a sweep compared on the same items is resampled on the same draws. Cost per decision is the recorded
`cost_usd` of the compared rows over their calls; null when any row's cost is unknown (a model without a price).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..config import MetricsParams, SweepVariant
from ._compare import mcnemar_exact_p
from ._definitions import MacroF1
from ._estimates import bootstrap_weights, holm_adjusted, percentile_interval, seeded_rng
from ._views import pairwise_view, pointwise_view

__all__ = ["NULL_WHEN_UNMEASURED", "SPREAD_KNOBS", "sweeps_json"]

SPREAD_KNOBS = ("prompt", "model")
"""Knobs whose spread of strict accuracy each sweep reports (the study: wording moved accuracy more than the model)."""

NULL_WHEN_UNMEASURED = (
    "mcnemar_p", "mcnemar_p_holm", "disagreement_rate", "pointwise_disagreement_rate",
    "cost_per_decision_usd", "cost_per_decision_usd_base", "pointwise_cost_per_decision_usd", "pointwise_cost_per_decision_usd_base",
)  # fmt: skip
"""Fields a compared row always carries, null when not measured (unpaired items, a price nobody set), never 0."""

_CALLS = ("n_valid", "n_invalid", "n_refusal", "n_error", "n_truncated", "n_undecided")


@dataclass(frozen=True)
class _Sample:
    """One side of a comparison: a judge's rows on one split, aligned to `ids`, with the bootstrap weights
    (resamples × ids; None without resamples)."""

    rows: pl.DataFrame
    ids: list[str]
    weights: np.ndarray | None


class _Weights:
    """Seeded bootstrap weight matrices of one (dataset, sweep), one per (stream, id list): variants compared on the
    same items share draws. `universe[table]`: every id of the dataset in that table (all judges)."""

    def __init__(self, params: MetricsParams, universe: Mapping[str, list[str]], *stream: str):
        self.params, self.universe, self.stream = params, universe, stream
        self.cache: dict[tuple[tuple[str, ...], tuple[str, ...]], np.ndarray] = {}

    def get(self, ids: list[str], *extra: str) -> np.ndarray | None:
        if not self.params.bootstrap_resamples:
            return None
        key = (extra, tuple(ids))
        if key not in self.cache:
            rng = seeded_rng(self.params.seed, *self.stream, *extra)
            self.cache[key] = bootstrap_weights(len(ids), self.params.bootstrap_resamples, rng).astype(np.float64)
        return self.cache[key]


def _interval(samples: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    lo, hi = percentile_interval(samples, confidence)
    return (None if math.isnan(lo) else lo), (None if math.isnan(hi) else hi)


def _ratio(w: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ num) / (w @ den)


def _delta_ci(v: tuple[np.ndarray | None, np.ndarray, np.ndarray], b: tuple[np.ndarray | None, np.ndarray, np.ndarray],
              confidence: float) -> tuple[float | None, float | None]:
    """Interval of num_v/den_v − num_b/den_b from each side's (weights, num, den). Paired: both sides share the
    weights and the denominator (the common items), so this is the paired bootstrap of the per-item difference;
    unpaired: each side is resampled on its own draws."""
    (wv, nv, dv), (wb, nb, db) = v, b
    if wv is None or wb is None or not dv.any() or not db.any():
        return None, None
    return _interval(_ratio(wv, nv, dv) - _ratio(wb, nb, db), confidence)


def _per_decision(rows: pl.DataFrame, id_col: str, ids: list[str], mask: np.ndarray) -> float | None:
    """Recorded cost of the masked rows over their calls; None when a row's cost is unknown or nothing was asked."""
    kept = set(i for i, m in zip(ids, mask) if m)
    sel = rows.filter(pl.col(id_col).is_in(list(kept)))
    if sel.height == 0 or "cost_usd" not in sel.columns or sel["cost_usd"].null_count():
        return None
    calls = sum(int(sel[c].fill_null(0).sum()) for c in _CALLS if c in sel.columns)
    return float(sel["cost_usd"].sum()) / calls if calls else None


def _masks(base: np.ndarray, variant: np.ndarray, paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """The items compared on each side: paired, those both were asked about (one mask); unpaired, each its own."""
    if paired:
        both = ((base > 0) & (variant > 0)).astype(np.float64)
        return both, both
    return (base > 0).astype(np.float64), (variant > 0).astype(np.float64)


def _pairwise(b: _Sample, v: _Sample, paired: bool, confidence: float) -> dict[str, Any]:
    """The pairwise fields of one row (see `sweeps_json`)."""
    bv, vv = pairwise_view(b.rows, b.ids), pairwise_view(v.rows, v.ids)
    mb, mv = _masks(bv.covered, vv.covered, paired)
    nb, nv = int(mb.sum()), int(mv.sum())
    out: dict[str, Any] = {"n_items": nv, "n_items_base": nb}
    if nb == 0 or nv == 0:
        return out
    for name, (fb, fv) in {
        "strict_accuracy": (bv.correct, vv.correct),
        "soft_accuracy": (bv.correct + 0.5 * bv.tie, vv.correct + 0.5 * vv.tie),
        "tie_rate": (bv.tie, vv.tie),
    }.items():
        sb, sv = float((fb * mb).sum()) / nb, float((fv * mv).sum()) / nv
        out[name], out[f"{name}_base"], out[f"delta_{name}"] = sv, sb, sv - sb
        out[f"delta_{name}_ci_low"], out[f"delta_{name}_ci_high"] = _delta_ci((v.weights, fv * mv, mv), (b.weights, fb * mb, mb), confidence)
    out["mcnemar_p"] = out["disagreement_rate"] = None
    if paired:
        only_base = int((bv.correct * (1 - vv.correct) * mb).sum())
        only_variant = int((vv.correct * (1 - bv.correct) * mb).sum())
        out["mcnemar_p"] = mcnemar_exact_p(only_base, only_variant)
        verd_b = dict(zip(b.rows["pair_id"].to_list(), b.rows["verdict"].to_list()))
        verd_v = dict(zip(v.rows["pair_id"].to_list(), v.rows["verdict"].to_list()))
        disagree = np.array([float(verd_b.get(pid) != verd_v.get(pid)) for pid in v.ids]) * mb
        out["disagreement_rate"] = float(disagree.sum()) / nb
        if v.weights is not None:
            out["disagreement_rate_ci_low"], out["disagreement_rate_ci_high"] = _interval(_ratio(v.weights, disagree, mb), confidence)
    # Order flips: each judge's rate over its compared items answered in both orders (metrics.json's definition).
    fb = _rate(bv.orders_differ * bv.both_orders * mb, bv.both_orders * mb)
    fv = _rate(vv.orders_differ * vv.both_orders * mv, vv.both_orders * mv)
    if fb is not None and fv is not None:
        out["order_flip_rate"], out["order_flip_rate_base"], out["delta_order_flip_rate"] = fv, fb, fv - fb
    out["cost_per_decision_usd"] = _per_decision(v.rows, "pair_id", v.ids, mv)
    out["cost_per_decision_usd_base"] = _per_decision(b.rows, "pair_id", b.ids, mb)
    return out


def _rate(num: np.ndarray, den: np.ndarray) -> float | None:
    d = float(den.sum())
    return float(num.sum()) / d if d else None


def _pointwise(b: _Sample, v: _Sample, paired: bool, confidence: float) -> dict[str, Any]:
    """The pointwise fields of one row: macro-F1 and its change, disagreement on the ideas (paired only), cost."""
    bv, vv = pointwise_view(b.rows, b.ids), pointwise_view(v.rows, v.ids)
    mb, mv = _masks(bv.covered, vv.covered, paired)
    nb, nv = int(mb.sum()), int(mv.sum())
    out: dict[str, Any] = {"pointwise_n_items": nv, "pointwise_n_items_base": nb}
    if nb == 0 or nv == 0:
        return out
    fb, fv = MacroF1(bv), MacroF1(vv)
    pb, pv = fb.parts * mb[:, None], fv.parts * mv[:, None]
    out["macro_f1"], out["macro_f1_base"] = float(fv.combine(pv.sum(axis=0))), float(fb.combine(pb.sum(axis=0)))
    out["delta_macro_f1"] = out["macro_f1"] - out["macro_f1_base"]
    if v.weights is not None and b.weights is not None:
        out["delta_macro_f1_ci_low"], out["delta_macro_f1_ci_high"] = _interval(fv.combine(v.weights @ pv) - fb.combine(b.weights @ pb), confidence)
    acc_b, acc_v = float((bv.correct * mb).sum()) / nb, float((vv.correct * mv).sum()) / nv
    out["pointwise_accuracy"], out["pointwise_accuracy_base"], out["delta_pointwise_accuracy"] = acc_v, acc_b, acc_v - acc_b
    out["pointwise_disagreement_rate"] = None
    if paired:
        disagree = np.array([float(x != y) for x, y in zip(bv.predicted, vv.predicted)]) * mb
        out["pointwise_disagreement_rate"] = float(disagree.sum()) / nb
        if v.weights is not None:
            out["pointwise_disagreement_rate_ci_low"], out["pointwise_disagreement_rate_ci_high"] = _interval(_ratio(v.weights, disagree, mb), confidence)
    out["pointwise_cost_per_decision_usd"] = _per_decision(v.rows, "idea_id", v.ids, mv)
    out["pointwise_cost_per_decision_usd_base"] = _per_decision(b.rows, "idea_id", b.ids, mb)
    return out


def _samples(base: pl.DataFrame, var: pl.DataFrame, id_col: str, paired: bool, weights: _Weights, table: str,
             base_split: str) -> tuple[_Sample, _Sample]:
    """Both sides aligned for a comparison: paired on one id list and one weight matrix (the base split's ids and
    the variant's: on one split, every id of the split, as every variant of the sweep there), unpaired each on its
    own ids and draws."""
    if paired:
        ids = sorted(set(base[id_col].to_list()) | set(var[id_col].to_list()) | set(weights.universe[table]))
        w = weights.get(ids, table, base_split)
        return _Sample(base, ids, w), _Sample(var, ids, w)
    ib, iv = sorted(base[id_col].to_list()), sorted(var[id_col].to_list())
    return (_Sample(base, ib, weights.get(ib, table, base_split, "base")),
            _Sample(var, iv, weights.get(iv, table, base_split, "variant")))


def _row(v: SweepVariant, vid: str, ds: str, compared: tuple[str, bool], tables: Mapping[str, pl.DataFrame],
         weights: _Weights, confidence: float) -> dict[str, Any]:
    """One variant's row: what it was compared with, then its pairwise and pointwise fields."""
    split, paired = compared
    out: dict[str, Any] = {"base": v.base, "compared_on": {"variant": ds, "base": split}, "paired": paired, "n_items": 0}
    for table, id_col, fields in (("pairwise", "pair_id", _pairwise), ("pointwise", "idea_id", _pointwise)):
        df = tables[table]
        mine = df.filter((pl.col("dataset") == ds) & (pl.col("judge") == vid))
        theirs = df.filter((pl.col("dataset") == split) & (pl.col("judge") == v.base))
        if mine.height == 0 or theirs.height == 0:
            continue
        b, s = _samples(theirs, mine, id_col, paired, weights, table, split)
        out.update(fields(b, s, paired, confidence))
    return out


def _spread(knob: str, info: Mapping[str, SweepVariant], pairwise: pl.DataFrame) -> dict[str, Any]:
    """Largest max−min of strict accuracy across the knob's values, the other knobs (and the base) held fixed
    (one-at-a-time: the knob's variants; grid: each setting of the other knobs), on the items every variant of the
    group judged."""
    groups: dict[str, list[str]] = {}
    judged = set(pairwise["judge"].unique().to_list())
    for vid, v in info.items():
        if knob in v.knobs and vid in judged:
            rest = repr((v.base, sorted((k, repr(x)) for k, x in v.knobs.items() if k != knob)))
            groups.setdefault(rest, []).append(vid)
    universe = sorted(pairwise["pair_id"].unique().to_list())
    best: dict[str, Any] = {}
    for vids in groups.values():
        if len(vids) < 2:
            continue
        views = [pairwise_view(pairwise.filter(pl.col("judge") == vid), universe) for vid in vids]
        common = np.logical_and.reduce([view.covered > 0 for view in views])
        n = int(common.sum())
        if n == 0:
            continue
        accs = [float(view.correct[common].sum()) / n for view in views]
        spread = max(accs) - min(accs)
        if not best or spread > best[f"{knob}_spread"]:
            best = {f"{knob}_spread": spread, f"{knob}_spread_n_items": n, f"{knob}_spread_n_variants": len(vids)}
    return best


def _disagreement_matrix(pairwise: pl.DataFrame, judges: list[str]) -> dict[str, Any]:
    """`{a: {b: rate}}` and `{a: {b: n_items}}` between every two judges of a sweep on one split (both orders, no
    diagonal), each on the items both were asked about; a pair with no shared item is left out."""
    universe = sorted(pairwise["pair_id"].unique().to_list())
    judged: dict[str, tuple[Any, dict[str, str]]] = {}
    for j in sorted(judges):
        rows = pairwise.filter(pl.col("judge") == j)
        if rows.height:
            judged[j] = pairwise_view(rows, universe), dict(zip(rows["pair_id"].to_list(), rows["verdict"].to_list()))
    rates: dict[str, dict[str, float]] = {}
    counts: dict[str, dict[str, int]] = {}
    names = list(judged)
    for i, a in enumerate(names):
        va, verd_a = judged[a]
        for b in names[i + 1:]:
            vb, verd_b = judged[b]
            common = [pid for pid, ca, cb in zip(universe, va.covered, vb.covered) if ca > 0 and cb > 0]
            if not common:
                continue
            rate = sum(verd_a.get(pid) != verd_b.get(pid) for pid in common) / len(common)
            for x, y in ((a, b), (b, a)):
                rates.setdefault(x, {})[y] = rate
                counts.setdefault(x, {})[y] = len(common)
    return {"disagreement_matrix": rates, "disagreement_matrix_n_items": counts} if rates else {}


def _belongs(vid: str, v: SweepVariant, ds: str, knob_splits: set[str], judged_here: set[str]) -> bool:
    """A `dataset` variant belongs to its split alone; on a split only the dataset knob names, the other variants
    (asked on the base's splits) are listed only where they were judged: none shows as n_items 0 where it was never
    meant to run."""
    if "dataset" in v.knobs:
        return v.knobs["dataset"] == ds
    return ds not in knob_splits or vid in judged_here


def sweeps_json(
    verdicts: pl.DataFrame,
    variants: Mapping[str, SweepVariant],
    params: MetricsParams,
    *,
    pointwise: pl.DataFrame | None = None,
    compared_with: Mapping[str, tuple[str, bool]] | None = None,
) -> dict[str, Any]:
    """`{dataset: {sweep: {variant: {...}, "_sweep": {...}}}}` for every dataset and sweep with verdicts.

    `compared_with`: split → (the split a `dataset` variant on it is compared with its base on, paired?); a split
    not named is compared with itself, paired (`PinParams.compared_with`). Per variant, against its own base
    (`SweepVariant.base`, named in `base`): `compared_on` {variant, base} (the two datasets), `paired`, `n_items`
    and `n_items_base` (pairwise items compared on each side: paired, the same items), strict and soft accuracy and
    tie rate of both with `delta_*` (+ `_ci_low`/`_ci_high`: paired or unpaired bootstrap), `mcnemar_p` and its
    Holm adjustment across the split's variants `mcnemar_p_holm`, `disagreement_rate` (+ interval; paired only),
    order flip rates, `cost_per_decision_usd` (+ `_base`); on pointwise items `pointwise_n_items(_base)`,
    `macro_f1(_base)`, `delta_macro_f1` (+ interval), pointwise accuracy and its delta,
    `pointwise_disagreement_rate` (+ interval; paired only), `pointwise_cost_per_decision_usd` (+ `_base`).
    `NULL_WHEN_UNMEASURED` fields are null when not measured, never left out or 0; other undefined values are left
    out (as in metrics.json). `_sweep`: the spread of strict accuracy across the prompt and the model knob
    (`SPREAD_KNOBS`) and `disagreement_matrix` (+ `_n_items`) between every two of the sweep's judges on the split,
    bases included."""
    point = pointwise if pointwise is not None else pl.DataFrame(schema={"dataset": pl.String, "judge": pl.String, "idea_id": pl.String})
    tables = {"pairwise": verdicts, "pointwise": point}
    sweeps: dict[str, dict[str, SweepVariant]] = {}
    for vid, v in variants.items():
        sweeps.setdefault(v.sweep, {})[vid] = v
    datasets = sorted(set(verdicts["dataset"].unique().to_list()) | set(point["dataset"].unique().to_list()))
    out: dict[str, Any] = {}
    for ds in datasets:
        judged_here = set(verdicts.filter(pl.col("dataset") == ds)["judge"].unique().to_list())
        judged_here |= set(point.filter(pl.col("dataset") == ds)["judge"].unique().to_list())
        universe = {"pairwise": verdicts.filter(pl.col("dataset") == ds)["pair_id"].unique().to_list(),
                    "pointwise": point.filter(pl.col("dataset") == ds)["idea_id"].unique().to_list()}
        for sweep, all_info in sorted(sweeps.items()):
            knob_splits = {v.knobs["dataset"] for v in all_info.values() if "dataset" in v.knobs}
            info = {vid: v for vid, v in all_info.items() if _belongs(vid, v, ds, knob_splits, judged_here)}
            if not any(vid in judged_here for vid in info):
                continue  # the sweep did not run on this dataset (disabled, or another dataset list)
            weights = _Weights(params, universe, "sweeps", ds, sweep)
            rows = {}
            for vid, v in info.items():
                compared = (compared_with or {}).get(ds, (ds, True)) if "dataset" in v.knobs else (ds, True)
                rows[vid] = _row(v, vid, ds, compared, tables, weights, params.confidence)
            tested = [vid for vid in info if rows[vid].get("mcnemar_p") is not None]
            for vid in info:
                if "mcnemar_p" in rows[vid]:
                    rows[vid]["mcnemar_p_holm"] = None
            if tested:
                holm = holm_adjusted([rows[v]["mcnemar_p"] for v in tested])
                for vid, p in zip(tested, holm):
                    rows[vid]["mcnemar_p_holm"] = float(p)
            here = verdicts.filter(pl.col("dataset") == ds)
            summary: dict[str, Any] = {}
            for knob in SPREAD_KNOBS:
                summary.update(_spread(knob, info, here))
            summary.update(_disagreement_matrix(here, sorted(set(info) | {v.base for v in info.values()})))
            out.setdefault(ds, {})[sweep] = {
                **{vid: {k: x for k, x in r.items() if x is not None or k in NULL_WHEN_UNMEASURED} for vid, r in rows.items()},
                "_sweep": summary,
            }
    return out
