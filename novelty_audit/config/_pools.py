"""params.yaml `pools:` — the selection rules, the pairing seed, the generated pool and result stripping.

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.pools; living outside
that package keeps every stage's code digest (all import params.py) free of the pools code.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from ._signals import LLMSpec, PinnedFile
from ._base import Frozen

__all__ = ["PercentileRule", "PoolRules", "GeneratedPoolParams", "StripParams", "PoolsParams", "TitleBlocklist"]


class TitleBlocklist(Frozen):
    """Titles excluded before pooling and flagged by the rule check (case-insensitive, whitespace collapsed).

    A plain list in params.yaml (`title_blocklist: [a, b]`) is read as `titles` (no file)."""

    file: PinnedFile | None = None
    """A YAML file `blocked_titles: [...]` (the Ai2 release's paper_blocklist.yaml), pinned by sha256."""
    titles: list[str] = Field(default_factory=list)
    """Extra titles of your own, added to the file's."""

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        return {"titles": value} if isinstance(value, list) else value


class PercentileRule(Frozen):
    """Per-area percentiles of the papers' mean rating (numpy linear interpolation, inclusive comparisons)."""

    top: float = Field(default=90.0, ge=0, le=100)
    """D+ papers must have a mean rating >= this percentile of their area."""
    bottom: float = Field(default=10.0, ge=0, le=100)
    """D- papers must have a mean rating <= this percentile of their area."""
    method: Literal["linear"] = "linear"
    """numpy.percentile method; the published construction used linear interpolation."""


class PoolRules(Frozen):
    """The thresholds of one pool. D+ reads them as lower bounds, D- as upper bounds."""

    decisions: list[Literal["accepted", "rejected", "withdrawn", "unknown"]]
    """Decision classes admitted to the pool."""
    rating: float
    """Mean reviewer rating bound (D+: >=, D-: <=)."""
    contribution: float
    """Mean reviewer contribution score bound (D+: >=, D-: <=)."""
    min_reviews_with_signal: int = Field(default=1, ge=0)
    """At least this many reviews carry a signal of the pool's polarity."""
    max_reviews_with_opposite: int = Field(default=0, ge=0)
    """At most this many reviews carry a signal of the opposite polarity."""
    pure_share_above: float = 0.5
    """The share of reviews that are purely of the pool's polarity must be strictly above this."""


class GeneratedPoolParams(Frozen):
    """Generated ideas: read from a file / the pin tables, or generated through an LLM (cached)."""

    source: Literal["none", "pin", "jsonl", "llm"] = "pin"
    """pin: generated ideas of a pinned benchmark split; jsonl: a pinned file of {area, title, text};
    llm: ask `llm` for `per_area` ideas per area of the D+ pool; none: no generated pool."""
    dataset: str = "human-plus-generated"
    """pin source: the dataset whose `source == generated` ideas form the pool."""
    file: PinnedFile | None = None
    """jsonl source: the file (one JSON object per line with area, title, text)."""
    llm: LLMSpec = Field(default_factory=LLMSpec)
    """llm source: the model; off unless enabled."""
    per_area: int = Field(default=1, ge=1)
    """llm source: ideas generated per area."""
    max_words: int = Field(default=200, ge=1)
    """llm source: word limit stated in the prompt and checked on the answer."""


class StripParams(Frozen):
    """Result stripping: an LLM rewrite (optional, cached) and the rule check (always on)."""

    llm: LLMSpec = Field(default_factory=LLMSpec)
    """The rewrite model; off by default, so pool texts are the abstracts as published and the check flags them."""


class PoolsParams(Frozen):
    """params.yaml `pools:`."""

    seed: int = 20260
    """Seeds the pairing and slot-order shuffles (combined with each area name); never a global seed."""
    extractor: Literal["rules", "llm"] = "rules"
    """Whose snippets decide the signal rules (must be one of signals.extractors)."""
    percentile: PercentileRule = Field(default_factory=PercentileRule)
    """Per-area rating percentiles."""
    positive: PoolRules = Field(
        default_factory=lambda: PoolRules(decisions=["accepted"], rating=6.0, contribution=3.0)
    )
    """D+ (high novelty) thresholds."""
    negative: PoolRules = Field(
        default_factory=lambda: PoolRules(decisions=["rejected", "withdrawn"], rating=3.5, contribution=2.0)
    )
    """D- (low novelty, human) thresholds."""
    drop_areas: list[str] = Field(default_factory=lambda: ["other topics in machine learning (i.e., none of the above)"])
    """Areas excluded before pooling (compared case-insensitively, whitespace collapsed)."""
    title_blocklist: TitleBlocklist = Field(default_factory=TitleBlocklist)
    """Titles excluded before pooling (same comparison): a pinned file and/or extra titles."""
    generated: GeneratedPoolParams = Field(default_factory=GeneratedPoolParams)
    """The generated pool."""
    strip: StripParams = Field(default_factory=StripParams)
    """Result stripping of pool abstracts."""
    check_datasets: list[str] = Field(default_factory=lambda: ["human-only", "human-plus-generated"])
    """pin datasets whose metadata is checked against the rules."""
    rule_check_report: str = "reports/pools_rule_check.json"
    """Where the rule check of the embedded benchmark and the strip flags are published."""
    summary_report: str = "reports/pools_summary.json"
    """Where the pool counts are published (declared as DVC metrics)."""
