"""Compute every registered metric, the judge comparisons and the prompt-sensitivity summary.

One bootstrap weight matrix per (dataset, table), drawn from `metrics.seed` over the dataset's ids
sorted, serves every judge, metric and comparison: intervals are reproducible by seed, independent
of row order, and paired across judges.
"""

from __future__ import annotations

import difflib
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import polars as pl

from ..errors import BadInputError, ConfigError
from . import _definitions  # noqa: F401  (registers the metrics)
from ._compare import align_verdicts, compare_aligned
from ._estimates import (
    WILSON_METHOD,
    Count,
    Estimate,
    LinearEstimate,
    Resampler,
    bca_interval,
    bootstrap_weights,
    percentile_intervals,
    seeded_rng,
)
from ..config import MetricsParams
from ._registry import METRICS, MetricSpec
from ._views import PairwiseView, check_unique, is_covered, pairwise_view, pointwise_view

__all__ = [
    "BY_REASON",
    "ERROR_REASON_SCHEMA",
    "MetricsTables",
    "compute_metrics",
    "metrics_json",
    "prompt_groups",
    "PAIRWISE_REQUIRED",
    "POINTWISE_REQUIRED",
]

PAIRWISE_REQUIRED = ("dataset", "judge", "pair_id", "idea_0", "idea_1", "gold_idea_id", "verdict")
POINTWISE_REQUIRED = ("dataset", "judge", "idea_id", "gold_label", "predicted")

METRIC_SCHEMA = {
    "dataset": pl.String,
    "judge": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "ci_method": pl.String,
    "wilson_low": pl.Float64,
    "wilson_high": pl.Float64,
    "direction": pl.String,
    "is_count": pl.Boolean,
}


@dataclass(frozen=True)
class MetricsTables:
    """Everything the metrics stage writes."""

    metrics: pl.DataFrame
    """Long: dataset, judge, metric, value, ci_low/ci_high (bootstrap) + ci_method, wilson_low/high, direction, is_count."""
    pairs: pl.DataFrame
    """Per (dataset, judge, pair_id): verdict, correct, tie, no_verdict, soft_score, orders_differ, votes."""
    comparisons: pl.DataFrame
    """Per (dataset, judge_a, judge_b), judge_a < judge_b unless listed: flips, directions, McNemar, Δ accuracy CI."""
    flip_matrix: pl.DataFrame
    """Per (dataset, judge_a, judge_b) in both orders and on the diagonal: compared, flips, flip_rate."""
    prompt_sensitivity: pl.DataFrame
    """Per (dataset, backbone): prompt variants, strict accuracy min/max/spread, mean flip rate between them."""
    definitions: list[dict[str, Any]]
    """The registry: name, table, direction, uncertainty, description (plus the interval settings)."""
    error_reasons: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=ERROR_REASON_SCHEMA))
    """Per (dataset, judge, table, reason): failed calls (outcome `error`) with that reason; sums to n_error."""

    def as_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        return metrics_json(self.metrics, self.error_reasons)


BY_REASON = {"pairwise": "n_error_by_reason", "pointwise": "pointwise_n_error_by_reason"}
"""metrics.json keys of the failed calls by reason ({reason: calls}) per table."""


UNKNOWN_AS_NULL = ("cost_usd", "cost_per_decision_usd", "pairwise_cost_per_decision_usd")
"""Metrics written as null when a row's cost is unknown (an API model without a price), where other undefined
values are left out: the judge did spend, at a price nobody set."""


