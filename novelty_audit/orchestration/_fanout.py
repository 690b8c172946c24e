"""Judge work split into chunks an orchestrator can run anywhere, and merged back into one output per judge.

The judge stage takes a `map_judges` hook (novelty_audit.judges.JudgeMap). A flow plans chunks
here, runs each with `run_chunk` as a task (thread pool, Dask or Ray), and merges the outputs. The
merged output equals `judge.judge(pairs, points)`:

- API judges (each pair's verdict depends only on that pair's calls) are split into chunks of at most
  `chunk_size` items. A pair id shared by two datasets stays in one chunk, so the judge still asks its
  prompt once and answers both from that call, as it does unsplit.
- Every other judge runs as one chunk: distance judges set pointwise thresholds from all of a dataset's
  scores, and local models are costly to load per chunk.
- A chunk rebuilds its judge from params (`build_judges`), so it can run in another process and its run
  facts count only its own calls; they are summed when merging.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..judges import JudgeOutput, JudgeParams, PairItem, PointItem, build_judges
from ._drift import API_BACKENDS

__all__ = ["JudgeChunk", "chunkable", "merge_outputs", "plan_chunks", "run_chunk"]


class JudgeChunk(NamedTuple):
    """One unit of judge work: a judge (by id) and the items it answers."""

    judge: str
    backend: str
    index: int
    """Position of this chunk among the judge's chunks."""
    pairs: list[PairItem]
    points: list[PointItem]


def chunkable(backend: str) -> bool:
    """Whether a backend's work may be split across tasks (see the module docstring)."""
    return backend in API_BACKENDS


def _groups(items: Iterable[Any], key, size: int) -> list[list[Any]]:
    # Items sharing a key (the same pair in two datasets) stay together; groups fill chunks in input order.
    by_key: dict[str, list[Any]] = {}
    for it in items:
        by_key.setdefault(key(it), []).append(it)
    chunks: list[list[Any]] = []
    current: list[Any] = []
    for group in by_key.values():
        if current and len(current) + len(group) > size:
            chunks.append(current)
            current = []
        current.extend(group)
    if current:
        chunks.append(current)
    return chunks


def plan_chunks(judges: Sequence[Any], pairs: Sequence[PairItem], points: Sequence[PointItem], chunk_size: int) -> list[JudgeChunk]:
    """Chunks for every judge, in judge order; every judge gets at least one (possibly empty) chunk."""
    out: list[JudgeChunk] = []
    for judge in judges:
        if not chunkable(judge.backend):
            out.append(JudgeChunk(judge.name, judge.backend, 0, list(pairs), list(points)))
            continue
        parts = [(c, []) for c in _groups(pairs, lambda p: p.pair_id, chunk_size)]
        parts += [([], c) for c in _groups(points, lambda p: p.idea.idea_id, chunk_size)]
        for i, (ps, pts) in enumerate(parts or [([], [])]):
            out.append(JudgeChunk(judge.name, judge.backend, i, ps, pts))
    return out


def run_chunk(jp: JudgeParams, store_root: str | Path, chunk: JudgeChunk) -> JudgeOutput:
    """Build the chunk's judge from params and answer its items (what one task does)."""
    built = build_judges(jp, store_root=store_root, names=[chunk.judge], progress=False)
    if not built.judges:
        raise RuntimeError(f"judge {chunk.judge} could not be built in this worker: {built.skipped.get(chunk.judge, 'unknown')}")
    judge = built.judges[0]
    try:
        return judge.judge(chunk.pairs, chunk.points)
    finally:
        judge.close()


def _sum_facts(facts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in facts:
        for k, v in f.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(out.get(k, 0), (int, float)):
                out[k] = out.get(k, 0) + v
            else:
                out.setdefault(k, v)
    if len(facts) > 1:
        out["chunks"] = len(facts)
    return out


def merge_outputs(
    judges: Sequence[Any], pairs: Sequence[PairItem], points: Sequence[PointItem], chunks: Sequence[JudgeChunk], outputs: Sequence[JudgeOutput]
) -> list[JudgeOutput]:
    """One output per judge, rows back in input order, facts summed over its chunks."""
    pair_order = {(p.dataset, p.pair_id): i for i, p in enumerate(pairs)}
    point_order = {(p.dataset, p.idea.idea_id): i for i, p in enumerate(points)}
    merged: list[JudgeOutput] = []
    for judge in judges:
        mine = [o for c, o in zip(chunks, outputs, strict=True) if c.judge == judge.name]
        pw = [r for o in mine for r in o.pairwise]
        pt = [r for o in mine for r in o.pointwise]
        pw.sort(key=lambda r: pair_order.get((r["dataset"], r["pair_id"]), len(pair_order)))
        pt.sort(key=lambda r: point_order.get((r["dataset"], r["idea_id"]), len(point_order)))
        merged.append(JudgeOutput(pairwise=pw, pointwise=pt, facts=_sum_facts([o.facts for o in mine])))
    return merged
