"""Sweeps: each variant of a `judge.sweeps` entry against its base judge on the same items (reports/sweeps.json).

Paired on items both judges were asked about (`covered` in both, see _views.py): strict accuracy and ties have
metrics.json's definitions (correct / items; a tie or `none` is wrong), restricted to those items. Intervals are
percentile bootstraps over items with one seeded weight matrix per (dataset, sweep), so every variant of a sweep
is resampled on the same draws. `disagreement_rate` needs no label: the share of those items where the two
verdicts (idea, tie or none) differ. `_sweep.disagreement_matrix` holds the same rate between every two judges of
the sweep (its variants and its base), each pair on the items both were asked about.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from ..config import MetricsParams, SweepVariant
from ._compare import mcnemar_exact_p
from ._estimates import bootstrap_weights, holm_adjusted, percentile_interval, seeded_rng
from ._views import PairwiseView, pairwise_view

__all__ = ["SPREAD_KNOBS", "sweeps_json"]

SPREAD_KNOBS = ("prompt", "model")
"""Knobs whose spread of strict accuracy each sweep reports (the study: wording moved accuracy more than the model)."""

_Judged = tuple[PairwiseView, dict[str, str | None]]


def _judged(df: pl.DataFrame, judge: str, universe: list[str]) -> _Judged | None:
    rows = df.filter(pl.col("judge") == judge)
    if rows.height == 0:
        return None
    return pairwise_view(rows, universe), dict(zip(rows["pair_id"].to_list(), rows["verdict"].to_list()))


def _ratio_ci(num: np.ndarray, den: np.ndarray, w: np.ndarray | None, confidence: float) -> tuple[float | None, float | None]:
    if w is None or not den.any():
        return None, None
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = percentile_interval((w @ num) / (w @ den), confidence)
    return (None if math.isnan(lo) else lo), (None if math.isnan(hi) else hi)


def _rate(num: np.ndarray, den: np.ndarray) -> float | None:
    d = float(den.sum())
    return float(num.sum()) / d if d else None


def _variant(base: _Judged, var: _Judged, universe: list[str], w: np.ndarray | None, confidence: float) -> dict[str, Any]:
    (bv, bverd), (vv, vverd) = base, var
    common = (bv.covered > 0) & (vv.covered > 0)
    c = common.astype(np.float64)
    n = int(common.sum())
    out: dict[str, Any] = {"n_items": n}
    if n == 0:
        return out
    cb, cv = bv.correct * c, vv.correct * c
    disagree = np.array([float(bverd.get(pid) != vverd.get(pid)) for pid in universe]) * c
    acc_b, acc_v = cb.sum() / n, cv.sum() / n
    out["strict_accuracy"], out["strict_accuracy_base"] = acc_v, acc_b
    out["delta_strict_accuracy"] = acc_v - acc_b
    out["delta_strict_accuracy_ci_low"], out["delta_strict_accuracy_ci_high"] = _ratio_ci(cv - cb, c, w, confidence)
    only_base, only_variant = int((cb * (1 - vv.correct)).sum()), int((cv * (1 - bv.correct)).sum())
    out["mcnemar_p"] = mcnemar_exact_p(only_base, only_variant)
    out["disagreement_rate"] = disagree.sum() / n
    out["disagreement_rate_ci_low"], out["disagreement_rate_ci_high"] = _ratio_ci(disagree, c, w, confidence)
    tb, tv = bv.tie * c, vv.tie * c
    out["tie_rate"], out["tie_rate_base"] = tv.sum() / n, tb.sum() / n
    out["delta_tie_rate"] = out["tie_rate"] - out["tie_rate_base"]
    out["delta_tie_rate_ci_low"], out["delta_tie_rate_ci_high"] = _ratio_ci(tv - tb, c, w, confidence)
    # Order flips: each judge's rate over the common items it answered in both orders (metrics.json's definition).
    fb, fv = _rate(bv.orders_differ * bv.both_orders * c, bv.both_orders * c), _rate(vv.orders_differ * vv.both_orders * c, vv.both_orders * c)
    if fb is not None and fv is not None:
        out["order_flip_rate"], out["order_flip_rate_base"], out["delta_order_flip_rate"] = fv, fb, fv - fb
    return out


def _spread(knob: str, info: Mapping[str, SweepVariant], judged: Mapping[str, _Judged]) -> dict[str, Any]:
    """Largest max−min of strict accuracy across the knob's values, the other knobs held fixed (one-at-a-time: the
    knob's variants; grid: each setting of the other knobs), on the items every variant of the group judged."""
    groups: dict[str, list[str]] = {}
    for vid, v in info.items():
        if knob in v.knobs and vid in judged:
            rest = repr(sorted((k, repr(x)) for k, x in v.knobs.items() if k != knob))
            groups.setdefault(rest, []).append(vid)
    best: dict[str, Any] = {}
    for vids in groups.values():
        if len(vids) < 2:
            continue
        common = np.logical_and.reduce([judged[v][0].covered > 0 for v in vids])
        n = int(common.sum())
        if n == 0:
            continue
        accs = [float(judged[v][0].correct[common].sum()) / n for v in vids]
        spread = max(accs) - min(accs)
        if not best or spread > best[f"{knob}_spread"]:
            best = {f"{knob}_spread": spread, f"{knob}_spread_n_items": n, f"{knob}_spread_n_variants": len(vids)}
    return best


