"""The judge drift watch as a Prefect flow: re-ask API judges on a canary, audit what moved.

Steps (each a task, Prefect caching off — our manifests decide reuse):
1. `canary`: a seeded subset of each dataset's pairs (params.yaml `flows.canary`; a pinned split from
   `artifacts/pin`, a dataset the pools stage builds from `artifacts/pools/datasets`), written under the drift
   store (`<store.root>/<flows.drift_dir>/artifacts/pin`) in the layout it was read in.
2. `judge`: `stages.judge.run` — the stage dvc runs — on the canary (its pin and its pools input), with the API
   judges' call cache bypassed (`refresh`) and `force` (a refresh has the identity of the previous refresh),
   writing to the drift store's `artifacts/judge`; fresh answers land in the drift store's call cache, never the
   main one.
3. The canary + judge manifests are recorded as a new run in the drift store's runs ledger.
4. The audit classifies every verdict change against the previous drift run (spurious, provider,
   config, evidence, harness, dataset); a markdown and a table artifact publish it.
Nothing is written to `store.artifacts` or the main ledger, so `dvc status` and the main audit are unaffected.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from novelty_audit.artifacts import RunRecord, StageManifest
from novelty_audit.audit import AuditResult, audit_sides, ledger_side
from novelty_audit.errors import ConfigError
from novelty_audit.orchestration import (
    NO_API_JUDGE,
    StageOutcome,
    build_canary,
    canary_datasets,
    drift_judges,
    drift_markdown,
    drift_params,
    drift_paths,
    drift_rows,
)
from novelty_audit.params import Params
from novelty_audit.pipeline import load_checked_params, stage_out_dir

from ._fanout import judge_map


@task(name="canary", cache_policy=NO_CACHE)
def canary_task(params: Params, judges: list[str]) -> StageManifest:
    """The canary subset of the current pin (and pools) outputs, in the drift store."""
    paths = drift_paths(params)
    pin_dir = stage_out_dir(params, "pin")
    if not (pin_dir / "manifest.json").exists():
        raise ConfigError(
            f"the drift watch needs the pin stage's outputs in {pin_dir}",
            hint="run the pipeline first (dvc repro, or the evaluate flow)",
        )
    manifest = build_canary(
        pin_dir, paths.artifacts / "pin", params.flows.canary, store=paths.store, datasets=canary_datasets(params, judges),
        pools_dir=stage_out_dir(params, "pools"), pools_datasets=params.pools.dataset_names(),
    )  # fmt: skip
    from_pools = manifest.summary.get("pools_datasets") or []
    get_run_logger().info(
        "canary: %s pairs (identity %s)%s", manifest.summary.get("pairs"), manifest.identity[:16],
        f"; from the pools stage: {', '.join(from_pools)}" if from_pools else "",
    )  # fmt: skip
    return manifest


@task(name="judge", cache_policy=NO_CACHE)
def judge_task(params: Params, drift: Params) -> tuple[StageManifest, StageOutcome]:
    """Run the judge stage on the canary with the call cache bypassed; outputs go to the drift store."""
    stage = importlib.import_module("stages.judge")
    paths = drift_paths(params)
    inputs = {u: stage_out_dir(params, u) for u in getattr(stage, "UPSTREAM", ())}
    # The canary holds pinned splits in the pin layout and pools datasets in the pools layout (datasets/<name>/).
    inputs["pin"] = inputs["pools"] = paths.artifacts / "pin"
    store = paths.store
    seen = len(store.run_facts("judge"))
    started = time.perf_counter()
    manifest = stage.run(drift, paths.artifacts / "judge", inputs=inputs, force=True, map_judges=judge_map(drift))
    outcome = StageOutcome.from_facts("judge", store.run_facts("judge")[seen:], time.perf_counter() - started)
    get_run_logger().info(
        "judge (refresh): %s, %d calls, %d cache hits, $%.4f", outcome.action, outcome.calls, outcome.cache_hits, outcome.cost_usd
    )
    return manifest, outcome


@task(name="audit", cache_policy=NO_CACHE)
def audit_task(params: Params, record: RunRecord, previous: str | None) -> AuditResult | None:
    """Classify verdict changes from the previous drift check's run to this one (None on the first check).

    The previous check may have recorded the same content (nothing drifted): then every verdict is compared
    with itself and none changed, which is the answer.
    """
    if previous is None:
        return None
    store = drift_paths(params).store
    before, after = ledger_side(store, previous), ledger_side(store, record.run_id)
    # Evidence changes take their status from the project's adjudication file, as in `novelty-audit audit`.
    return audit_sides(store, before, after, adjudications=params.audit.adjudications)


@flow(name="drift-watch", log_prints=True)
def drift_watch(project_dir: str = ".", params_path: str = "params.yaml") -> dict[str, Any]:
    """Re-ask the configured API judges on the canary pairs, record a run, audit changes, publish artifacts.

    Returns {run_id, baseline (true on the first check), summary {cause: count}, changes [...], skipped}.
    With no API judge to watch (the default params) it does nothing and succeeds: run_id None and `skipped`
    saying "no enabled API judge ..." (also logged and published as the drift-summary artifact).
    """
    logger = get_run_logger()
    with contextlib.chdir(Path(project_dir)):
        params = load_checked_params(params_path)
        judges = drift_judges(params)
        if not judges:
            logger.warning("%s", NO_API_JUDGE)
            create_markdown_artifact(markdown=f"# Judge drift watch\n\n{NO_API_JUDGE}.\n", key="drift-summary", description="judge drift watch")
            return {"run_id": None, "baseline": False, "summary": {}, "changes": [], "skipped": NO_API_JUDGE}
        canary = canary_task(params, judges)
        datasets = sorted(canary.summary.get("pairs", {}))
        manifest, outcome = judge_task(params, drift_params(params, judges, datasets))
        store = drift_paths(params).store
        before = store.runs()
        record = store.record_run({"pin": canary, "judge": manifest})
        logger.info("recorded drift run %s in %s", record.run_id, drift_paths(params).root / "runs.jsonl")
        result = audit_task(params, record, before[-1].run_id if before else None)
        facts = {"calls": outcome.calls, "cost_usd": outcome.cost_usd}
        n_pairs = sum(canary.summary.get("pairs", {}).values())
        markdown = drift_markdown(result, judges=judges, canary_pairs=n_pairs, facts=facts)
        create_markdown_artifact(markdown=markdown, key="drift-summary", description="judge drift watch")
        rows = drift_rows(result) if result is not None else []
        create_table_artifact(table=rows or [{"cause": "none", "changes": 0}], key="drift-changes", description="verdict changes")
        if result is not None:
            logger.info("drift: %d of %d verdicts changed: %s", len(result.changes), result.compared, result.summary)
        return {
            "run_id": record.run_id,
            "baseline": result is None,
            "summary": result.summary if result is not None else {},
            "changes": result.to_json()["changes"] if result is not None else [],
            "skipped": None,
        }
