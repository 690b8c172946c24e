"""The signals construction as one library call: check pins → parse → extract → score."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ..config import SignalsParams
from ..errors import BadInputError, ConfigError
from ._extract import (
    CALL_FAILED,
    REJECTION_SCHEMA,
    SNIPPET_SCHEMA,
    exclusions_table,
    extractor_id,
    llm_snippets,
    papers_table,
    reviews_table,
    rule_snippets,
)
from ._llm import ChatClient, extract_messages, llm_extract
from ._markdown import parse_markdown_reviews
from ._openreview import parse_openreview_dump
from ._records import Paper, RecordProblem
from ._rules import classify_sentence
from ._score import RECOVERY_SCHEMA, detection_scores, load_review_sentences, polarity_scores, recovery_scores

__all__ = ["SignalsOutput", "build_signals", "recorded_signals"]


@dataclass
class SignalsOutput:
    """The tables and scores of one signals run; `facts` are run facts (never hashed)."""

    papers: pl.DataFrame
    reviews: pl.DataFrame
    snippets: pl.DataFrame
    exclusions: pl.DataFrame
    rejections: pl.DataFrame
    recovery: pl.DataFrame
    scores: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict)
    failed: Counter[str] = field(default_factory=Counter)
    """Failed LLM calls by reason (each distinct call once): the outputs are then incomplete, every failed
    item listed in `rejections` with reason `call failed: <reason>`; the next run asks only those calls."""


def recorded_signals(benchmark: dict[str, pl.DataFrame], datasets: list[str]) -> dict[str, list[tuple[str, str]]]:
    """paper/idea id → the benchmark's recorded (signal text, polarity), over `datasets` without duplicates."""
    out: dict[str, list[tuple[str, str]]] = {}
    for ds in datasets:
        for row in benchmark[ds].filter(pl.col("source") == "human").iter_rows(named=True):
            items = out.setdefault(row["idea_id"], [])
            for col, pol in (("positive_signals", "positive"), ("negative_signals", "negative")):
                for s in row[col] or []:
                    if (s, pol) not in items:
                        items.append((s, pol))
    return out