def _disagreement_matrix(judged: Mapping[str, _Judged], universe: list[str]) -> dict[str, Any]:
    """`{a: {b: rate}}` and `{a: {b: n_items}}` between every two judges of a sweep (both orders, no diagonal), each
    on the items both were asked about; a pair with no shared item is left out."""
    rates: dict[str, dict[str, float]] = {}
    counts: dict[str, dict[str, int]] = {}
    names = sorted(judged)
    for i, a in enumerate(names):
        (va, verd_a) = judged[a]
        for b in names[i + 1:]:
            (vb, verd_b) = judged[b]
            common = [pid for pid, ca, cb in zip(universe, va.covered, vb.covered) if ca > 0 and cb > 0]
            if not common:
                continue
            rate = sum(verd_a.get(pid) != verd_b.get(pid) for pid in common) / len(common)
            for x, y in ((a, b), (b, a)):
                rates.setdefault(x, {})[y] = rate
                counts.setdefault(x, {})[y] = len(common)
    return {"disagreement_matrix": rates, "disagreement_matrix_n_items": counts} if rates else {}


def sweeps_json(verdicts: pl.DataFrame, variants: Mapping[str, SweepVariant], params: MetricsParams) -> dict[str, Any]:
    """`{dataset: {sweep: {variant: {...}, "_sweep": {...}}}}` for every dataset and sweep with verdicts.

    Per variant (against its base, on the items both were asked about): n_items, strict accuracy of both and
    `delta_strict_accuracy` (+ `_ci_low`/`_ci_high`, paired bootstrap), exact McNemar `mcnemar_p` and its Holm
    adjustment across the sweep's variants `mcnemar_p_holm`, `disagreement_rate` (+ interval), `tie_rate`,
    `tie_rate_base`, `delta_tie_rate` (+ interval), order flip rates and `delta_order_flip_rate`. `_sweep`: the
    spread of strict accuracy across the prompt and the model knob (`SPREAD_KNOBS`), and `disagreement_matrix`
    (+ `disagreement_matrix_n_items`): the disagreement rate between every two of the sweep's judges, base
    included (`_disagreement_matrix`). Undefined values are left out
    (as in metrics.json); a variant with no verdicts, or whose base has none, is given `n_items: 0`."""
    sweeps: dict[str, dict[str, SweepVariant]] = {}
    for vid, v in variants.items():
        sweeps.setdefault(v.sweep, {})[vid] = v
    out: dict[str, Any] = {}
    for ds in sorted(verdicts["dataset"].unique().to_list()):
        dv = verdicts.filter(pl.col("dataset") == ds)
        universe = sorted(dv["pair_id"].unique().to_list())
        for sweep, all_info in sorted(sweeps.items()):
            base_id = next(iter(all_info.values())).base
            # A `dataset` variant belongs to its split alone, and on a split only the dataset knob names, the other
            # variants (asked on judge.datasets) are listed only where they were judged: none shows as n_items 0
            # where it was never meant to run.
            knob_splits = {v.knobs["dataset"] for v in all_info.values() if "dataset" in v.knobs}
            judged_here = set(dv["judge"].unique().to_list())
            info = {vid: v for vid, v in all_info.items()
                    if (v.knobs["dataset"] == ds if "dataset" in v.knobs else ds not in knob_splits or vid in judged_here)}
            present = [vid for vid in info if dv.filter(pl.col("judge") == vid).height]
            if not present:
                continue  # the sweep did not run on this dataset (disabled, or another dataset list)
            base = _judged(dv, base_id, universe)
            rng = seeded_rng(params.seed, "sweeps", ds, sweep)
            w = bootstrap_weights(len(universe), params.bootstrap_resamples, rng).astype(np.float64) if params.bootstrap_resamples else None
            judged = {vid: j for vid in info if (j := _judged(dv, vid, universe)) is not None}
            rows = {vid: (_variant(base, judged[vid], universe, w, params.confidence) if base and vid in judged else {"n_items": 0}) for vid in info}
            tested = [vid for vid in info if "mcnemar_p" in rows[vid]]
            if tested:
                holm = holm_adjusted([rows[v]["mcnemar_p"] for v in tested])
                for vid, p in zip(tested, holm):
                    rows[vid]["mcnemar_p_holm"] = float(p)
            summary: dict[str, Any] = {}
            for knob in SPREAD_KNOBS:
                summary.update(_spread(knob, info, judged))
            summary.update(_disagreement_matrix({**judged, **({base_id: base} if base else {})}, universe))
            out.setdefault(ds, {})[sweep] = {**{vid: {k: x for k, x in r.items() if x is not None} for vid, r in rows.items()}, "_sweep": summary}
    return out
