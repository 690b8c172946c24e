"""Judge work split into chunks an orchestrator can run anywhere, and merged back into one output per judge.

The judge stage takes a `map_judges` hook (novelty_audit.judges.JudgeMap). A flow plans chunks
here, runs each with `run_chunk` as a task (thread pool, Dask or Ray), and merges the outputs. The
merged output equals `judge.judge(pairs, points)`:

- API judges (each pair's verdict depends only on that pair's calls) are split into chunks of at most
  `chunk_size` items, of even size and as many as a multiple of the chunks that run at once (`lanes`), so
  no lane idles through a last round holding fewer chunks than lanes. A pair id shared by two datasets
  stays in one chunk, so the judge still asks its prompt once and answers both from that call, as it does
  unsplit.
- Every other judge runs as one chunk: distance judges set pointwise thresholds from all of a dataset's
  scores, and local models are costly to load per chunk.
- A chunk rebuilds its judge from params (`build_judges`), so it can run in another process and its run
  facts count only its own calls; they are summed when merging.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..judges import Budget, JudgeOutput, JudgeParams, PairItem, PointItem, build_judges
from ._drift import API_BACKENDS

__all__ = ["JudgeChunk", "balanced_size", "chunkable", "failed_chunk_facts", "failed_fanout_facts", "merge_outputs", "plan_chunks", "run_chunk"]


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


def _groups(items: Iterable[Any], key, size: int, target: int | None = None) -> list[list[Any]]:
    # Items sharing a key (the same pair in two datasets) stay together; groups fill chunks in input order,
    # each chunk up to `target` items (it may pass it by part of a group) and never above `size`.
    by_key: dict[str, list[Any]] = {}
    for it in items:
        by_key.setdefault(key(it), []).append(it)
    target = size if target is None else target
    chunks: list[list[Any]] = []
    current: list[Any] = []
    for group in by_key.values():
        if current and (len(current) + len(group) > size or len(current) >= target):
            chunks.append(current)
            current = []
        current.extend(group)
    if current:
        chunks.append(current)
    return chunks


def balanced_size(n: int, chunk_size: int, lanes: int = 1) -> int:
    """Items per chunk for `n` items: at most `chunk_size`, with the chunk count rounded up to a multiple of
    `lanes` (chunks running at once) and the items spread evenly over them. Work that fits one chunk stays one:
    each task costs a few Prefect API round trips, which a handful of items does not repay."""
    count = math.ceil(n / chunk_size) if n > 0 else 1
    if count > 1:
        count = math.ceil(count / max(1, lanes)) * max(1, lanes)
    return max(1, min(chunk_size, math.ceil(n / count)))


def plan_chunks(
    judges: Sequence[Any],
    pairs: Sequence[PairItem],
    points: Sequence[PointItem],
    chunk_size: int,
    lanes: Mapping[str, int] | None = None,
) -> list[JudgeChunk]:
    """Chunks for every judge, in judge order; every judge gets at least one (possibly empty) chunk.

    `lanes`: backend → how many of its chunks run at once (default 1); chunk sizes are balanced over them
    (`balanced_size`), never above `chunk_size`.
    """
    out: list[JudgeChunk] = []
    for judge in judges:
        if not chunkable(judge.backend):
            out.append(JudgeChunk(judge.name, judge.backend, 0, list(pairs), list(points)))
            continue
        n_lanes = (lanes or {}).get(judge.backend, 1)
        parts = [(c, []) for c in _groups(pairs, lambda p: p.pair_id, chunk_size, balanced_size(len(pairs), chunk_size, n_lanes))]
        parts += [([], c) for c in _groups(points, lambda p: p.idea.idea_id, chunk_size, balanced_size(len(points), chunk_size, n_lanes))]
        for i, (ps, pts) in enumerate(parts or [([], [])]):
            out.append(JudgeChunk(judge.name, judge.backend, i, ps, pts))
    return out


FACTS_ATTR = "novelty_audit_facts"
"""Attribute a failed chunk's exception carries: the run facts of the calls it made before failing."""


