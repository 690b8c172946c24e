"""signals: parse review files, extract originality signals per review, score the extractors.

dvc.yaml: `signals`; params.yaml: `signals:`; outputs: artifacts/signals/{papers,reviews,snippets,
exclusions,llm_rejections,recovery}.parquet and scores.json, published to `signals.scores_report`.
"""

from __future__ import annotations

from pathlib import Path

from novelty_audit.artifacts import (
    StageInput,
    StageManifest,
    StageResult,
    Store,
    publish_copy,
    execute_stage,
    read_table,
    write_json,
    write_table,
)
from novelty_audit.errors import BadInputError, IncompleteStageError
from novelty_audit.judges import failure_line
from novelty_audit.params import Params, section_payload
from novelty_audit.signals import build_signals, signal_input_files

UPSTREAM: tuple[str, ...] = ("pin",)
KEYS = {
    "papers.parquet": ["paper_id"],
    "reviews.parquet": ["review_id"],
    "snippets.parquet": ["snippet_id"],
    "exclusions.parquet": None,
    "llm_rejections.parquet": None,
    "recovery.parquet": None,
}


def run(params: Params, out_dir: Path, *, inputs: dict[str, Path] | None = None, force: bool = False) -> StageManifest:
    """Extract signals from the pinned review files and score every configured extractor."""
    sp = params.signals
    pin_dir = Path((inputs or {}).get("pin") or Path(params.store.artifacts) / "pin")
    files = signal_input_files(sp)
    ideas = {}
    for ds in sp.benchmark_datasets:
        path = pin_dir / ds / "ideas.parquet"
        if not path.exists():
            raise BadInputError(f"signals: {path} not found", hint="run the pin stage first (dvc repro pin)")
        ideas[ds] = path
    stage_inputs = [StageInput(p) for group in files.values() for p in group] + [
        StageInput(p, key=["idea_id"]) for p in ideas.values()
    ]
    store = Store(params.store.root)

    def compute(tmp: Path) -> StageResult:
        out = build_signals(
            sp,
            files=files,
            benchmark={ds: read_table(p) for ds, p in ideas.items()},
            cache_root=Path(params.store.root) / "cache" / "calls",
        )
        write_table(tmp / "papers.parquet", out.papers)
        write_table(tmp / "reviews.parquet", out.reviews)
        write_table(tmp / "snippets.parquet", out.snippets)
        write_table(tmp / "exclusions.parquet", out.exclusions)
        write_table(tmp / "llm_rejections.parquet", out.rejections)
        write_table(tmp / "recovery.parquet", out.recovery)
        write_json(tmp / "scores.json", out.scores)
        summary = {
            "papers": out.papers.height,
            "reviews": out.reviews.height,
            "snippets": out.snippets.height,
            "excluded_records": out.scores["excluded_records"],
        }
        if out.failed:
            summary["llm_failed"] = sum(out.failed.values())
        return StageResult(outputs={**KEYS, "scores.json": None}, summary=summary, facts=out.facts,
                           complete=not out.failed, incomplete_reason=failure_line(out.failed))

    manifest = execute_stage(
        "signals",
        code_root="stages.signals",
        params=section_payload(params, "signals"),
        inputs=stage_inputs,
        out_dir=out_dir,
        store=store,
        compute=compute,
        force=force,
    )
    # Published on every run (also when reused), so the report always shows these outputs' scores.
    publish_copy(Path(out_dir) / "scores.json", sp.scores_report)
    if not manifest.complete:
        # Exit 3, as the judge stage: DVC does not record the stage as done, and the next run asks only the
        # failed calls (answered ones are call-cache hits). Each failed item is in llm_rejections.parquet.
        raise IncompleteStageError(
            f"signals: {manifest.incomplete_reason}; the outputs are published, marked incomplete "
            "(each failed review or sentence is in llm_rejections.parquet, reason 'call failed: …')",
            hint="run the stage again to ask only the failed calls",
        )
    return manifest
