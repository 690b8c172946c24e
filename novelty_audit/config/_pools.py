"""params.yaml `pools:` — the selection rules, the pairing seed, the generated pool and result stripping.

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.pools; living outside
that package keeps every stage's code digest (all import params.py) free of the pools code.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from ._signals import LLMSpec, PinnedFile
from ._base import SLUG, Frozen, check_name

__all__ = [
    "PercentileRule", "PoolRules", "GeneratedPoolParams", "StripParams", "PoolsParams", "TitleBlocklist", "CandidateSet",
    "HumanIdeas", "RepairParams", "check_set_name", "LOW_SUFFIX", "HUMAN_PAIRS", "GENERATED_PAIRS", "repair_name",
]  # fmt: skip

HUMAN_PAIRS = "constructed-human-only"
"""The dataset of D+ × D- pairs built from reviews."""
GENERATED_PAIRS = "constructed-human-plus-generated"
"""The dataset of D+ × generated pairs built from reviews and the generated pool."""
LOW_SUFFIX = "-vs-low"
"""A candidate set NAME's pairs against D- human ideas form the dataset NAME-vs-low (the floor)."""


def check_set_name(name: str) -> str:
    """A candidate set name: the shared name rule (`check_name`: no control character), and, as it also names a file
    under data/candidates/ and a DVC params key, lower-case letters, digits, `.`, `_`, `-`, starting with a letter or
    digit (no spaces, `/` or `:`)."""
    check_name(name, "pools.candidates")  # the shared rule for names: one line of visible text
    if not isinstance(name, str) or not SLUG.fullmatch(name) or len(name) > 64:
        raise ValueError(f"candidate set name {name!r} must match [a-z0-9][a-z0-9._-]* (at most 64 characters)")
    if name.endswith(LOW_SUFFIX) or re.fullmatch(r".*-seed-\d+", name) or name in (HUMAN_PAIRS, GENERATED_PAIRS):
        raise ValueError(f"candidate set name {name!r} is reserved (it would collide with a dataset the pools stage names)")
    return name


def repair_name(dataset: str, seed: int) -> str:
    """The dataset of a pinned split's D+ / D- ideas re-paired with `seed`."""
    return f"{dataset}-seed-{seed}"


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


class CandidateSet(Frozen):
    """One pinned file of ideas from an idea-generation system (`novelty-audit candidates add` writes this entry)."""

    path: str
    """The copy under data/candidates/ (JSONL or CSV with area, title, text; optional system)."""
    sha256: str
    """Pinned digest of the file's bytes; a mismatch stops the pools stage."""
    on_bad_row: Literal["error", "exclude"] = "error"
    """error: a bad row stops the stage naming line and field; exclude: it lands in the dataset's exclusions."""
    max_words: int = Field(default=400, ge=1)
    """A candidate text longer than this many words is a bad row."""


class HumanIdeas(Frozen):
    """The human D+ / D- ideas candidates are paired with."""

    source: Literal["pin", "reviews"] = "pin"
    """pin: a pinned split's POSITIVE (D+) and NEGATIVE (D-) ideas; reviews: the D+ / D- pools this stage builds."""
    dataset: str = "human-only"
    """pin source: the pinned split."""


class RepairParams(Frozen):
    """Re-pair a pinned split's D+ and D- ideas with other seeds: dataset `<dataset>-seed-<n>` per seed."""

    dataset: str = "human-only"
    """The pinned split whose POSITIVE and NEGATIVE ideas are re-paired within areas."""
    seeds: list[int] = Field(default_factory=list)
    """One dataset per seed; empty: none."""


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
    candidates: dict[str, CandidateSet] = Field(default_factory=dict)
    """Candidate sets by name: each gives the datasets NAME (against D+) and NAME-vs-low (against D-)."""
    candidate_humans: HumanIdeas = Field(default_factory=HumanIdeas)
    """The human ideas candidates meet."""
    head_to_head: list[tuple[str, str]] = Field(default_factory=list)
    """Pairs of candidate sets [A, B] paired within areas: dataset `A-vs-B` (A's win rate over B)."""
    repair: RepairParams = Field(default_factory=RepairParams)
    """Re-pairings of a pinned split with other seeds (for the spread of accuracy over pairings)."""

    @field_validator("candidates")
    @classmethod
    def _names(cls, value: dict[str, CandidateSet]) -> dict[str, CandidateSet]:
        for name in value:
            check_set_name(name)
        return value

    @model_validator(mode="after")
    def _pairs_known(self) -> "PoolsParams":
        for a, b in self.head_to_head:
            for n in (a, b):
                if n not in self.candidates:
                    raise ValueError(f"head_to_head: '{n}' is not a candidate set (pools.candidates: {', '.join(sorted(self.candidates)) or 'none'})")
            if a == b:
                raise ValueError(f"head_to_head: '{a}' against itself")
        names = self.dataset_names()
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"two pools datasets would share the name(s) {', '.join(twice)}: rename a candidate set")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        # Unused dataset options stay out of the payload: a pools stage without them keeps the identity it had.
        if isinstance(out, dict):
            for key, empty in (("candidates", {}), ("head_to_head", []), ("candidate_humans", HumanIdeas()), ("repair", RepairParams())):
                if getattr(self, key) == empty:
                    out.pop(key, None)
        return out

    def candidate_kinds(self) -> dict[str, str]:
        """Every candidate dataset by name → kind: `candidates` (against D+), `candidates-low` (against D-),
        `head-to-head` (set A against set B)."""
        out = {}
        for name in sorted(self.candidates):
            out[name] = "candidates"
            out[name + LOW_SUFFIX] = "candidates-low"
        out.update({f"{a}-vs-{b}": "head-to-head" for a, b in self.head_to_head})
        return out

    def dataset_names(self) -> list[str]:
        """Every dataset the pools stage publishes for the judge stage (artifacts/pools/datasets/<name>/)."""
        out = [HUMAN_PAIRS] + ([GENERATED_PAIRS] if self.generated.source != "none" else [])
        out += list(self.candidate_kinds())
        out += [repair_name(self.repair.dataset, s) for s in self.repair.seeds]
        return out
