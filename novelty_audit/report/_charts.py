"""Charts as Vega-Lite specs (altair) rendered offline to SVG by vl-convert.

Each chart is built from rows the report already holds (values from metrics.json and the
metrics tables); nothing is aggregated here. One chart per dataset keeps the judge axis sorted
by that dataset's values.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["candidate_chart", "accuracy_chart", "order_flip_chart", "flip_matrix_chart", "cost_chart", "spread_chart", "forest_chart", "disagreement_chart",
           "to_svg", "KINDS"]

_WIDTH = 520
KINDS = ("measured", "control", "published")
"""Row kinds: a judge run here, a control (the reference floor), a published figure (not rerun)."""
_KIND_COLORS = ("#1f5fa8", "#7a7a7a", "#c2571a")
_KIND_SHAPES = ("circle", "square", "diamond")


def _alt():
    import altair  # a core dependency; imported here because it is slow to import

    return altair


def to_svg(chart: Any) -> str:
    """Render offline (no network, no browser): vl-convert bundles Vega and its fonts."""
    import vl_convert

    chart = chart.configure_axis(labelFontSize=12, titleFontSize=12).configure_legend(labelFontSize=12, titleFontSize=12)
    # validate=False: the same dict without a JSON-schema pass over it (a fifth of the report stage with a sweep's
    # dozens of charts); tests/report holds every spec the report renders to the Vega-Lite schema instead.
    return _stable_ids(vl_convert.vegalite_to_svg(chart.to_dict(validate=False)))


def _stable_ids(svg: str) -> str:
    # Vega numbers gradients and clip paths with a per-process counter (gradient_0, gradient_1, …), so the same
    # chart rendered twice differs; renumber ids by first appearance to keep the bytes a function of the spec.
    mapping: dict[str, str] = {}
    for old in re.findall(r'\bid="([^"]+)"', svg):
        mapping.setdefault(old, f"d{len(mapping)}")
    if not mapping:
        return svg
    pattern = re.compile(r'(\bid="|#)(' + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r')(?=[")])')
    return pattern.sub(lambda m: m.group(1) + mapping[m.group(2)], svg)


def _height(n: int) -> int:
    return max(60, 22 * n)


def _kind_scales(alt: Any, rows: list[dict[str, Any]]) -> tuple[Any, Any]:
    """Colour and shape by kind; the legend lists only the kinds drawn (each keeps its colour and shape)."""
    drawn = [i for i, k in enumerate(KINDS) if any(r.get("kind") == k for r in rows)] or list(range(len(KINDS)))
    domain = [KINDS[i] for i in drawn]
    color = alt.Color("kind:N", title=None, scale=alt.Scale(domain=domain, range=[_KIND_COLORS[i] for i in drawn]))
    shape = alt.Shape("kind:N", title=None, scale=alt.Scale(domain=domain, range=[_KIND_SHAPES[i] for i in drawn]))
    return color, shape


def _interval_chart(rows: list[dict[str, Any]], value: str, title: str, band: tuple[float, float] | None,
                    band_label: str) -> Any:
    """Judges (rows in display order: label, kind, value, ci_low, ci_high) as points with interval rules."""
    alt = _alt()
    order = [r["label"] for r in rows]
    x = alt.X(f"{value}:Q", title=title, scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=320))
    color, shape = _kind_scales(alt, rows)
    layers = []
    if band is not None:
        # The controls' range drawn across the whole plot: the floor a judge must clear (never thinner than visible).
        lo, hi = band
        if hi - lo < 0.01:
            lo, hi = max(0.0, lo - 0.005), min(1.0, hi + 0.005)
        layers.append(
            alt.Chart(alt.Data(values=[{"lo": lo, "hi": hi, "what": band_label}]))
            .mark_rect(color="#d9d9d9", opacity=0.55)
            .encode(x=alt.X("lo:Q", scale=alt.Scale(domain=[0, 1]), title=title), x2="hi:Q", tooltip=["what:N", "lo:Q", "hi:Q"])
        )
    base = alt.Chart(alt.Data(values=rows))
    layers.append(base.mark_rule(strokeWidth=2).encode(x=alt.X("ci_low:Q", scale=alt.Scale(domain=[0, 1]), title=title),
                                                        x2="ci_high:Q", y=y, color=color))
    layers.append(base.mark_point(filled=True, size=60, opacity=1).encode(
        x=x, y=y, color=color, shape=shape, tooltip=["label:N", "kind:N", f"{value}:Q", "ci_low:Q", "ci_high:Q"]))
    return alt.layer(*layers).properties(width=_WIDTH, height=_height(len(rows)))


def accuracy_chart(rows: list[dict[str, Any]], band: tuple[float, float] | None = None) -> Any:
    """rows (sorted, one dataset): label, kind, strict_accuracy, ci_low, ci_high; band: the controls' min–max."""
    return _interval_chart(rows, "strict_accuracy", "strict accuracy (95% interval; grey band: controls)", band,
                           "control judges")


