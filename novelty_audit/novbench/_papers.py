"""Read the pinned NovBench tables of a dataset back into papers (what generators and metrics see)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ..errors import BadInputError
from ._parse import Item

__all__ = ["NOVBENCH_TABLES", "Paper", "RetrievedDoc", "is_novbench_dir", "load_papers", "pinned_novbench_datasets"]

NOVBENCH_TABLES = ("papers.parquet", "sentences.parquet", "reference_items.parquet", "retrieved.parquet")
"""The pinned tables a review run reads (its identity inputs)."""


@dataclass(frozen=True)
class RetrievedDoc:
    doc_id: str
    title: str
    abstract: str
    digest: str


@dataclass(frozen=True)
class Paper:
    dataset: str
    paper_id: str
    source_id: str
    title: str
    sentences: tuple[str, ...]
    reference: tuple[Item, ...]
    retrieved: tuple[RetrievedDoc, ...]
    novelty_digest: str
    reference_digest: str
    retrieved_digest: str


def is_novbench_dir(path: Path) -> bool:
    return (Path(path) / "papers.parquet").is_file()


def pinned_novbench_datasets(pin_dir: Path, names: list[str]) -> list[str]:
    """Of `names` (the pin.datasets with source novbench), those the pin stage wrote; a missing one is an error."""
    out = []
    for name in sorted(names):
        if not is_novbench_dir(Path(pin_dir) / name):
            raise BadInputError(
                f"{Path(pin_dir) / name / 'papers.parquet'}: missing pinned NovBench table for dataset '{name}'",
                hint="run the pin stage first (novelty-audit stage pin)",
            )
        out.append(name)
    return out


def load_papers(pin_dir: Path, dataset: str) -> list[Paper]:
    base = Path(pin_dir) / dataset
    papers = pl.read_parquet(base / "papers.parquet").sort("paper_id")
    sents: dict[str, list[str]] = {}
    for r in pl.read_parquet(base / "sentences.parquet").sort("paper_id", "position").iter_rows(named=True):
        sents.setdefault(r["paper_id"], []).append(r["text"])
    refs: dict[str, list[Item]] = {}
    for r in pl.read_parquet(base / "reference_items.parquet").sort("paper_id", "position").iter_rows(named=True):
        refs.setdefault(r["paper_id"], []).append(Item(r["label"], r["text"]))
    docs: dict[str, list[RetrievedDoc]] = {}
    for r in pl.read_parquet(base / "retrieved.parquet").sort("paper_id", "rank").iter_rows(named=True):
        docs.setdefault(r["paper_id"], []).append(RetrievedDoc(r["doc_id"], r["title"], r["abstract"], r["digest"]))
    return [
        Paper(dataset, r["paper_id"], r["source_id"], r["title"], tuple(sents.get(r["paper_id"], ())),
              tuple(refs.get(r["paper_id"], ())), tuple(docs.get(r["paper_id"], ())),
              r["novelty_digest"], r["reference_digest"], r["retrieved_digest"])
        for r in papers.iter_rows(named=True)
    ]
