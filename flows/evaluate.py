"""The full evaluation as a Prefect flow: every stage of dvc.yaml, in dvc.yaml's order.

Each stage task calls `novelty_audit.pipeline.run_stage` — the function behind dvc.yaml's
`novelty-audit stage NAME` — so the flow and `dvc repro` produce the same manifests. Reuse is decided
by our manifests (stage identity = digest of code, params, inputs) inside `execute_stage`; Prefect's
own task caching is off (`NO_CACHE`), so a Prefect cache can never skip a stage whose inputs moved.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from novelty_audit.artifacts import Store
from novelty_audit.orchestration import RunSummary, StageOutcome, summarize_run
from novelty_audit.params import load_params
from novelty_audit.pipeline import run_stage, stage_order

from ._fanout import judge_map

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
    params = load_params(params_path)
    store = Store(params.store.root)
    hooks = STAGE_HOOKS[name](params) if fan_out and name in STAGE_HOOKS else None
    seen = len(store.run_facts(name))
    started = time.perf_counter()
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


@flow(name="evaluate", log_prints=True)
def evaluate(
    project_dir: str = ".",
    params_path: str = "params.yaml",
    dvc_yaml: str = "dvc.yaml",
    force: bool = False,
    stages: list[str] | None = None,
    fan_out: bool = True,
) -> RunSummary:
    """Run every stage of dvc.yaml in order (or the listed ones, still in dvc.yaml order).

    `project_dir` is the project root (where params.yaml and dvc.yaml live); paths are relative to it,
    as they are for dvc. The run is recorded in the runs ledger by the pipeline's last stage, as in
    `dvc repro`. A failed stage stops the run; the summary artifact still lists it. `fan_out=False` runs
    the judge stage in the flow's process, exactly as dvc does.
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
                state = stage_task(name, params_path=params_path, dvc_yaml=dvc_yaml, force=force, fan_out=fan_out, return_state=True)
                if state.is_failed():
                    err = state.result(raise_on_failure=False)
                    outcomes.append(
                        StageOutcome(stage=name, action="failed", seconds=round(time.perf_counter() - started, 3), error=str(err))
                    )
                    logger.error("[%d/%d] %s: failed: %s", i, len(selected), name, err)
                    raise err if isinstance(err, BaseException) else RuntimeError(str(err))
                outcomes.append(state.result())
        finally:
            summary = summarize_run(outcomes)
            publish_summary(summary, "novelty-audit evaluation", key="evaluate-summary")
            t = summary.totals()
            logger.info(
                "run summary: %d computed, %d restored, %d reused, %d failed; calls %d, cache hits %d, cost $%.4f",
                t["computed"], t["restored"], t["reused"], t["failed"], t["calls"], t["cache_hits"], t["cost_usd"],
            )  # fmt: skip
    return summary
