"""Papers and reviews as both review formats end up: one shape, validated once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..artifacts import digest_obj, short_id
from ..datasets import normalize_text

__all__ = [
    "Review",
    "Paper",
    "RecordProblem",
    "REVIEW_TEXT_FIELDS",
    "REVIEW_SCORE_FIELDS",
    "classify_decision",
    "paper_id_for",
    "parse_score",
]

REVIEW_TEXT_FIELDS = ("summary", "strengths", "weaknesses", "questions")
REVIEW_SCORE_FIELDS = ("rating", "confidence", "soundness", "presentation", "contribution")
DECISION_CLASSES = ("accepted", "rejected", "withdrawn", "unknown")


@dataclass(frozen=True)
class RecordProblem:
    """A bad record: which file, which record inside it, which field, and what is wrong."""

    file: str
    record: str
    field: str
    reason: str
    action: str = "review-excluded"
    """paper-excluded | review-excluded | field-missing (the record is kept, the value is null)."""

    @property
    def drops_data(self) -> bool:
        return self.action != "field-missing"

    def line(self) -> str:
        return f"{self.file}: record {self.record}, field {self.field}: {self.reason} [{self.action}]"


@dataclass(frozen=True)
class Review:
    """One official review. Scores are floats (None when the form had no such field)."""

    reviewer: str
    rating: float | None
    confidence: float | None
    soundness: float | None
    presentation: float | None
    contribution: float | None
    summary: str
    strengths: str
    weaknesses: str
    questions: str

    def text_digest(self) -> str:
        """Digest of the review's own words (all text sections, byte-exact)."""
        return digest_obj({f: getattr(self, f) for f in REVIEW_TEXT_FIELDS})


@dataclass(frozen=True)
class Paper:
    """A submission with its decision and reviews, from either review format."""

    title: str
    abstract: str
    area: str | None
    decision: str | None
    """The decision as the source states it (e.g. 'Withdrawn (Treated as Reject)')."""
    avg_score: float | None
    """The average score the source states, if it states one (the mean of ratings is recomputed)."""
    source_file: str
    source_format: str
    source_record: str
    """Where in the file: the note id for OpenReview dumps, the file name for markdown."""
    reviews: tuple[Review, ...] = field(default_factory=tuple)

    @property
    def paper_id(self) -> str:
        return paper_id_for(self.title)

    @property
    def decision_class(self) -> str:
        return classify_decision(self.decision)

    def review_id(self, review: Review) -> str:
        return short_id("r-", self.paper_id, review.reviewer)


def paper_id_for(title: str) -> str:
    """Same derivation as the benchmark's idea_id, so a paper and its benchmark idea share an id."""
    return short_id("i-", normalize_text(title))


def classify_decision(decision: str | None) -> str:
    """accepted | rejected | withdrawn | unknown. Withdrawal wins over 'Treated as Reject'."""
    if not decision:
        return "unknown"
    d = decision.lower()
    if "withdraw" in d:
        return "withdrawn"
    if "reject" in d:
        return "rejected"
    if re.search(r"\b(accept\w*|poster|oral|spotlight|notable)\b", d):
        return "accepted"
    return "unknown"


_LEADING_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\b")


def parse_score(value: Any) -> tuple[float | None, str | None]:
    """A score from a form field: a number, or a string starting with one ('6: marginally above')."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return None, f"not a score: {value!r}"
    if isinstance(value, (int, float)):
        return float(value), None
    if isinstance(value, str):
        m = _LEADING_NUMBER.match(value)
        if m:
            return float(m.group(1)), None
        if not value.strip():
            return None, None
    return None, f"not a score: {value!r}"
