"""`stage judge --dry-run`: what a judge-stage run would ask, how much of it the call cache already holds, and
what the rest may cost — without sending a request, writing an artifact or taking the stage's lock.

The calls are the real run's: the same items (`judge.limit`, tasks, probe pairs), each judge's own `plan`,
each call rendered and keyed exactly as `LLMJudge.run_calls` keys it, deduplicated by key as the call layer
deduplicates them. Cost is the budget's own reservation, the worst case of each uncached call (prompt bytes
bound its input tokens, `max_tokens` its output): an estimate from above, never a quote.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..artifacts import canonical_bytes
from ..errors import BudgetExceededError
from ..llm import Budget
from ..params import Params
from ._build import Built, build_judges
from ._llm import LLMJudge
from ._run import DatasetDirs, judge_stage_inputs, select_items

__all__ = ["DryRun", "JudgeEstimate", "JudgeRunParams", "dataset_dirs", "dry_run_judges", "dry_run_stage", "judge_run_params"]


class JudgeRunParams(NamedTuple):
    """The judge section a stage run uses, and what it left out and why."""

    params: Params
    novbench: list[str]
    """NovBench datasets: judged only by the review generators, never by the judges."""
    probe_missing: list[str]
    """Probe datasets the probe stage has not published: judged without them."""


def judge_run_params(params: Params, probe_dir: Path, limit: int | None = None) -> JudgeRunParams:
    """`params` as a judge-stage run reads them: `--limit` over `judge.limit`, NovBench datasets left to the
    review generators, unpublished probe datasets dropped. One function, so a dry run plans what a run asks."""
    jp = params.judge
    if limit is not None:
        jp = jp.model_copy(update={"limit": limit})
    novbench = sorted(n for n, p in params.pin.datasets.items() if p.source == "novbench")
    if set(jp.datasets) & set(novbench):
        jp = jp.model_copy(update={"datasets": [d for d in jp.datasets if d not in novbench]})
    probe_missing = [d for d in jp.probe_datasets if not (Path(probe_dir) / d / "pairs.parquet").is_file()]
    if probe_missing:
        jp = jp.model_copy(update={"probe_datasets": [d for d in jp.probe_datasets if d not in probe_missing]})
    return JudgeRunParams(params.model_copy(update={"judge": jp}), novbench, probe_missing)


@dataclass
class JudgeEstimate:
    """One judge's share of a run. `calls` counts distinct call keys (what the call layer would ask for)."""

    items: int
    api: bool
    calls: int = 0
    cached: int | None = 0
    """None: unknown (Semantic Scholar retrieval is not queried by a dry run, so its prompts cannot be keyed)."""
    usd_estimate: float | None = 0.0
    unknown_why: str = "Semantic Scholar retrieval: not queried"
    """Why `cached` is unknown (printed by `DryRun.lines`)."""

    @property
    def to_send(self) -> int:
        return self.calls - (self.cached or 0)

    def as_dict(self) -> dict[str, Any]:
        return {"items": self.items, "api_calls": self.api, "calls": self.calls, "cached": self.cached,
                "to_send": self.to_send, "usd_estimate": self.usd_estimate}  # fmt: skip


