"""The metric registry: each metric is declared once, with its direction and its uncertainty method."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import UnknownNameError
from ._estimates import Estimate

__all__ = ["MetricSpec", "METRICS", "metric", "Direction", "Uncertainty", "Table"]

Direction = Literal["higher", "lower", "target", "none"]
"""higher/lower is better; target: closer to `target` is better; none: a count with no better side."""
Uncertainty = Literal["bootstrap", "wilson"]
Table = Literal["pairwise", "pointwise"]


@dataclass(frozen=True)
class MetricSpec:
    """One registered metric."""

    name: str
    table: Table
    direction: Direction
    uncertainty: tuple[Uncertainty, ...]
    """Intervals reported for it: bootstrap over items (pairs or ideas) and/or Wilson for a proportion of items."""
    description: str
    fn: Callable[[Any], Estimate | None]
    """view of one (dataset, judge) slice of the table → Estimate, or None when undefined (e.g. no scores)."""
    target: float | None = None

    def as_record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "table": self.table,
            "direction": self.direction,
            "target": self.target,
            "uncertainty": list(self.uncertainty),
            "description": self.description,
        }


class _MetricRegistry:
    def __init__(self) -> None:
        self._specs: dict[str, MetricSpec] = {}

    def add(self, spec: MetricSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"metric '{spec.name}' is registered twice")
        self._specs[spec.name] = spec

    def get(self, name: str) -> MetricSpec:
        try:
            return self._specs[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self._specs), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(self._specs)}"
            raise UnknownNameError(f"unknown metric '{name}'", hint=hint) from None

    def for_table(self, table: Table) -> list[MetricSpec]:
        """Metrics of one table, in registration order (the order of the output columns)."""
        return [s for s in self._specs.values() if s.table == table]

    def __iter__(self):
        return iter(self._specs.values())

    def names(self) -> list[str]:
        return list(self._specs)


METRICS = _MetricRegistry()
"""Every metric, by name."""


def metric(
    name: str,
    *,
    table: Table,
    direction: Direction,
    uncertainty: tuple[Uncertainty, ...] = (),
    target: float | None = None,
) -> Callable[[Callable[[Any], Estimate | None]], Callable[[Any], Estimate | None]]:
    """Register a metric function; its docstring's first line is its definition."""

    def deco(fn: Callable[[Any], Estimate | None]) -> Callable[[Any], Estimate | None]:
        doc = (fn.__doc__ or "").strip().splitlines()
        METRICS.add(MetricSpec(name, table, direction, tuple(uncertainty), doc[0] if doc else "", fn, target))
        return fn

    return deco
