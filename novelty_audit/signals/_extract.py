"""Run the extractors over papers' reviews and lay the results out as canonical tables."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import polars as pl

from ..artifacts import short_id
from ._llm import ChatClient, llm_extract
from ._records import REVIEW_SCORE_FIELDS, REVIEW_TEXT_FIELDS, Paper, RecordProblem, Review
from ._rules import RULES_VERSION, classify_sentence
from ._text import sentence_spans

__all__ = [
    "PAPER_SCHEMA",
    "REVIEW_SCHEMA",
    "SNIPPET_SCHEMA",
    "EXCLUSION_SCHEMA",
    "REJECTION_SCHEMA",
    "CALL_FAILED",
    "rule_snippets",
    "llm_snippets",
    "papers_table",
    "reviews_table",
    "exclusions_table",
    "extractor_id",
]

PAPER_SCHEMA = {
    "paper_id": pl.String,
    "title": pl.String,
    "abstract": pl.String,
    "area": pl.String,
    "area_source": pl.String,
    "decision": pl.String,
    "decision_class": pl.String,
    "avg_score": pl.Float64,
    "mean_rating": pl.Float64,
    "mean_contribution": pl.Float64,
    "n_reviews": pl.Int32,
    "source_file": pl.String,
    "source_format": pl.String,
    "source_record": pl.String,
}
REVIEW_SCHEMA = {
    "review_id": pl.String,
    "paper_id": pl.String,
    "reviewer": pl.String,
    **{f: pl.Float64 for f in REVIEW_SCORE_FIELDS},
    **{f: pl.String for f in REVIEW_TEXT_FIELDS},
    "review_digest": pl.String,
}
SNIPPET_SCHEMA = {
    "snippet_id": pl.String,
    "paper_id": pl.String,
    "review_id": pl.String,
    "extractor": pl.String,
    "polarity": pl.String,
    "text": pl.String,
    "section": pl.String,
    "start": pl.Int32,
    "end": pl.Int32,
    "rule": pl.String,
    "review_digest": pl.String,
}
EXCLUSION_SCHEMA = {"file": pl.String, "record": pl.String, "field": pl.String, "reason": pl.String, "action": pl.String}
REJECTION_SCHEMA = {
    "paper_id": pl.String,
    "review_id": pl.String,
    "extractor": pl.String,
    "polarity": pl.String,
    "snippet": pl.String,
    "reason": pl.String,
}
"""llm_rejections.parquet: what the LLM extractor could not use, each with its reason. A call that failed has
reason `call failed: <reason>` (no answer to use), one row per review or per scored sentence."""
CALL_FAILED = "call failed"


def extractor_id(name: str, *, model: str | None = None) -> str:
    """The id a snippet carries: which extractor, which version of its rules or which model."""
    return RULES_VERSION if name == "rules" else f"llm:{model}"


def _snippet(paper: Paper, review: Review, extractor: str, polarity: str, section: str, start: int, text: str, rule: str) -> dict[str, Any]:
    rid = paper.review_id(review)
    return {
        "snippet_id": short_id("sn-", rid, extractor, section, str(start), polarity),
        "paper_id": paper.paper_id,
        "review_id": rid,
        "extractor": extractor,
        "polarity": polarity,
        "text": text,
        "section": section,
        "start": start,
        "end": start + len(text),
        "rule": rule,
        "review_digest": review.text_digest(),
    }


def rule_snippets(paper: Paper, sections: Sequence[str]) -> list[dict[str, Any]]:
    """Every sentence of the scanned sections that the rules call a signal, with its offsets."""
    out = []
    ext = extractor_id("rules")
    for review in paper.reviews:
        for section in sections:
            text = getattr(review, section)
            for a, b in sentence_spans(text):
                d = classify_sentence(text[a:b])
                if d.polarity:
                    out.append(_snippet(paper, review, ext, d.polarity, section, a, text[a:b], d.rule))
    return out


def llm_snippets(paper: Paper, sections: Sequence[str], client: ChatClient) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The LLM extractor's verbatim snippets, and every rejected one with its reason."""
    ext = extractor_id("llm", model=client.spec.model)
    rows, rejected = [], []
    for review in paper.reviews:
        got = llm_extract(client, {s: getattr(review, s) for s in sections})
        if got.failed is not None:  # no answer: recorded with its reason, asked again by the next run
            rejected.append(
                {"paper_id": paper.paper_id, "review_id": paper.review_id(review), "extractor": ext,
                 "polarity": "", "snippet": "", "reason": f"{CALL_FAILED}: {got.failed}"}
            )
            continue
        for polarity, snippet, section, start in got.accepted:
            rows.append(_snippet(paper, review, ext, polarity, section, start, snippet, "llm"))
        for polarity, snippet, reason in got.rejected:
            rejected.append(
                {"paper_id": paper.paper_id, "review_id": paper.review_id(review), "extractor": ext,
                 "polarity": polarity, "snippet": snippet, "reason": reason}
            )
    return rows, rejected


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def papers_table(papers: Sequence[Paper], areas: dict[str, tuple[str | None, str | None]]) -> pl.DataFrame:
    """One row per paper; `areas` maps paper_id → (area, where it came from)."""
    rows = []
    for p in papers:
        area, src = areas.get(p.paper_id, (p.area, "file" if p.area else None))
        rows.append(
            {
                "paper_id": p.paper_id,
                "title": p.title,
                "abstract": p.abstract,
                "area": area,
                "area_source": src,
                "decision": p.decision,
                "decision_class": p.decision_class,
                "avg_score": p.avg_score,
                "mean_rating": _mean(r.rating for r in p.reviews),
                "mean_contribution": _mean(r.contribution for r in p.reviews),
                "n_reviews": len(p.reviews),
                "source_file": p.source_file,
                "source_format": p.source_format,
                "source_record": p.source_record,
            }
        )
    return pl.DataFrame(rows, schema=PAPER_SCHEMA)


def reviews_table(papers: Sequence[Paper]) -> pl.DataFrame:
    rows = []
    for p in papers:
        for r in p.reviews:
            rows.append(
                {
                    "review_id": p.review_id(r),
                    "paper_id": p.paper_id,
                    "reviewer": r.reviewer,
                    **{f: getattr(r, f) for f in REVIEW_SCORE_FIELDS},
                    **{f: getattr(r, f) for f in REVIEW_TEXT_FIELDS},
                    "review_digest": r.text_digest(),
                }
            )
    return pl.DataFrame(rows, schema=REVIEW_SCHEMA)


def exclusions_table(problems: Sequence[RecordProblem]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"file": x.file, "record": x.record, "field": x.field, "reason": x.reason, "action": x.action} for x in problems],
        schema=EXCLUSION_SCHEMA,
    )