@dataclass
class DryRun:
    """Per judge what a run would ask; totals over distinct keys (a call two judges share is sent once)."""

    judges: dict[str, JudgeEstimate] = field(default_factory=dict)
    to_send: int = 0
    usd_estimate: float = 0.0
    budget_usd: float | None = None
    unkeyed: list[str] = field(default_factory=list)
    """Judges whose calls could not be keyed (cost unknown, not in the totals)."""
    unpriced: list[str] = field(default_factory=list)
    """API judges whose model has no price (judge.prices or args.price): their calls are counted, their cost is
    unknown (null, never 0) and not in the USD total."""

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.usd_estimate > self.budget_usd

    def as_dict(self) -> dict[str, Any]:
        """{judge: {calls, cached, to_send, usd_estimate, items, api_calls, priced}}; usd_estimate null when unknown."""
        return {name: {**e.as_dict(), **({"priced": name not in self.unpriced} if e.api else {})} for name, e in self.judges.items()}

    def lines(self) -> list[str]:
        out = []
        for name, e in self.judges.items():
            if not e.api:
                out.append(f"{name}: {e.items} items, no API calls")
            elif e.cached is None:
                out.append(f"{name}: {e.items} items, {e.calls} calls ({e.unknown_why}, so cache and cost unknown)")
            elif name in self.unpriced:
                out.append(f"{name}: {e.items} items, {e.calls} calls, {e.cached} cached, {e.to_send} to send, "
                           "cost unknown (no price for its model)")  # fmt: skip
            else:
                out.append(f"{name}: {e.items} items, {e.calls} calls, {e.cached} cached, {e.to_send} to send, "
                           f"estimated ≤ ${e.usd_estimate:.4f}")  # fmt: skip
        cap = f" of the ${self.budget_usd:.4f} budget (judge.budget_usd)" if self.budget_usd is not None else ""
        out.append(f"total: {self.to_send} distinct calls to send, estimated ≤ ${self.usd_estimate:.4f}{cap} "
                   "(worst case: prompt bytes as input tokens, max_tokens as output); nothing was sent")  # fmt: skip
        if self.unpriced:
            out.append(f"no price (cost unknown, not in the total; add it under judge.prices or the judge's args.price): "
                       f"{', '.join(self.unpriced)}")  # fmt: skip
        return out

    def check_budget(self) -> None:
        """Raise BudgetExceededError (exit 2) when the estimate exceeds the run's budget."""
        if self.over_budget:
            raise BudgetExceededError(
                f"judge dry run: the {self.to_send} calls to send may cost up to ${self.usd_estimate:.4f}, more than "
                f"judge.budget_usd ${self.budget_usd:.4f}; a run would stop at the cap",
                hint="raise judge.budget_usd, lower judge.limit or the sweep's variants, or fill the call cache first",
            )


LARGE_PLAN = 10
"""Judges from which a dry run shows its progress on stderr (a sweep's plan of hundreds of variants takes a while
to render and key; a small plan is done before a bar would show)."""


@contextmanager
def _progress(judges: list[Any], show: bool) -> Iterator[Iterable[Any]]:
    """`judges`, counted on stderr when `show` (stdout, where --json goes, stays clean): a rich progress bar on a
    terminal, else a plain line at every tenth of the plan (a log or CI shows it advancing too)."""
    if not show:
        yield judges
        return
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    what = f"dry run: keying the calls of {len(judges)} judges"
    if console.is_terminal:
        with Progress(console=console, transient=True) as bar:
            yield bar.track(judges, description=what)
        return
    yield _lines(judges, what)


