"""Charts as Vega-Lite specs (altair) rendered offline to SVG by vl-convert.

Each chart is built from rows the report already holds (values from metrics.json and the
metrics tables); nothing is aggregated here.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["accuracy_chart", "order_flip_chart", "flip_matrix_chart", "cost_chart", "spread_chart", "to_svg"]

_WIDTH = 420


def _alt():
    import altair  # a core dependency; imported here because it is slow to import

    return altair


def to_svg(chart: Any) -> str:
    """Render offline (no network, no browser): vl-convert bundles Vega and its fonts."""
    import vl_convert

    return _stable_ids(vl_convert.vegalite_to_svg(chart.to_dict()))


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


def _height(rows: list[dict[str, Any]], key: str = "judge") -> int:
    return max(60, 18 * len({r[key] for r in rows}))


def accuracy_chart(rows: list[dict[str, Any]]) -> Any:
    """rows: dataset, judge, strict_accuracy, ci_low, ci_high (interval may be null)."""
    alt = _alt()
    base = alt.Chart().encode(y=alt.Y("judge:N", sort=None, title=None))
    rule = base.mark_rule().encode(x=alt.X("ci_low:Q", title="strict accuracy (95% CI)", scale=alt.Scale(domain=[0, 1])), x2="ci_high:Q")
    point = base.mark_point(filled=True, size=50).encode(x="strict_accuracy:Q", tooltip=["judge:N", "strict_accuracy:Q", "ci_low:Q", "ci_high:Q"])
    return (
        alt.layer(rule, point, data=alt.Data(values=rows))
        .properties(width=_WIDTH, height=_height(rows))
        .facet(row=alt.Row("dataset:N", title=None))
        .resolve_scale(y="independent")
    )


def order_flip_chart(rows: list[dict[str, Any]]) -> Any:
    """rows: dataset, judge, order_flip_rate."""
    alt = _alt()
    return (
        alt.Chart(alt.Data(values=rows))
        .mark_bar()
        .encode(
            x=alt.X("order_flip_rate:Q", title="share of pairs whose forward and reverse verdicts differ", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("judge:N", sort=None, title=None),
            tooltip=["judge:N", "order_flip_rate:Q"],
        )
        .properties(width=_WIDTH, height=_height(rows))
        .facet(row=alt.Row("dataset:N", title=None))
        .resolve_scale(y="independent")
    )


def flip_matrix_chart(rows: list[dict[str, Any]]) -> Any:
    """rows: dataset, judge_a, judge_b, flip_rate (one dataset per call keeps axes readable)."""
    alt = _alt()
    n = len({r["judge_a"] for r in rows})
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("judge_b:N", sort=None, title=None, axis=alt.Axis(labelAngle=-40)),
        y=alt.Y("judge_a:N", sort=None, title=None),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("flip_rate:Q", title="flip rate", scale=alt.Scale(domain=[0, 1], scheme="orangered")),
        tooltip=["judge_a:N", "judge_b:N", "flip_rate:Q"],
    )
    text = base.mark_text(fontSize=9).encode(text=alt.Text("flip_rate:Q", format=".2f"))
    size = max(120, 28 * n)
    return (rect + text).properties(width=size, height=size)


def cost_chart(rows: list[dict[str, Any]]) -> Any:
    """rows: dataset, judge, cost_usd, strict_accuracy."""
    alt = _alt()
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("cost_usd:Q", title="cost (USD)"),
        y=alt.Y("strict_accuracy:Q", title="strict accuracy", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("dataset:N"),
    )
    return (base.mark_point(filled=True, size=60).encode(tooltip=["judge:N", "dataset:N", "cost_usd:Q", "strict_accuracy:Q"])
            + base.mark_text(align="left", dx=6, fontSize=9).encode(text="judge:N")).properties(width=_WIDTH, height=260)


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
    ).properties(width=_WIDTH, height=_height(rows, "backbone"))