def candidate_chart(rows: list[dict[str, Any]], band: tuple[float, float] | None) -> Any:
    """rows (display order): label, kind, candidate_win_rate, ci_low, ci_high, tie_rate; band: the win rate's min–max
    over the judge configurations (controls left out). Ties beside, on their own axis: never part of a win."""
    alt = _alt()
    wins = _interval_chart(rows, "candidate_win_rate", "candidate win rate (95% interval; band: min–max over configurations)",
                           band, "spread over judge configurations")
    ties = alt.Chart(alt.Data(values=rows)).mark_bar(color="#9aa7b8").encode(
        x=alt.X("tie_rate:Q", title="tie rate", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(tickCount=2)),
        y=alt.Y("label:N", sort=[r["label"] for r in rows], title=None, axis=None),
        tooltip=["label:N", "tie_rate:Q"],
    ).properties(width=110, height=_height(len(rows)))
    return alt.hconcat(wins, ties, spacing=8)


def order_flip_chart(rows: list[dict[str, Any]]) -> Any:
    """rows (sorted, one dataset): label, kind, order_flip_rate, ci_low, ci_high."""
    return _interval_chart(rows, "order_flip_rate", "share of pairs whose forward and reverse verdicts differ (95% interval)",
                           None, "")


def flip_matrix_chart(rows: list[dict[str, Any]], vmax: float) -> Any:
    """rows: judge_a, judge_b, flip_rate (one dataset, controls left out); colour scale 0..vmax."""
    judges = sorted({r["judge_a"] for r in rows} | {r["judge_b"] for r in rows})
    return _pair_heatmap(rows, judges, vmax, rate="flip_rate", title="flip rate", scheme="blues", count="compared", label_limit=220)


def cost_chart(rows: list[dict[str, Any]]) -> Any:
    """rows: dataset, judge, cost_usd, strict_accuracy (judges with a cost only)."""
    alt = _alt()
    costs = [float(r["cost_usd"]) for r in rows if r["cost_usd"]]
    # Costs that span orders of magnitude (a cheap and an expensive model) are only readable on a log axis.
    log = bool(costs) and max(costs) / min(costs) >= 100
    axis = alt.Axis(format="$,.3~g" if log else "$,.2~f", tickCount=5, labelOverlap="greedy", labelFlush=True,
                    labelAngle=0, labelPadding=4)
    scale = alt.Scale(type="log", nice=True) if log else alt.Scale(zero=True, nice=True)
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("cost_usd:Q", title="total cost of the run (USD" + (", log scale)" if log else ")"), axis=axis, scale=scale),
        y=alt.Y("strict_accuracy:Q", title="strict accuracy", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("dataset:N", title="dataset"),
    )
    return (base.mark_point(filled=True, size=60).encode(tooltip=["judge:N", "dataset:N", "cost_usd:Q", "strict_accuracy:Q"])
            + base.mark_text(align="left", dx=7, fontSize=10).encode(text="judge:N")).properties(width=_WIDTH, height=260)


def spread_chart(rows: list[dict[str, Any]]) -> Any:
    """rows: dataset, backbone, strict_accuracy_min, strict_accuracy_max."""
    alt = _alt()
    base = alt.Chart(alt.Data(values=rows)).encode(y=alt.Y("backbone:N", title=None), color=alt.Color("dataset:N"))
    return (
        base.mark_rule(strokeWidth=3).encode(
            x=alt.X("strict_accuracy_min:Q", title="strict accuracy across prompt variants (min–max)", scale=alt.Scale(domain=[0, 1])),
            x2="strict_accuracy_max:Q",
        )
        + base.mark_point(filled=True).encode(x="strict_accuracy_min:Q")
        + base.mark_point(filled=True).encode(x="strict_accuracy_max:Q")
    ).properties(width=_WIDTH, height=_height(len({r["backbone"] for r in rows})))