def _lines(judges: list[Any], what: str) -> Iterator[Any]:
    step = max(1, len(judges) // 10)
    for i, judge in enumerate(judges, 1):
        yield judge
        if i % step == 0 or i == len(judges):
            print(f"{what}: {i}/{len(judges)} done", file=sys.stderr, flush=True)


def dry_run_judges(jp, pin_dir: Path, built: Built, probe_dir: Path | None = None, dirs: DatasetDirs | None = None) -> DryRun:
    """What `run_judges(jp, pin_dir, built, …, probe_dir=probe_dir)` would ask, per judge; nothing is sent or written.
    With more than `LARGE_PLAN` judges and `judge.progress` on, a progress bar on stderr counts the judges done."""
    judge_stage_inputs(jp, pin_dir, built, probe_dir, dirs)  # a missing pinned table fails as in a run: exit 2, naming it
    chosen = select_items(jp, pin_dir, probe_dir, dirs)
    result = DryRun(budget_usd=jp.budget_usd)
    uncached: dict[str, float] = {}
    with _progress(built.judges, jp.progress and len(built.judges) > LARGE_PLAN) as judges:
        for judge in judges:
            _estimate(jp, chosen, judge, result, uncached)
    result.to_send = len(uncached)
    result.usd_estimate = round(sum(uncached.values()), 6)
    return result


def _estimate(jp, chosen, judge, result: DryRun, uncached: dict[str, float]) -> None:
    """One judge's share of the dry run (`result.judges[name]`); its uncached keys' worst costs go into `uncached`."""
    from .agents import AgentJudge

    ps, pts = chosen.for_judge(jp, judge), chosen.points_for(jp, judge)
    agent = isinstance(judge, AgentJudge)
    est = JudgeEstimate(items=len(ps) + len(pts), api=isinstance(judge, LLMJudge) or agent)
    result.judges[judge.name] = est
    if not est.api:
        return
    calls = judge.plan(ps, pts)
    if getattr(judge, "price", None) is None:  # an unpriced model costs an unknown amount, never nothing
        result.unpriced.append(judge.name)
    if agent:  # each turn depends on the answers and searches before it: the calls are decisions, not keys
        est.calls, est.cached, est.usd_estimate = len(calls), None, None
        est.unknown_why = "agent decisions: turns depend on the answers, not keyed ahead"
        result.unkeyed.append(judge.name)
        return
    if judge.retriever is not None and hasattr(judge.args.retrieval, "source"):
        est.calls, est.cached, est.usd_estimate = len(calls), None, None
        result.unkeyed.append(judge.name)
        return
    keys: dict[str, float] = {}
    for call in calls:
        payload, key = judge._prepare(call)
        if key not in keys:
            request = judge._request(call, payload)
            keys[key] = judge.llm.worst_cost(len(canonical_bytes(request.hashed())), request.sampling.max_tokens)
    cached = {k for k in keys if judge.cache.get(k) is not None}
    est.calls, est.cached = len(keys), len(cached)
    if judge.name in result.unpriced:  # counted among the calls to send, not in the USD total
        est.usd_estimate = None
        uncached.update((k, 0.0) for k in keys if k not in cached and k not in uncached)
        return
    est.usd_estimate = round(sum(v for k, v in keys.items() if k not in cached), 6)
    uncached.update((k, v) for k, v in keys.items() if k not in cached)


def dataset_dirs(params: Params, pools_dir: Path) -> dict[str, Path]:
    """The datasets a judge-stage run reads from the pools stage (`pools.dataset_names()` that are not pinned
    splits) → their directories `<pools_dir>/datasets/<name>/`."""
    built = set(params.pools.dataset_names()) - set(params.pin.datasets)
    return {ds: Path(pools_dir) / "datasets" / ds for ds in params.judge.run_datasets() if ds in built}


def dry_run_stage(params: Params, pin_dir: Path, probe_dir: Path, limit: int | None = None, pools_dir: Path | None = None) -> DryRun:
    """The judge stage's dry run: its params as a run reads them (`judge_run_params`), its judges built with a
    budget that keeps no state file (the cap is only compared, never drawn on), then `dry_run_judges`."""
    run = judge_run_params(params, probe_dir, limit)
    if run.probe_missing:
        print(f"judge: probe dataset(s) {', '.join(run.probe_missing)} not published in {probe_dir}; left out", file=sys.stderr)
    jp = run.params.judge
    built = build_judges(jp, store_root=params.store.root, budget=Budget(jp.budget_usd), progress=False,
                         shared_cache=params.store.shared_cache, shared_cache_options=params.store.shared_cache_options)  # fmt: skip
    try:
        dirs = dataset_dirs(run.params, pools_dir or Path(params.store.artifacts) / "pools")
        return dry_run_judges(jp, pin_dir, built, probe_dir, dirs)
    finally:
        for j in built.judges:
            j.close()