def build_signals(
    sp: SignalsParams,
    *,
    files: dict[str, list[Path]],
    benchmark: dict[str, pl.DataFrame],
    cache_root: Path,
    root: Path = Path("."),
) -> SignalsOutput:
    """Parse the review files, run the configured extractors and score them."""
    missing = [d for d in sp.benchmark_datasets if d not in benchmark]
    if missing:
        raise ConfigError(f"signals.benchmark_datasets names {missing}, which the pin stage did not produce")
    problems: list[RecordProblem] = []
    papers: list[Paper] = []

    def label(p: Path) -> str:
        try:
            return p.resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            return p.as_posix()

    for path in files["markdown"]:
        paper, probs = parse_markdown_reviews(path, label=label(path))
        problems.extend(probs)
        if paper is not None:
            papers.append(paper)
    for path in files["openreview"]:
        got, probs = parse_openreview_dump(path, label=label(path))
        problems.extend(probs)
        papers.extend(got)
    seen: dict[str, Paper] = {}
    unique: list[Paper] = []
    for p in papers:
        if p.paper_id in seen:
            problems.append(RecordProblem(p.source_file, p.source_record, "title",
                                          f"same title as {seen[p.paper_id].source_file} ({p.title!r}); the later copy is excluded",
                                          "paper-excluded"))
            continue
        seen[p.paper_id] = p
        unique.append(p)
    papers = sorted(unique, key=lambda p: p.paper_id)

    dropping = [x for x in problems if x.drops_data]
    if dropping and sp.on_bad_record == "error":
        listing = "\n  ".join(x.line() for x in dropping[:50])
        raise BadInputError(
            f"{len(dropping)} bad record(s) in the review files:\n  {listing}",
            hint="fix the files, or set signals.on_bad_record: exclude to record them in exclusions.parquet and go on",
        )

    # The markdown export has no primary area: take it from the benchmark idea with the same id (title).
    areas: dict[str, tuple[str | None, str | None]] = {}
    for p in papers:
        if p.area:
            continue
        for ds in sp.benchmark_datasets:
            hit = benchmark[ds].filter(pl.col("idea_id") == p.paper_id)
            if hit.height:
                areas[p.paper_id] = (hit["area"][0], f"benchmark:{ds}")
                break
        else:
            problems.append(RecordProblem(p.source_file, p.source_record, "area",
                                          "no primary area in the file and no benchmark idea with this title", "field-missing"))

    client: ChatClient | None = None
    snippet_rows: list[dict[str, Any]] = []
    rejection_rows: list[dict[str, Any]] = []
    for name in sp.extractors:
        if name == "rules":
            for p in papers:
                snippet_rows.extend(rule_snippets(p, sp.sections))
        else:
            client = client or ChatClient(sp.llm, cache_root, "signals.llm")
            # One ask for every review: the call layer sends the uncached ones concurrently.
            client.prefetch([extract_messages({s: getattr(r, s) for s in sp.sections}) for p in papers for r in p.reviews])
            for p in papers:
                rows, rej = llm_snippets(p, sp.sections, client)
                snippet_rows.extend(rows)
                rejection_rows.extend(rej)
    snippets = pl.DataFrame(snippet_rows, schema=SNIPPET_SCHEMA).sort("snippet_id")
    papers_df = papers_table(papers, areas)

    novelty: list[str] = []
    other: list[str] = []
    if sp.review_sentences_novelty is not None and sp.review_sentences_other is not None:
        novelty, other = load_review_sentences(root / sp.review_sentences_novelty.path, root / sp.review_sentences_other.path)
    recorded = recorded_signals(benchmark, sp.benchmark_datasets)
    labelled = sorted({pair for items in recorded.values() for pair in items})

    scores: dict[str, Any] = {}
    recovery_frames = []
    sentence_failures: dict[str, dict[str, Any]] = {}
    for name in sp.extractors:
        if name == "rules":
            def classify(s: str) -> str | None:
                return classify_sentence(s).polarity
        else:
            assert client is not None
            client.prefetch([extract_messages({"review": s}) for s in [*novelty, *other, *(t for t, _ in labelled)]])

            def classify(s: str, _c: ChatClient = client, _ext: str = extractor_id(name, model=sp.llm.model)) -> str | None:
                got = llm_extract(_c, {"review": s})
                if got.failed is not None:  # scored as no signal in this (incomplete) run; listed, asked again next run
                    sentence_failures.setdefault(s, {"paper_id": None, "review_id": None, "extractor": _ext, "polarity": "",
                                                     "snippet": s, "reason": f"{CALL_FAILED}: {got.failed}"})
                    return None
                pols = {pol for pol, *_ in got.accepted}
                return None if not pols else "negative" if "negative" in pols else "positive"

        ext = extractor_id(name, model=sp.llm.model)
        entry: dict[str, Any] = {"extractor": ext}
        if novelty and other:
            entry["detection"] = detection_scores(novelty, other, classify)
        entry["polarity"] = polarity_scores(labelled, classify)
        rec, rec_rows = recovery_scores(papers_df, snippets, recorded, ext, sp.recovery)
        entry["recovery"] = rec
        entry["snippets"] = {
            "total": int(snippets.filter(pl.col("extractor") == ext).height),
            "positive": int(snippets.filter((pl.col("extractor") == ext) & (pl.col("polarity") == "positive")).height),
            "negative": int(snippets.filter((pl.col("extractor") == ext) & (pl.col("polarity") == "negative")).height),
        }
        if name == "llm":
            rej = [r for r in rejection_rows if r["extractor"] == ext and not r["reason"].startswith(CALL_FAILED)]
            entry["llm_rejected"] = {"total": len(rej), "not_verbatim": sum(r["reason"] == "not verbatim in the review" for r in rej)}
        scores[name] = entry
        recovery_frames.append(rec_rows)
    facts: dict[str, Any] = {}
    failed: Counter[str] = Counter()
    if client is not None:
        facts = {"llm_calls": client.stats.calls, "llm_cache_hits": client.stats.cache_hits,
                 "llm_input_tokens": client.stats.input_tokens, "llm_output_tokens": client.stats.output_tokens}
        failed.update(client.failures.values())
        if failed:
            facts["llm_failed"] = dict(sorted(failed.items()))
            scores["llm"]["llm_failed"] = {"total": sum(failed.values()), "reasons": dict(sorted(failed.items()))}
    rejection_rows.extend(sentence_failures[s] for s in sorted(sentence_failures))
    return SignalsOutput(
        papers=papers_df,
        reviews=reviews_table(papers).sort("review_id"),
        snippets=snippets,
        exclusions=exclusions_table(problems),
        rejections=pl.DataFrame(rejection_rows, schema=REJECTION_SCHEMA),
        recovery=pl.concat(recovery_frames) if recovery_frames else pl.DataFrame(schema=RECOVERY_SCHEMA),
        scores={
            "extractors": scores,
            "benchmark_datasets": list(sp.benchmark_datasets),
            "sections": list(sp.sections),
            "papers": papers_df.height,
            "reviews": int(papers_df["n_reviews"].sum() or 0),
            "excluded_records": sum(x.drops_data for x in problems),
        },
        facts=facts,
        failed=failed,
    )
