"""report: render metrics.json and the metrics tables into report.html (self-contained) and report.md.

dvc.yaml: `report` (the last stage: running it records the run in the ledger); params.yaml: `report:`;
outputs: artifacts/report/{report.html, report.md, plots/*}, published to `report.publish_dir`.
Also writes the latest verdict-change audit (audit.md, audit.json) and the drift watch's history (drift.md,
drift.json) next to the published report, outside the manifest: they depend on the runs and drift ledgers, not on
hashed inputs (docs/design/report.md).
"""

from __future__ import annotations

from pathlib import Path

from novelty_audit.artifacts import StageInput, StageManifest, StageResult, Store, execute_stage, read_json, record_published
from novelty_audit.errors import ManifestMismatchError
from novelty_audit.novbench import read_published as read_novbench_published
from novelty_audit.params import Params, section_payload
from novelty_audit.report import (
    AUDIT_FILES,
    DRIFT_FILES,
    build_report,
    load_published_results,
    load_sources,
    publish_report,
    write_drift_history,
    write_latest_audit,
    write_report,
)

UPSTREAM: tuple[str, ...] = ("pin", "judge", "metrics")


def run(params: Params, out_dir: Path, *, inputs: dict[str, Path] | None = None, force: bool = False) -> StageManifest:
    """Build the report from the metrics, judge and pin outputs in `inputs`, publish it, then write the audit."""
    artifacts = Path(params.store.artifacts)
    dirs = {u: Path((inputs or {}).get(u, artifacts / u)) for u in UPSTREAM}
    if not (dirs["metrics"] / "metrics.json").exists():
        raise ManifestMismatchError(
            f"{dirs['metrics'] / 'metrics.json'}: not found; the report renders the metrics stage's outputs",
            hint="run the metrics stage first (novelty-audit stage metrics, or dvc repro metrics)",
        )
    files = [dirs["metrics"]] + [dirs["judge"] / n for n in ("verdicts.parquet", "judges.parquet") if (dirs["judge"] / n).exists()]
    files += [dirs["judge"] / "reviews.parquet"] if (dirs["judge"] / "reviews.parquet").exists() else []
    files += sorted(dirs["pin"].glob("*/ideas.parquet"))
    published_path, published = load_published_results(params)
    files += [published_path] if published_path is not None else []
    # A NovBench study's published figures, per dataset: the pin stage checked each file pinned beside its dataset
    # and wrote that dataset's rows (a dataset without a published pin has none).
    nb_files, nb_published = read_novbench_published(dirs["pin"])
    files += nb_files

    def compute(tmp: Path) -> StageResult:
        sources = load_sources(dirs["metrics"], dirs["judge"], dirs["pin"], published=published, novbench_published=nb_published)
        report = build_report(sources, params.report)
        outputs = write_report(report, tmp)
        return StageResult(outputs=outputs, summary={"plots": sorted(report.plots), "datasets": sorted(sources.metrics)})

    manifest = execute_stage(
        "report",
        code_root="stages.report",
        params=section_payload(params, "report"),
        inputs=[StageInput(p) for p in files],
        out_dir=out_dir,
        store=Store(params.store.root),
        compute=compute,
        force=force,
    )
    publish = Path(params.report.publish_dir)
    publish_report(manifest, out_dir, publish)
    write_latest_audit(params, publish)
    # One drift section per judge a card links to (judges with metrics) and per enabled judge.
    metrics = read_json(dirs["metrics"] / "metrics.json")
    carded = {j for per_judge in metrics.values() if isinstance(per_judge, dict) for j in per_judge}
    enabled = {n for n, spec in params.judge.judges.items() if spec.enabled}
    write_drift_history(params, publish, judges=sorted(carded | enabled))
    record_published([publish / n for n in (*AUDIT_FILES, *DRIFT_FILES)], artifacts_root=artifacts, stage="report")
    return manifest
