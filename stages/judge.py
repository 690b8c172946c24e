"""judge: every enabled judge × dataset × task → verdict tables.

dvc.yaml: `judge`; params.yaml: `judge:`; outputs: artifacts/judge/{verdicts,pointwise,judges}.parquet.
"""

from __future__ import annotations

from pathlib import Path

from novelty_audit.artifacts import (
    StageInput,
    StageManifest,
    StageResult,
    Store,
    execute_stage,
)
from novelty_audit.errors import IncompleteStageError
from novelty_audit.judges import JudgeMap, build_judges, failure_line, judge_stage_inputs, run_judges
from novelty_audit.params import Params, section_payload

UPSTREAM: tuple[str, ...] = ("pin",)
KEYS = {
    "verdicts.parquet": ["dataset", "judge", "pair_id"],
    "pointwise.parquet": ["dataset", "judge", "idea_id"],
    "judges.parquet": ["judge"],
}


def run(
    params: Params, out_dir: Path, *, inputs: dict[str, Path] | None = None, force: bool = False, map_judges: JudgeMap | None = None
) -> StageManifest:
    """Judge the pinned pairs and pointwise ideas of `params.judge.datasets` with every enabled judge.

    `map_judges` lets an orchestrator (flows/) fan the judges' work out as tasks; the outputs are the same.
    """
    pin_dir = Path((inputs or {}).get("pin", Path(params.store.artifacts) / "pin"))
    built = build_judges(params.judge, store_root=params.store.root)
    extra = judge_stage_inputs(params.judge, pin_dir, built)

    def compute(tmp: Path) -> StageResult:
        run_ = run_judges(params.judge, pin_dir, built, tmp, map_judges=map_judges)
        return StageResult(
            outputs=KEYS, summary=run_.summary, facts=run_.facts, complete=not run_.failed, incomplete_reason=failure_line(run_.failed)
        )

    try:
        manifest = execute_stage(
            "judge",
            code_root="stages.judge",
            params={**section_payload(params, "judge"), "judge_skipped": built.skipped},
            inputs=[StageInput(p) for p in extra],
            out_dir=out_dir,
            store=Store(params.store.root),
            compute=compute,
            force=force,
        )
    finally:
        for j in built.judges:
            j.close()
    if not manifest.complete and params.judge.on_error == "fail":
        raise IncompleteStageError(
            f"judge: {manifest.incomplete_reason}; the outputs are published, marked incomplete",
            hint="run the stage again to ask only the failed calls (judge.on_error: record exits 0 instead)",
        )
    return manifest