def run_chunk(
    jp: JudgeParams,
    store_root: str | Path,
    chunk: JudgeChunk,
    budget: Budget | None = None,
    *,
    shared_cache: str | None = None,
    shared_cache_options: dict[str, Any] | None = None,
) -> JudgeOutput:
    """Build the chunk's judge from params and answer its items (what one task does).

    `budget`: the stage run's budget (picklable, its state in the store), so every chunk of a run, in any
    process, draws on one cap; None makes a budget for this chunk alone.
    `shared_cache` / `shared_cache_options`: params `store.shared_cache*`, so a chunk reads and fills the team
    call cache exactly as the unsplit stage does.

    On failure the exception carries the chunk's run facts so far (`failed_chunk_facts`): calls already
    paid for are still counted. (An attribute survives pickling, so this holds on Dask and Ray workers too.)
    """
    built = build_judges(
        jp, store_root=store_root, names=[chunk.judge], progress=False, budget=budget,
        shared_cache=shared_cache, shared_cache_options=shared_cache_options,
    )  # fmt: skip
    if not built.judges:
        raise RuntimeError(f"judge {chunk.judge} could not be built in this worker: {built.skipped.get(chunk.judge, 'unknown')}")
    judge = built.judges[0]
    try:
        return judge.judge(chunk.pairs, chunk.points)
    except Exception as exc:
        facts = getattr(judge, "facts", None)
        with contextlib.suppress(Exception):  # the original error matters more than its facts
            setattr(exc, FACTS_ATTR, dict(facts()) if callable(facts) else {})
        raise
    finally:
        judge.close()


def failed_chunk_facts(exc: BaseException) -> dict[str, Any]:
    """The run facts a failed chunk's exception carries ({} when it carries none)."""
    facts = getattr(exc, FACTS_ATTR, None)
    return dict(facts) if isinstance(facts, dict) else {}


def failed_fanout_facts(
    chunks: Sequence[JudgeChunk], outputs: Sequence[JudgeOutput | None], errors: Mapping[int, BaseException]
) -> dict[str, Any]:
    """Run facts of a fan-out that failed: per judge, the facts of its finished chunks and of its failed chunks
    up to their failure, summed, plus `failed_chunks`. Nothing a chunk paid for is lost from the run log."""
    by_judge: dict[str, list[dict[str, Any]]] = {}
    failed: dict[str, int] = {}
    for i, c in enumerate(chunks):
        if i in errors:
            by_judge.setdefault(c.judge, []).append(failed_chunk_facts(errors[i]))
            failed[c.judge] = failed.get(c.judge, 0) + 1
        elif outputs[i] is not None:
            by_judge.setdefault(c.judge, []).append(dict(outputs[i].facts))
    out: dict[str, Any] = {}
    for name, facts in by_judge.items():
        summed = _sum_facts(facts)
        summed["chunks"] = len(facts)
        summed["failed_chunks"] = failed.get(name, 0)
        out[name] = summed
    return out


def _sum_facts(facts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in facts:
        for k, v in f.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(out.get(k, 0), (int, float)):
                out[k] = out.get(k, 0) + v
            elif isinstance(v, dict) and isinstance(out.get(k, {}), dict):
                # per-reason counts (errors_by_reason) add up; other entries (error_details) keep the first seen
                merged = dict(out.get(k, {}))
                for kk, vv in v.items():
                    if isinstance(vv, (int, float)) and not isinstance(vv, bool) and isinstance(merged.get(kk, 0), (int, float)):
                        merged[kk] = merged.get(kk, 0) + vv
                    else:
                        merged.setdefault(kk, vv)
                out[k] = merged
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
        merged.append(
            JudgeOutput(
                pairwise=pw, pointwise=pt, facts=_sum_facts([o.facts for o in mine]), exclusions=[e for o in mine for e in o.exclusions],
                failed_calls={k: v for o in mine for k, v in o.failed_calls.items()},  # a call in two chunks failed once
            )  # fmt: skip
        )
    return merged