_PAIRING = {"paired": ("#1f5fa8", "circle"), "unpaired": ("#6a3d9a", "square")}


def forest_chart(rows: list[dict[str, Any]]) -> Any:
    """rows (one dataset and sweep, display order): label, delta, ci_low, ci_high, comparison ("paired" |
    "unpaired") — each variant's strict accuracy minus its base's, with its interval (paired or unpaired bootstrap,
    as sweeps.json gives it); a rule marks no change. The legend lists only the comparisons drawn."""
    alt = _alt()
    order = [r["label"] for r in rows]
    reach = 1.05 * max([0.05, *(abs(float(r[k])) for r in rows for k in ("delta", "ci_low", "ci_high"))])
    scale = alt.Scale(domain=[-reach, reach], nice=False)
    title = "strict accuracy − base's (95% bootstrap interval)"
    drawn = [k for k in _PAIRING if any(r.get("comparison", "paired") == k for r in rows)]
    color = alt.Color("comparison:N", title=None, scale=alt.Scale(domain=drawn, range=[_PAIRING[k][0] for k in drawn]))
    shape = alt.Shape("comparison:N", title=None, scale=alt.Scale(domain=drawn, range=[_PAIRING[k][1] for k in drawn]))
    rows = [{"comparison": "paired", **r} for r in rows]
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=320))
    base = alt.Chart(alt.Data(values=rows))
    zero = alt.Chart(alt.Data(values=[{"x": 0.0}])).mark_rule(color="#7a7a7a", strokeDash=[4, 3]).encode(x=alt.X("x:Q", scale=scale, title=title))
    ci = base.mark_rule(strokeWidth=2).encode(x=alt.X("ci_low:Q", scale=scale, title=title), x2="ci_high:Q", y=y, color=color)
    dot = base.mark_point(filled=True, size=60, opacity=1).encode(
        x=alt.X("delta:Q", scale=scale, title=title), y=y, color=color, shape=shape,
        tooltip=["label:N", "comparison:N", "delta:Q", "ci_low:Q", "ci_high:Q", "n_items:Q"])
    return alt.layer(zero, ci, dot).properties(width=_WIDTH, height=_height(len(rows)))


def disagreement_chart(rows: list[dict[str, Any]], judges: list[str], vmax: float) -> Any:
    """rows: judge_a, judge_b, disagreement_rate, n_items (every ordered pair of a sweep's judges); colour 0..vmax."""
    return _pair_heatmap(rows, judges, vmax, rate="disagreement_rate", title="disagreement", scheme="oranges", count="n_items", label_limit=260)


def _pair_heatmap(rows: list[dict[str, Any]], judges: list[str], vmax: float, *, rate: str, title: str, scheme: str,
                  count: str, label_limit: int) -> Any:  # fmt: skip
    """A judge × judge matrix of `rate` (rows: judge_a, judge_b, rate, count), coloured 0..vmax, each cell labelled."""
    alt = _alt()
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("judge_b:N", sort=judges, title=None, axis=alt.Axis(labelAngle=-40, labelLimit=label_limit)),
        y=alt.Y("judge_a:N", sort=judges, title=None, axis=alt.Axis(labelLimit=label_limit)),
    )
    rect = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.Color(f"{rate}:Q", title=title, scale=alt.Scale(domain=[0, vmax], scheme=scheme, clamp=True)),
        tooltip=["judge_a:N", "judge_b:N", f"{rate}:Q", f"{count}:Q"],
    )
    # Dark cells get white text, light cells black: readable on the whole scale.
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text(f"{rate}:Q", format=".2f"),
        color=alt.condition(f"datum.{rate} > {vmax * 0.55:.6f}", alt.value("white"), alt.value("black")),
    )
    size = max(160, 44 * len(judges))
    return (rect + text).properties(width=size, height=size)
