"""One `review` run of the judge stage: every enabled generator × every pinned NovBench dataset."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ..artifacts import write_table
from ..config import JudgeParams
from ..errors import ConfigError
from ._generate import REVIEW_KEYS, REVIEWS_SCHEMA, Generator, build_generators
from ._papers import NOVBENCH_TABLES, load_papers, pinned_novbench_datasets

__all__ = ["ReviewRun", "build_review_generators", "review_inputs", "run_reviews", "write_reviews"]


@dataclass
class ReviewRun:
    reviews: pl.DataFrame
    judges: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    failed: Counter[str] = field(default_factory=Counter)


def review_inputs(pin_dir: Path, datasets: list[str], generators: list[Generator]) -> list[Path]:
    """Files whose content decides the reviews: the pinned NovBench tables, import files, prompt files."""
    paths = [Path(pin_dir) / ds / t for ds in pinned_novbench_datasets(pin_dir, datasets) for t in NOVBENCH_TABLES]
    for g in generators:
        paths.extend(Path(p) for p in g.input_files())
    return sorted(set(paths))


def run_reviews(jp: JudgeParams, pin_dir: Path, datasets: list[str], generators: list[Generator]) -> ReviewRun:
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    facts: dict[str, Any] = {}
    failed: Counter[str] = Counter()
    papers = [p for ds in pinned_novbench_datasets(pin_dir, datasets) for p in load_papers(pin_dir, ds)]
    for g in generators:
        got = g.generate(papers)
        if len(got) != len(papers) or {(r["dataset"], r["paper_id"]) for r in got} != {(p.dataset, p.paper_id) for p in papers}:
            raise RuntimeError(f"generator {g.name}: {len(got)} rows for {len(papers)} papers (each paper exactly once)")
        rows.extend(got)
        failed.update(g.failed)
        if g.facts():
            facts[g.name] = g.facts()
        for r in got:
            s = summary.setdefault(r["dataset"], {}).setdefault(g.name, {"papers": 0, "invalid": 0, "items": 0})
            s["papers"] += 1
            s["invalid"] += 0 if r["valid"] else 1
            s["items"] += sum(int(x.split("=")[1]) for x in r["label_counts"].split())
    df = pl.DataFrame(rows, schema=REVIEWS_SCHEMA).sort(REVIEW_KEYS) if rows else pl.DataFrame(schema=REVIEWS_SCHEMA)
    return ReviewRun(df, [g.judges_row() for g in generators], summary, facts, failed)


def write_reviews(run: ReviewRun, out_dir: Path, *, judges_table: Path | None = None) -> Path:
    """Write reviews.parquet (always, empty when nothing was reviewed) and add the generators' rows to the
    judge stage's judges.parquet, like any judge's."""
    if judges_table is not None and run.judges:
        judges = pl.read_parquet(judges_table)
        clash = sorted(set(judges["judge"].to_list()) & {r["judge"] for r in run.judges})
        if clash:
            raise ConfigError(f"params.yaml judge.generators.{clash[0]}: the id is also a judge under judge.judges",
                              hint="give generators ids of their own: one id names one thing in every table")
        added = pl.DataFrame([{c: r.get(c) for c in judges.columns} for r in run.judges], schema=judges.schema)
        write_table(judges_table, pl.concat([judges, added]).sort("judge"))
    return write_table(Path(out_dir) / "reviews.parquet", run.reviews)


def build_review_generators(jp: JudgeParams, *, store_root: str | Path, budget: Any = None) -> list[Generator]:
    """The enabled review generators when the judge stage's tasks include `review`, else none."""
    return build_generators(jp, store_root=store_root, budget=budget) if "review" in jp.tasks else []
