"""Corpus records the judges could not use (no abstract, a bad date, a duplicate id, …), counted for the judge
stage's manifest summary and said in one line per corpus on stderr.

Each record is named with its reason by the corpus loader (`load_corpus`: file, record, field, reason) and listed
in the run log; the summary holds counts by reason, so a corpus with many bad records does not bloat the manifest,
and a corpus with none adds nothing to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import polars as pl

from ._base import Judge
from ._retrieval import Retriever
from .distance import Corpus

__all__ = ["corpus_exclusion_lines", "corpus_exclusions"]


def _corpora(judge: Judge) -> Iterator[tuple[str, pl.DataFrame]]:
    """(corpus path as configured, its exclusions) for each local corpus `judge` loaded: a distance judge's
    `corpus`, an LLM judge's `retriever` (related work shown in the prompt). Semantic Scholar reads no file."""
    corpus = getattr(judge, "corpus", None)
    if isinstance(corpus, Corpus):
        yield str(judge.args.corpus), corpus.exclusions  # type: ignore[attr-defined]
    retriever = getattr(judge, "retriever", None)
    if isinstance(retriever, Retriever):
        yield retriever.path.as_posix(), retriever.exclusions


def _reason(row: dict[str, Any]) -> str:
    return row["kind"] if row["field"] == "*" else f"{row['field']} {row['kind']}"


def corpus_exclusions(judges: Sequence[Judge]) -> dict[str, dict[str, Any]]:
    """{corpus path: {records, by_reason: {"abstract missing": n, …}, judges: [ids]}} over the corpora the
    judges read that have excluded records (sorted; empty when none has any)."""
    tables: dict[str, pl.DataFrame] = {}
    readers: dict[str, list[str]] = {}
    for judge in judges:
        for path, table in _corpora(judge):
            if table.height:
                tables.setdefault(path, table)  # one path, one file, one loading: the same records
                readers.setdefault(path, []).append(judge.name)
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(tables):
        by_reason: dict[str, int] = {}
        for row in tables[path].iter_rows(named=True):
            by_reason[_reason(row)] = by_reason.get(_reason(row), 0) + 1
        out[path] = {"records": tables[path].height, "by_reason": dict(sorted(by_reason.items())), "judges": sorted(readers[path])}
    return out


def corpus_exclusion_lines(summary: dict[str, dict[str, Any]]) -> Iterable[str]:
    """One line per corpus: 'judge: corpus data/x.json: 3 records left out (2 abstract missing, 1 date not an ISO date) …'."""
    for path, s in summary.items():
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(s["by_reason"].items(), key=lambda kv: (-kv[1], kv[0])))
        noun = "record" if s["records"] == 1 else "records"
        yield (f"judge: corpus {path}: {s['records']} {noun} left out ({reasons}); each is named in the run log, "
               "counted in the manifest summary (corpus_exclusions)")  # fmt: skip
