"""Run summaries from the store's run log: what each stage did in one orchestrated run.

The run log (`Store.run_facts`) is the only source: a stage appends one fact record per execution
(`action` computed | restored | reused, seconds, and whatever its `StageResult.facts` held, e.g. API
calls and cache hits). Nothing here is hashed; it is for people and dashboards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..markdown import md_text

__all__ = ["RunSummary", "StageOutcome", "fact_number", "summarize_run"]

# Fact keys the stages use for the same quantity; the first present wins.
_CALLS = ("calls", "api_calls", "calls_made")
_HITS = ("cache_hits", "call_cache_hits")
_COST = ("cost_usd", "cost")


def fact_number(facts: Mapping[str, Any], keys: Sequence[str]) -> float:
    """The first numeric value among `keys` in `facts`, also looking one level into nested dicts (per judge)."""
    for k in keys:
        v = facts.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    total, found = 0.0, False
    for v in facts.values():
        if isinstance(v, Mapping):
            for k in keys:
                x = v.get(k)
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    total, found = total + float(x), True
                    break
    return total if found else 0.0


@dataclass(frozen=True)
class StageOutcome:
    """One stage in one orchestrated run."""

    stage: str
    action: str
    """computed | restored | reused (identity unchanged, nothing done) | failed."""
    identity: str | None = None
    seconds: float = 0.0
    calls: int = 0
    cache_hits: int = 0
    cost_usd: float = 0.0
    error: str | None = None

    @classmethod
    def from_facts(cls, stage: str, facts: Sequence[Mapping[str, Any]], seconds: float) -> StageOutcome:
        """Summarize the run-log records one execution of `stage` appended (normally exactly one)."""
        if not facts:
            return cls(stage=stage, action="unknown", seconds=round(seconds, 3))
        last = facts[-1]
        return cls(
            stage=stage,
            action=str(last.get("action", "unknown")),
            identity=last.get("identity"),
            seconds=round(seconds, 3),
            calls=int(sum(fact_number(f, _CALLS) for f in facts)),
            cache_hits=int(sum(fact_number(f, _HITS) for f in facts)),
            cost_usd=round(sum(fact_number(f, _COST) for f in facts), 6),
        )

    @property
    def skipped(self) -> bool:
        """The stage's identity was unchanged and its outputs were already in place."""
        return self.action == "reused"


@dataclass
class RunSummary:
    """Counts over the stages of one run."""

    stages: list[StageOutcome] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for s in self.stages if s.action == action)

    @property
    def failed(self) -> list[StageOutcome]:
        return [s for s in self.stages if s.action == "failed"]

    def totals(self) -> dict[str, Any]:
        """Stage counts by action plus calls, cache hits, cost and seconds over all stages."""
        return {
            "stages": len(self.stages),
            "computed": self.count("computed"),
            "restored": self.count("restored"),
            "reused": self.count("reused"),
            "failed": len(self.failed),
            "calls": sum(s.calls for s in self.stages),
            "cache_hits": sum(s.cache_hits for s in self.stages),
            "cost_usd": round(sum(s.cost_usd for s in self.stages), 6),
            "seconds": round(sum(s.seconds for s in self.stages), 3),
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row per stage for a table artifact."""
        return [
            {
                "stage": s.stage,
                "action": s.action,
                "identity": (s.identity or "")[:16],
                "seconds": s.seconds,
                "calls": s.calls,
                "cache_hits": s.cache_hits,
                "cost_usd": s.cost_usd,
                "error": s.error or "",
            }
            for s in self.stages
        ]

    def markdown(self, title: str) -> str:
        """A short report: totals first, then a table of stages."""
        t = self.totals()
        lines = [
            f"# {md_text(title)}",
            "",
            (
                f"**{t['stages']} stages**: {t['computed']} computed, {t['restored']} restored from the store, "
                f"{t['reused']} reused (identity unchanged), {t['failed']} failed."
            ),
            f"API calls {t['calls']}, cache hits {t['cache_hits']}, cost ${t['cost_usd']:.4f}, {t['seconds']:.1f} s in stages.",
            "",
            "| stage | action | identity | seconds | calls | cache hits | cost (USD) |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        for s in self.stages:
            lines.append(
                f"| {md_text(s.stage)} | {md_text(s.action)} | `{(s.identity or '')[:12]}` | {s.seconds:.2f} | {s.calls} | {s.cache_hits} | {s.cost_usd:.4f} |"
            )
        for s in self.failed:
            lines += ["", f"**{md_text(s.stage)} failed**: {md_text(s.error)}"]
        return "\n".join(lines) + "\n"


def summarize_run(outcomes: Sequence[StageOutcome]) -> RunSummary:
    """Collect stage outcomes, in pipeline order, into a summary."""
    return RunSummary(stages=list(outcomes))
