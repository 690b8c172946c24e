"""What the audit returns: one `Change` per changed verdict, with its cause, and an `AuditResult`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CAUSES", "Cause", "Status", "Diff", "AdjudicationRecord", "Adjudication", "Change", "AuditResult"]

Cause = Literal["dataset", "config", "evidence", "harness", "provider", "spurious"]
CAUSES: tuple[str, ...] = ("dataset", "config", "evidence", "harness", "provider", "spurious")
"""In precedence order: a change is attributed to the first cause whose digest moved."""

Status = Literal["unadjudicated", "correct", "incorrect", "unclear", "not-adjudicable"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Diff(_Frozen):
    """One knob or input that differs between the two sides."""

    name: str
    """knob (config key, dotted for nested keys) or input (evidence part, `code`, `provider_model`, `pair`)."""
    before: Any = None
    after: Any = None


class AdjudicationRecord(_Frozen):
    """One row of the adjudication file."""

    dataset: str
    judge: str
    pair: str
    from_verdict: str
    to_verdict: str
    decision: Literal["correct", "incorrect", "unclear"]
    reason: str
    who: str
    when: str
    row: int
    """1-based position in the file (data rows), so a reader can find it."""

    def public(self) -> dict[str, Any]:
        return {"decision": self.decision, "reason": self.reason, "who": self.who, "when": self.when}


class Adjudication(_Frozen):
    """The decision in force for a change (the file's last row for it) and the rows it superseded."""

    current: AdjudicationRecord
    superseded: list[AdjudicationRecord] = Field(default_factory=list)
    """Earlier rows for the same change, oldest first: kept and shown, never dropped."""

    def public(self) -> dict[str, Any]:
        return {**self.current.public(), "superseded": [r.public() for r in self.superseded]}


class Change(_Frozen):
    """A verdict that differs between the two sides of an audit (or a pair present on one side only)."""

    dataset: str
    judge: str
    pair: str
    titles: tuple[str, str]
    """Titles of the pair's two ideas (published slot order)."""
    before: str | None
    """idea id | `tie` | `none`; null when the pair is absent on that side."""
    after: str | None
    cause: Cause
    knobs: list[Diff] | None = None
    """config changes: the knobs whose values differ (from judges.parquet)."""
    inputs: list[Diff] | None = None
    """every other cause: the inputs whose digests differ (evidence parts, code, provider model, pair presence)."""
    status: Status
    adjudication: Adjudication | None = None

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "judge": self.judge,
            "pair": self.pair,
            "titles": list(self.titles),
            "before": self.before,
            "after": self.after,
            "cause": self.cause,
            "status": self.status,
        }
        if self.knobs is not None:
            out["knobs"] = [d.model_dump() for d in self.knobs]
        if self.inputs is not None:
            out["inputs"] = [d.model_dump() for d in self.inputs]
        if self.cause == "evidence":
            out["adjudication"] = self.adjudication.public() if self.adjudication else None
        return out


class AuditResult(_Frozen):
    """The changes between two runs, with counts by cause."""

    from_run: str
    to_run: str
    compared: int
    """(dataset, judge, pair) keys present on both sides."""
    unchanged_with_changed_digests: int
    """Keys whose verdict held although some digest (config, evidence, code, calls, provider model) moved."""
    changes: list[Change]

    @property
    def summary(self) -> dict[str, int]:
        counts = {c: 0 for c in CAUSES}
        for ch in self.changes:
            counts[ch.cause] += 1
        return {**counts, "unchanged_with_changed_digests": self.unchanged_with_changed_digests}

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape: {from, to, summary: {cause: count}, changes: [...]}."""
        return {
            "from": self.from_run,
            "to": self.to_run,
            "summary": self.summary,
            "changes": [c.public() for c in self.changes],
        }

    def status_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for ch in self.changes:
            if ch.cause == "evidence":
                out[ch.status] = out.get(ch.status, 0) + 1
        return dict(sorted(out.items()))
