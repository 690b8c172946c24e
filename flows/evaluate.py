"""The full evaluation as a Prefect flow: every stage of dvc.yaml, in dvc.yaml's order.

Each stage task calls `novelty_audit.pipeline.run_stage` — the function behind dvc.yaml's
`novelty-audit stage NAME` — so the flow and `dvc repro` produce the same manifests. Reuse is decided
by our manifests (stage identity = digest of code, params, inputs) inside `execute_stage`; Prefect's
own task caching is off (`NO_CACHE`), so a Prefect cache can never skip a stage whose inputs moved.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from novelty_audit.artifacts import Store
from novelty_audit.errors import NoveltyAuditError
from novelty_audit.orchestration import RunSummary, StageOutcome, record_in_dvc, summarize_run
from novelty_audit.pipeline import load_checked_params, run_stage, stage_order

from ._fanout import forward_progress, judge_map

# Stage name → the hooks its `run` accepts for orchestration (how work runs, never what it yields).
STAGE_HOOKS = {"judge": lambda params: {"map_judges": judge_map(params)}}


@task(name="stage", task_run_name="{name}", cache_policy=NO_CACHE, retries=0)
def stage_task(
    name: str, params_path: str = "params.yaml", dvc_yaml: str = "dvc.yaml", force: bool = False, fan_out: bool = True
) -> StageOutcome:
    """Run one stage exactly as `novelty-audit stage NAME` does; report what the run log says it did.

    With `fan_out`, a stage with an orchestration hook (the judge stage) spreads its work over the task
    runner of params.yaml `flows.task_runner`; its outputs are the same either way.
    """
    logger = get_run_logger()
    params = load_checked_params(params_path)
    store = Store(params.store.root)
    hooks = STAGE_HOOKS[name](params) if fan_out and name in STAGE_HOOKS else None
    seen = len(store.run_facts(name))
    started = time.perf_counter()
    with forward_progress(logger):
        manifest = run_stage(name, params_path=params_path, dvc_yaml=dvc_yaml, force=force, hooks=hooks)
    outcome = StageOutcome.from_facts(name, store.run_facts(name)[seen:], time.perf_counter() - started)
    if outcome.skipped:
        logger.info("%s: skipped, identity %s unchanged (outputs reused)", name, manifest.identity[:16])
    else:
        logger.info(
            "%s: %s, identity %s, %d outputs, %.2f s, calls %d, cache hits %d, cost $%.4f",
            name, outcome.action, manifest.identity[:16], len(manifest.outputs), outcome.seconds,
            outcome.calls, outcome.cache_hits, outcome.cost_usd,
        )  # fmt: skip
    return outcome


def publish_summary(summary: RunSummary, title: str, key: str) -> None:
    """A markdown artifact (totals + stages) and a table artifact (one row per stage)."""
    create_markdown_artifact(markdown=summary.markdown(title), key=key, description=title)
    create_table_artifact(table=summary.rows(), key=f"{key}-stages", description=f"{title}: stages")


def _facts_since(params_path: str, name: str, seen: int) -> list[dict]:
    """Run-log records `name` appended since there were `seen` (facts of a failed stage, e.g. its calls)."""
    try:
        return Store(load_checked_params(params_path).store.root).run_facts(name)[seen:]
    except NoveltyAuditError:  # params that do not load: the stage's own error says so
        return []


def _facts_count(params_path: str, name: str) -> int:
    return len(_facts_since(params_path, name, 0))


def _record_in_dvc(stages: list[str], logger) -> None:
    """Record the stages this run completed in dvc.lock, as `dvc repro` would have (see orchestration/_dvc.py)."""
    done = record_in_dvc(Path.cwd(), stages)
    if done.skipped:
        logger.info("dvc.lock not updated: %s", done.skipped)
    else:
        logger.info("recorded in dvc.lock (dvc commit --force): %s", ", ".join(done.stages))


@flow(name="evaluate", log_prints=True)
def evaluate(
    project_dir: str = ".",
    params_path: str = "params.yaml",
    dvc_yaml: str = "dvc.yaml",
    force: bool = False,
    stages: list[str] | None = None,
    fan_out: bool = True,
    dvc_commit: bool = True,
) -> RunSummary:
    """Run every stage of dvc.yaml in order (or the listed ones, still in dvc.yaml order).

    `project_dir` is the project root (where params.yaml and dvc.yaml live); paths are relative to it,
    as they are for dvc. The run is recorded in the runs ledger by the pipeline's last stage, as in
    `dvc repro`. A failed stage stops the run; the summary artifact still lists it, with the calls and
    cost it made before failing. `fan_out=False` runs the judge stage in the flow's process, exactly as
    dvc does. With `dvc_commit` (default) and a DVC project, the stages that completed are recorded in
    dvc.lock (`dvc commit --force`), so afterwards `dvc status` is clean and `dvc repro` runs nothing.
    """
    logger = get_run_logger()
    outcomes: list[StageOutcome] = []
    with contextlib.chdir(Path(project_dir)):
        order = stage_order(dvc_yaml)
        selected = [s for s in order if stages is None or s in stages]
        unknown = sorted(set(stages or ()) - set(order))
        if unknown:
            raise ValueError(f"stages not declared in {dvc_yaml}: {', '.join(unknown)} (declared: {', '.join(order)})")
        try:
            for i, name in enumerate(selected, 1):
                logger.info("[%d/%d] %s: starting", i, len(selected), name)
                started = time.perf_counter()
                seen = _facts_count(params_path, name)
                state = stage_task(name, params_path=params_path, dvc_yaml=dvc_yaml, force=force, fan_out=fan_out, return_state=True)
                if state.is_failed():
                    err = state.result(raise_on_failure=False)
                    # What the stage did before failing (calls, cost) is in the run log: keep it in the summary.
                    partial = StageOutcome.from_facts(name, _facts_since(params_path, name, seen), time.perf_counter() - started)
                    outcomes.append(dataclasses.replace(partial, action="failed", error=str(err)))
                    logger.error("[%d/%d] %s: failed: %s", i, len(selected), name, err)
                    raise err if isinstance(err, BaseException) else RuntimeError(str(err))
                outcomes.append(state.result())
        finally:
            dvc_error: NoveltyAuditError | None = None
            completed = [o.stage for o in outcomes if o.action != "failed"]
            if dvc_commit and completed:
                try:
                    _record_in_dvc(completed, logger)
                except NoveltyAuditError as exc:
                    dvc_error = exc
                    logger.error("%s", exc)
            summary = summarize_run(outcomes)
            publish_summary(summary, "novelty-audit evaluation", key="evaluate-summary")
            t = summary.totals()
            logger.info(
                "run summary: %d computed, %d restored, %d reused, %d failed; calls %d, cache hits %d, cost $%.4f",
                t["computed"], t["restored"], t["reused"], t["failed"], t["calls"], t["cache_hits"], t["cost_usd"],
            )  # fmt: skip
        # A failed stage is the error the flow raises (from the try); otherwise dvc.lock must not silently disagree.
        if dvc_error is not None:
            raise dvc_error
    return summary
