"""judge: every enabled judge × dataset × task → verdict tables.

A dataset is a pinned split (artifacts/pin/<name>/) or a pair set the pools stage built (artifacts/pools/datasets/
<name>/: candidate sets, re-pairings, pools from reviews), read only when judge.datasets or a sweep names it.

dvc.yaml: `judge`; params.yaml: `judge:`; outputs: artifacts/judge/{verdicts,pointwise,judges}.parquet.
"""

from __future__ import annotations

import sys
from pathlib import Path

from novelty_audit.artifacts import (
    StageInput,
    StageManifest,
    StageResult,
    Store,
    execute_stage,
)
from novelty_audit.errors import IncompleteStageError
from novelty_audit.judges import Budget, JudgeMap, build_judges, dataset_dirs, failure_line, judge_run_params, judge_stage_inputs, run_judges
from novelty_audit.novbench import REVIEW_KEYS, build_review_generators, review_inputs, run_reviews, write_reviews
from novelty_audit.params import Params, section_payload

UPSTREAM: tuple[str, ...] = ("pin", "probe", "pools")
KEYS = {
    "verdicts.parquet": ["dataset", "judge", "pair_id"],
    "pointwise.parquet": ["dataset", "judge", "idea_id"],
    "judges.parquet": ["judge"],
    "reviews.parquet": REVIEW_KEYS,
}


def run(
    params: Params,
    out_dir: Path,
    *,
    inputs: dict[str, Path] | None = None,
    force: bool = False,
    map_judges: JudgeMap | None = None,
    limit: int | None = None,
) -> StageManifest:
    """Judge the pinned pairs and pointwise ideas of `params.judge.datasets` with every enabled judge.

    `map_judges` lets an orchestrator (flows/) fan the judges' work out as tasks; the outputs are the same.
    `limit` (CLI `--limit N`) overrides `judge.limit` for this run. Unlike map_judges it changes *what* is
    computed, so it enters the params payload: the run has its own identity, and its outputs say so.
    """
    pin_dir = Path((inputs or {}).get("pin", Path(params.store.artifacts) / "pin"))
    probe_dir = Path((inputs or {}).get("probe", Path(params.store.artifacts) / "probe"))
    pools_dir = Path((inputs or {}).get("pools", Path(params.store.artifacts) / "pools"))
    # --limit over judge.limit; NovBench datasets (pin source novbench) go to the review task's generators only;
    # probe datasets the probe stage has not published (a stage run by hand before `probe`; dvc.yaml always runs
    # probe first) are left out of this run, named in its params payload and summary, and announced on stderr.
    params, novbench, probe_missing = judge_run_params(params, probe_dir, limit)
    if probe_missing:
        print(f"judge: probe dataset(s) {', '.join(probe_missing)} not published in {probe_dir}; judged without them "
              "(run `novelty-audit stage probe` first)", file=sys.stderr)
    budget = Budget.for_run(params.judge.budget_usd, params.store.root)  # one cap for judges and review generators
    generators = build_review_generators(params.judge, store_root=params.store.root, budget=budget)
    review_ds = novbench if generators else []
    built = build_judges(
        params.judge, store_root=params.store.root, budget=budget,
        shared_cache=params.store.shared_cache, shared_cache_options=params.store.shared_cache_options,
    )  # fmt: skip
    dirs = dataset_dirs(params, pools_dir)  # datasets the pools stage built (artifacts/pools/datasets/<name>/)
    extra = judge_stage_inputs(params.judge, pin_dir, built, probe_dir, dirs) + review_inputs(pin_dir, review_ds, generators)

    def compute(tmp: Path) -> StageResult:
        run_ = run_judges(params.judge, pin_dir, built, tmp, map_judges=map_judges, probe_dir=probe_dir, dataset_dirs=dirs)
        reviews = run_reviews(params.judge, pin_dir, review_ds, generators)
        write_reviews(reviews, tmp, judges_table=tmp / "judges.parquet")
        summary = {**run_.summary, **({"review": reviews.summary} if generators else {}), **({"probe_missing": probe_missing} if probe_missing else {})}
        facts = {**run_.facts, **({"review": reviews.facts} if reviews.facts else {})}
        failed = run_.failed + reviews.failed
        return StageResult(
            outputs=KEYS, summary=summary, facts=facts, complete=not failed, incomplete_reason=failure_line(failed)
        )

    try:
        manifest = execute_stage(
            "judge",
            code_root="stages.judge",
            params={**section_payload(params, "judge"), "judge_skipped": built.skipped, **({"probe_missing": probe_missing} if probe_missing else {})},
            inputs=[StageInput(p) for p in extra],
            out_dir=out_dir,
            store=Store(params.store.root),
            compute=compute,
            force=force,
        )
    finally:
        for j in built.judges:
            j.close()
        for g in generators:
            g.close()
    if not manifest.complete and params.judge.on_error == "fail":
        raise IncompleteStageError(
            f"judge: {manifest.incomplete_reason}; the outputs are published, marked incomplete",
            hint="run the stage again to ask only the failed calls (judge.on_error: record exits 0 instead)",
        )
    return manifest