def metrics_json(metrics: pl.DataFrame, error_reasons: pl.DataFrame | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """{dataset: {judge: {metric: value, metric_ci_low/high (bootstrap), metric_wilson_low/high,
    n_error_by_reason: {reason: calls}, pointwise_n_error_by_reason: {...}}}}; undefined values are left out
    so `dvc metrics` sees numbers only (it flattens the by-reason dicts to `n_error_by_reason.<reason>`), except a
    cost at an unknown price (`UNKNOWN_AS_NULL`): null."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    tables: dict[tuple[str, str], set[str]] = {}
    table_of = {s.name: s.table for s in METRICS}
    for r in metrics.iter_rows(named=True):
        d = out.setdefault(r["dataset"], {}).setdefault(r["judge"], {})
        tables.setdefault((r["dataset"], r["judge"]), set()).add(table_of.get(r["metric"], "pairwise"))
        for suffix, col in (("", "value"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high"), ("_wilson_low", "wilson_low"), ("_wilson_high", "wilson_high")):
            v = r[col]
            if v is not None and not math.isnan(v):
                d[r["metric"] + suffix] = int(v) if r["is_count"] and suffix == "" else v
            elif suffix == "" and r["metric"] in UNKNOWN_AS_NULL:
                d[r["metric"]] = None  # a cost with an unknown price: shown as unknown, never as free or as absent
    for (ds, judge), seen in tables.items():
        for t in sorted(seen):
            out[ds][judge][BY_REASON[t]] = {}
    if error_reasons is not None:
        for r in error_reasons.iter_rows(named=True):
            out.setdefault(r["dataset"], {}).setdefault(r["judge"], {}).setdefault(BY_REASON[r["table"]], {})[r["reason"]] = int(r["calls"])
    return out


def _check_columns(df: pl.DataFrame, required: Iterable[str], where: str) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise BadInputError(f"{where}: missing column(s) {', '.join(missing)}", hint="see docs/design/tables.md")


def _nan(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _evaluate(
    specs: list[MetricSpec], views: list[Any], resampler: Resampler | None, params: MetricsParams, stream: str
) -> list[dict[str, Any]]:
    """Evaluate `specs` on every view of one (dataset, table).

    All linear estimates of all judges resample with a single matrix product (identical part columns,
    such as the shared presence mask, computed once) and all percentile bounds come from one quantile call.
    """
    conf = params.confidence
    B = params.bootstrap_resamples
    ests: list[tuple[Any, MetricSpec, Estimate]] = []
    for v in views:
        for spec in specs:
            est = spec.fn(v)
            if est is not None:
                ests.append((v, spec, est))
    wants_boot = [resampler is not None and "bootstrap" in s.uncertainty and not math.isnan(e.value) for _, s, e in ests]
    use_bca = [
        w and params.bootstrap_method == "bca" and e.bca_sample() is not None for w, (_, _, e) in zip(wants_boot, ests)
    ]
    boot_cols: dict[int, int] = {}
    samples: list[np.ndarray] = []
    if resampler is not None:
        linear = [k for k, (_, _, e) in enumerate(ests) if wants_boot[k] and not use_bca[k] and isinstance(e, LinearEstimate)]
        if linear:
            unique: dict[bytes, int] = {}
            cols: list[np.ndarray] = []
            where: list[list[int]] = []
            for k in linear:
                idx = []
                for c in ests[k][2].parts.T:
                    key = c.tobytes()
                    if key not in unique:
                        unique[key] = len(cols)
                        cols.append(c)
                    idx.append(unique[key])
                where.append(idx)
            # parts × resamples, so each part's resampled sums are one contiguous row
            sums = np.ascontiguousarray((resampler.weights @ np.column_stack(cols).astype(np.float32)).T, dtype=np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                for k, idx in zip(linear, where):
                    boot_cols[k] = len(samples)
                    samples.append(np.asarray(ests[k][2].combine(sums[idx].T), dtype=np.float64))
        for k, (_, _, e) in enumerate(ests):
            if wants_boot[k] and not use_bca[k] and k not in boot_cols:
                r = e.resample(resampler)
                if r is not None:
                    boot_cols[k] = len(samples)
                    samples.append(r)
    lo, hi = percentile_intervals(np.vstack(samples) if samples else np.empty((0, B)), conf)
    pct = f"bootstrap percentile ({B} resamples, seed {params.seed})"
    bca = f"bootstrap BCa (scipy, {B} resamples, seed {params.seed})"
    rows: list[dict[str, Any]] = []
    for k, (v, s, e) in enumerate(ests):
        low = high = None
        method = None
        if use_bca[k]:
            rng = seeded_rng(params.seed, stream, v.dataset, v.judge, s.name)
            low, high = bca_interval(e.bca_sample(), B, conf, rng)
            method = bca
        elif k in boot_cols:
            low, high = lo[boot_cols[k]], hi[boot_cols[k]]
            method = pct if not math.isnan(low) else None
        wl = wh = None
        if "wilson" in s.uncertainty:
            w = e.wilson(conf)
            if w is not None:
                wl, wh = w
        rows.append(
            {
                "dataset": v.dataset,
                "judge": v.judge,
                "metric": s.name,
                "value": _nan(e.value),
                "ci_low": _nan(None if low is None else float(low)),
                "ci_high": _nan(None if high is None else float(high)),
                "ci_method": method,
                "wilson_low": _nan(wl),
                "wilson_high": _nan(wh),
                "direction": s.direction,
                "is_count": isinstance(e, Count),
            }
        )
    return rows


def _pair_rows(v: PairwiseView, verdicts: list[str | None], gold: list[str | None]) -> list[dict[str, Any]]:
    rows = []
    for i in np.flatnonzero(v.present):
        rows.append(
            {
                "dataset": v.dataset,
                "judge": v.judge,
                "pair_id": v.ids[i],
                "gold_idea_id": gold[i],
                "verdict": verdicts[i],
                "correct": bool(v.correct[i]),
                "tie": bool(v.tie[i]),
                "no_verdict": bool(v.no_verdict[i]),
                "covered": bool(v.covered[i]),
                "soft_score": float(v.correct[i] + 0.5 * v.tie[i]),
                "orders_differ": bool(v.orders_differ[i]) if v.both_orders[i] else None,
                "first_position_votes": int(v.first_votes[i]),
                "idea_votes": int(v.idea_votes[i]),
            }
        )
    return rows


ERROR_REASON_SCHEMA = {
    "dataset": pl.String,
    "judge": pl.String,
    "table": pl.String,
    "reason": pl.String,
    "calls": pl.Int64,
}
PAIR_SCHEMA = {
    "dataset": pl.String,
    "judge": pl.String,
    "pair_id": pl.String,
    "gold_idea_id": pl.String,
    "verdict": pl.String,
    "correct": pl.Boolean,
    "tie": pl.Boolean,
    "no_verdict": pl.Boolean,
    "covered": pl.Boolean,
    "soft_score": pl.Float64,
    "orders_differ": pl.Boolean,
    "first_position_votes": pl.Int64,
    "idea_votes": pl.Int64,
}
COMPARISON_SCHEMA = {
    "dataset": pl.String,
    "judge_a": pl.String,
    "judge_b": pl.String,
    "source": pl.String,
    "compared": pl.Int64,
    "flips": pl.Int64,
    "flip_rate": pl.Float64,
    "only_a": pl.List(pl.String),
    "only_b": pl.List(pl.String),
    "directions": pl.String,
    "accuracy_a": pl.Float64,
    "accuracy_b": pl.Float64,
    "accuracy_difference": pl.Float64,
    "difference_ci_low": pl.Float64,
    "difference_ci_high": pl.Float64,
    "difference_ci_method": pl.String,
    "mcnemar_p": pl.Float64,
}
FLIP_SCHEMA = {
    "dataset": pl.String,
    "judge_a": pl.String,
    "judge_b": pl.String,
    "compared": pl.Int64,
    "flips": pl.Int64,
    "flip_rate": pl.Float64,
}
PROMPT_SCHEMA = {
    "dataset": pl.String,
    "backbone": pl.String,
    "judges": pl.List(pl.String),
    "n_judges": pl.Int64,
    "strict_accuracy_min": pl.Float64,
    "strict_accuracy_max": pl.Float64,
    "strict_accuracy_spread": pl.Float64,
    "mean_flip_rate": pl.Float64,
    "max_flip_rate": pl.Float64,
}


def prompt_groups(judges: pl.DataFrame | None) -> dict[str, list[str]]:
    """Backbone ("backend/model") → judges sharing it with at least two different prompts.

    Read from judges.parquet `config` (JSON: backend, model, prompt, prompt_digest); judges without a
    prompt (distance judges) belong to no group.
    """
    if judges is None or judges.is_empty():
        return {}
    groups: dict[str, dict[str, set[str]]] = {}
    for r in judges.iter_rows(named=True):
        try:
            cfg = orjson.loads(r["config"]) if isinstance(r.get("config"), str) else (r.get("config") or {})
        except orjson.JSONDecodeError:
            raise BadInputError(f"judges table: judge {r['judge']}, field config: not valid JSON") from None
        prompt = cfg.get("prompt_digest") or cfg.get("prompt")
        if prompt is None:
            continue
        backbone = f"{cfg.get('backend') or r.get('backend')}/{cfg.get('model')}"
        groups.setdefault(backbone, {}).setdefault(str(prompt), set()).add(r["judge"])
    return {b: sorted(set().union(*v.values())) for b, v in sorted(groups.items()) if len(v) >= 2}


def _comparison_plan(
    judges_by_ds: dict[str, list[str]], params: MetricsParams, groups: dict[str, list[str]]
) -> dict[str, list[tuple[str, str, str]]]:
    known = sorted(set().union(*judges_by_ds.values())) if judges_by_ds else []
    for a, b in params.comparisons:
        for j in (a, b):
            if j not in known:
                close = difflib.get_close_matches(j, known, n=3)
                raise ConfigError(
                    f"params.yaml metrics.comparisons: judge '{j}' has no verdicts",
                    hint=f"did you mean {', '.join(close)}?" if close else f"judges: {', '.join(known)}",
                )
    plan: dict[str, list[tuple[str, str, str]]] = {}
    for ds, js in judges_by_ds.items():
        seen: set[frozenset[str]] = set()
        todo: list[tuple[str, str, str]] = []

        def add(a: str, b: str, source: str) -> None:
            if a in js and b in js and frozenset((a, b)) not in seen:
                seen.add(frozenset((a, b)))
                todo.append((a, b, source))

        for a, b in params.comparisons:
            add(a, b, "listed")
        if params.prompt_sensitivity:
            for members in groups.values():
                for a, b in itertools.combinations(members, 2):
                    add(a, b, "prompt-sensitivity")
        if params.compare == "all-pairs":
            for a, b in itertools.combinations(js, 2):
                add(a, b, "all-pairs")
        plan[ds] = todo
    return plan


def compute_metrics(
    verdicts: pl.DataFrame,
    pointwise: pl.DataFrame | None = None,
    judges: pl.DataFrame | None = None,
    params: MetricsParams | None = None,
) -> MetricsTables:
    """Every registered metric per (dataset, judge), the configured comparisons and prompt sensitivity."""
    params = params or MetricsParams()
    _check_columns(verdicts, PAIRWISE_REQUIRED, "verdicts")
    check_unique(verdicts, ["dataset", "judge", "pair_id"], "verdicts")
    if pointwise is not None:
        _check_columns(pointwise, POINTWISE_REQUIRED, "pointwise")
        check_unique(pointwise, ["dataset", "judge", "idea_id"], "pointwise")
    B = params.bootstrap_resamples
    metric_rows: list[dict[str, Any]] = []
    pair_rows: list[dict[str, Any]] = []
    comp_rows: list[dict[str, Any]] = []
    flip_rows: list[dict[str, Any]] = []
    prompt_rows: list[dict[str, Any]] = []
    reason_rows: list[dict[str, Any]] = []
    groups = prompt_groups(judges)
    datasets = sorted(
        set(verdicts["dataset"].unique().to_list()) | (set(pointwise["dataset"].unique().to_list()) if pointwise is not None else set())
    )
    # A judge that covers none of a dataset's pairs has no entry there (no 0.000 rows for data it never saw).
    judges_by_ds = {ds: _covering_judges(verdicts.filter(pl.col("dataset") == ds), "verdict") for ds in datasets}
    plan = _comparison_plan(judges_by_ds, params, groups)
    pw_specs = METRICS.for_table("pairwise")
    pt_specs = METRICS.for_table("pointwise")

    for ds in datasets:
        dv = verdicts.filter(pl.col("dataset") == ds)
        universe = sorted(dv["pair_id"].unique().to_list())
        weights = (
            Resampler(bootstrap_weights(len(universe), B, seeded_rng(params.seed, ds, "pairwise"))) if B and universe else None
        )
        views: dict[str, PairwiseView] = {}
        verdict_maps: dict[str, dict[str, str]] = {}
        gold: dict[str, str] = {}
        by_judge = dv.partition_by("judge", as_dict=True)
        for j in judges_by_ds[ds]:
            part = by_judge[(j,)]
            v = pairwise_view(part, universe, where=f"verdicts (dataset {ds}, judge {j})")
            views[j] = v
            reason_rows += _reason_rows(ds, j, "pairwise", v.error_reasons)
            vm = dict(zip(part["pair_id"].to_list(), part["verdict"].to_list()))
            # Comparisons see covered pairs only: an uncovered pair has no verdict to flip.
            verdict_maps[j] = {p: vm[p] for p, c in zip(v.ids, v.covered) if c}
            for pid, g in zip(part["pair_id"].to_list(), part["gold_idea_id"].to_list()):
                if gold.setdefault(pid, g) != g:
                    raise BadInputError(
                        f"verdicts: dataset {ds}, pair {pid}, field gold_idea_id: judges disagree on the gold idea "
                        f"({gold[pid]} vs {g})",
                        hint="all judges must be run on the same pinned pairs",
                    )
            pair_rows += _pair_rows(v, [vm.get(p) for p in universe], [gold.get(p) for p in universe])
        metric_rows += _evaluate(pw_specs, [views[j] for j in judges_by_ds[ds]], weights, params, "pairwise")

        comp_rows += _comparisons(ds, plan[ds], verdict_maps, gold, universe, weights, params)
        flip_rows += _flip_matrix(ds, views, comp_rows)
        prompt_rows += _prompt_rows(ds, groups, metric_rows, comp_rows)

        if pointwise is not None:
            dp = pointwise.filter(pl.col("dataset") == ds)
            dp = dp.filter(pl.col("judge").is_in(_covering_judges(dp, "predicted")))
            if dp.height:
                ids = sorted(dp["idea_id"].unique().to_list())
                pweights = Resampler(bootstrap_weights(len(ids), B, seeded_rng(params.seed, ds, "pointwise"))) if B else None
                pviews = [
                    pointwise_view(part, ids, where=f"pointwise (dataset {ds}, judge {key[0]})")
                    for key, part in sorted(dp.partition_by("judge", as_dict=True).items())
                ]
                metric_rows += _evaluate(pt_specs, pviews, pweights, params, "pointwise")
                for pv in pviews:
                    reason_rows += _reason_rows(ds, pv.judge, "pointwise", pv.error_reasons)

    definitions = [s.as_record() for s in METRICS]
    for d in definitions:
        d["intervals"] = {
            "confidence": params.confidence,
            "bootstrap": (f"{params.bootstrap_method} over items, {B} resamples, seed {params.seed}" if "bootstrap" in d["uncertainty"] and B else None),
            "wilson": WILSON_METHOD if "wilson" in d["uncertainty"] else None,
        }
    return MetricsTables(
        metrics=pl.DataFrame(metric_rows, schema=METRIC_SCHEMA, orient="row") if metric_rows else pl.DataFrame(schema=METRIC_SCHEMA),
        pairs=pl.DataFrame(pair_rows, schema=PAIR_SCHEMA) if pair_rows else pl.DataFrame(schema=PAIR_SCHEMA),
        comparisons=pl.DataFrame(comp_rows, schema=COMPARISON_SCHEMA) if comp_rows else pl.DataFrame(schema=COMPARISON_SCHEMA),
        flip_matrix=pl.DataFrame(flip_rows, schema=FLIP_SCHEMA) if flip_rows else pl.DataFrame(schema=FLIP_SCHEMA),
        prompt_sensitivity=pl.DataFrame(prompt_rows, schema=PROMPT_SCHEMA) if prompt_rows else pl.DataFrame(schema=PROMPT_SCHEMA),
        definitions=definitions,
        error_reasons=pl.DataFrame(reason_rows, schema=ERROR_REASON_SCHEMA) if reason_rows else pl.DataFrame(schema=ERROR_REASON_SCHEMA),
    )


def _covering_judges(df: pl.DataFrame, verdict_col: str) -> list[str]:
    """Judges (sorted) with at least one covered row in this one-dataset slice (`_views.is_covered`)."""
    return sorted({r["judge"] for r in df.iter_rows(named=True) if is_covered(r, r[verdict_col])})


def _reason_rows(ds: str, judge: str, table: str, reasons: dict[str, int]) -> list[dict[str, Any]]:
    return [{"dataset": ds, "judge": judge, "table": table, "reason": k, "calls": n} for k, n in sorted(reasons.items())]


def _comparisons(
    ds: str,
    todo: list[tuple[str, str, str]],
    verdict_maps: dict[str, dict[str, str]],
    gold: dict[str, str],
    universe: list[str],
    resampler: Resampler | None,
    params: MetricsParams,
) -> list[dict[str, Any]]:
    vocab: dict[str, int] = {}
    involved = sorted({j for a, b, _ in todo for j in (a, b)})
    aligned = {j: align_verdicts(verdict_maps[j], universe, vocab, gold) for j in involved}
    lo = np.full(len(todo), np.nan)
    hi = np.full(len(todo), np.nan)
    if resampler is not None and todo:
        # Paired bootstrap, batched: comparisons over the same common pairs share one denominator and one
        # matrix product; the same resample weights pair both judges' items.
        by_mask: dict[bytes, list[int]] = {}
        for k, (a, b, _) in enumerate(todo):
            m = aligned[a].present & aligned[b].present & aligned[a].has_gold
            by_mask.setdefault(m.tobytes(), []).append(k)
        diffs = np.empty((len(todo), resampler.resamples))
        for key, ks in by_mask.items():
            m = np.frombuffer(key, dtype=bool).astype(np.float32)
            js = sorted({j for k in ks for j in todo[k][:2]})
            col = {j: i + 1 for i, j in enumerate(js)}
            parts = np.column_stack([m] + [aligned[j].correct.astype(np.float32) * m for j in js])
            sums = np.asfortranarray((resampler.weights @ parts).astype(np.float64))  # columns read whole
            with np.errstate(invalid="ignore", divide="ignore"):
                for k in ks:
                    a, b, _ = todo[k]
                    diffs[k] = (sums[:, col[b]] - sums[:, col[a]]) / sums[:, 0]
        lo, hi = percentile_intervals(diffs, params.confidence)
    method = f"paired bootstrap percentile ({params.bootstrap_resamples} resamples, seed {params.seed})"
    rows = []
    for k, (a, b, source) in enumerate(todo):
        c = compare_aligned(universe, aligned[a], aligned[b])
        low = _nan(float(lo[k])) if c.accuracy_difference is not None else None
        high = _nan(float(hi[k])) if c.accuracy_difference is not None else None
        rows.append(
            {
                "dataset": ds,
                "judge_a": a,
                "judge_b": b,
                "source": source,
                "compared": c.compared,
                "flips": c.flips,
                "flip_rate": c.flip_rate,
                "only_a": c.only_before,
                "only_b": c.only_after,
                "directions": orjson.dumps(c.directions, option=orjson.OPT_SORT_KEYS).decode(),
                "accuracy_a": c.accuracy_before,
                "accuracy_b": c.accuracy_after,
                "accuracy_difference": c.accuracy_difference,
                "difference_ci_low": low,
                "difference_ci_high": high,
                "difference_ci_method": method if low is not None else None,
                "mcnemar_p": c.mcnemar_p,
            }
        )
    return rows


def _flip_matrix(ds: str, views: dict[str, PairwiseView], comp_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for j, v in sorted(views.items()):
        n = int(v.covered.sum())  # with itself, like with another judge: over the pairs it was asked about
        rows.append({"dataset": ds, "judge_a": j, "judge_b": j, "compared": n, "flips": 0, "flip_rate": 0.0 if n else None})
    for r in comp_rows:
        if r["dataset"] != ds:
            continue
        for a, b in ((r["judge_a"], r["judge_b"]), (r["judge_b"], r["judge_a"])):
            rows.append({"dataset": ds, "judge_a": a, "judge_b": b, "compared": r["compared"], "flips": r["flips"], "flip_rate": r["flip_rate"]})
    return rows


def _prompt_rows(
    ds: str, groups: dict[str, list[str]], metric_rows: list[dict[str, Any]], comp_rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    acc = {r["judge"]: r["value"] for r in metric_rows if r["dataset"] == ds and r["metric"] == "strict_accuracy"}
    flips = {frozenset((r["judge_a"], r["judge_b"])): r["flip_rate"] for r in comp_rows if r["dataset"] == ds}
    rows = []
    for backbone, members in groups.items():
        present = [j for j in members if acc.get(j) is not None]
        if len(present) < 2:
            continue
        values = [acc[j] for j in present]
        rates = [flips[frozenset(p)] for p in itertools.combinations(present, 2) if flips.get(frozenset(p)) is not None]
        rows.append(
            {
                "dataset": ds,
                "backbone": backbone,
                "judges": present,
                "n_judges": len(present),
                "strict_accuracy_min": min(values),
                "strict_accuracy_max": max(values),
                "strict_accuracy_spread": max(values) - min(values),
                "mean_flip_rate": float(np.mean(rates)) if rates else None,
                "max_flip_rate": max(rates) if rates else None,
            }
        )
    return rows
