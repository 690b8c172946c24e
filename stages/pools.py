"""pools: D+ / D- selection with recorded exclusions, seeded pairing, the generated pool, result
stripping, and the rule check of the embedded benchmark.

dvc.yaml: `pools`; params.yaml: `pools:`; outputs: artifacts/pools/{evidence,pool,exclusions,percentiles,
pairs,unpaired,generated,strip_flags}.parquet, rule_check.json and summary.json, published to
`pools.rule_check_report` and `pools.summary_report`; every pair set as a dataset the judge stage can judge:
datasets/<name>/{ideas,pairs,pointwise,exclusions}.parquet and datasets.json (novelty_audit/pools/_datasets.py).
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
    publish_copy,
    read_json,
    read_table,
    write_json,
    write_table,
)
from novelty_audit.errors import BadInputError
from novelty_audit.params import Params, section_payload
from novelty_audit.pools import DATASET_TABLES, build_pools, pools_input_files, pools_pin_datasets, pools_prompt_files

UPSTREAM: tuple[str, ...] = ("pin", "signals")
TABLES = {
    "evidence.parquet": ["paper_id"],
    "pool.parquet": ["paper_id"],
    "exclusions.parquet": None,
    "percentiles.parquet": ["area"],
    "pairs.parquet": ["dataset", "pair_id"],
    "unpaired.parquet": None,
    "generated.parquet": ["idea_id"],
    "strip_flags.parquet": None,
}


def _need(path: Path, stage: str) -> Path:
    if not path.exists():
        raise BadInputError(f"pools: {path} not found", hint=f"run the {stage} stage first (dvc repro {stage})")
    return path


def run(params: Params, out_dir: Path, *, inputs: dict[str, Path] | None = None, force: bool = False) -> StageManifest:
    """Build the pools from the signals stage's papers and snippets and check the pinned benchmark."""
    pp = params.pools
    inputs = inputs or {}
    pin_dir = Path(inputs.get("pin") or Path(params.store.artifacts) / "pin")
    sig_dir = Path(inputs.get("signals") or Path(params.store.artifacts) / "signals")
    datasets = pools_pin_datasets(pp)
    sig_files = {n: _need(sig_dir / n, "signals") for n in ("papers.parquet", "reviews.parquet", "snippets.parquet", "scores.json")}
    pin_files = {(ds, t): _need(pin_dir / ds / f"{t}.parquet", "pin") for ds in datasets for t in ("ideas", "pairs")}
    stage_inputs = [
        StageInput(sig_files["papers.parquet"], key=["paper_id"]),
        StageInput(sig_files["reviews.parquet"], key=["review_id"]),
        StageInput(sig_files["snippets.parquet"], key=["snippet_id"]),
        StageInput(sig_files["scores.json"]),
        *(StageInput(p, key=["idea_id" if t == "ideas" else "pair_id"]) for (ds, t), p in sorted(pin_files.items())),
    ]
    stage_inputs += [StageInput(p) for p in pools_input_files(pp)]  # title blocklist, generated jsonl
    stage_inputs += [StageInput(p) for p in pools_prompt_files(pp)]  # a sent prompt decides the answers

    def compute(tmp: Path) -> StageResult:
        out = build_pools(
            pp,
            papers=read_table(sig_files["papers.parquet"]),
            reviews=read_table(sig_files["reviews.parquet"]),
            snippets=read_table(sig_files["snippets.parquet"]),
            signal_scores=read_json(sig_files["scores.json"]),
            benchmark_ideas={ds: read_table(pin_files[(ds, "ideas")]) for ds in datasets},
            benchmark_pairs={ds: read_table(pin_files[(ds, "pairs")]) for ds in datasets},
            cache_root=Path(params.store.root) / "cache" / "calls",
        )
        for name in TABLES:
            write_table(tmp / name, getattr(out, name.removesuffix(".parquet")))
        write_json(tmp / "rule_check.json", out.rule_check)
        write_json(tmp / "summary.json", out.summary)
        built: dict[str, list[str] | None] = {"datasets.json": None}
        for ds in out.datasets:
            for table, key in DATASET_TABLES.items():
                write_table(tmp / "datasets" / ds.name / f"{table}.parquet", getattr(ds, table))
                built[f"datasets/{ds.name}/{table}.parquet"] = key
        write_json(tmp / "datasets.json", {ds.name: ds.info for ds in out.datasets})
        excluded = {ds.name: ds.info["excluded"] for ds in out.datasets if ds.info["excluded"]}
        if excluded:  # counted on the console; each row with its reason in the dataset's exclusions.parquet
            print("pools: excluded " + ", ".join(f"{n} from {ds}" for ds, n in excluded.items()) + " (datasets/<name>/exclusions.parquet)", file=sys.stderr)
        return StageResult(outputs={**TABLES, "rule_check.json": None, "summary.json": None, **built}, summary=out.summary, facts=out.facts)

    manifest = execute_stage(
        "pools",
        code_root="stages.pools",
        params=section_payload(params, "pools"),
        inputs=stage_inputs,
        out_dir=out_dir,
        store=Store(params.store.root),
        compute=compute,
        force=force,
    )
    # Published on every run (also when reused), so reports/ always matches these outputs.
    publish_copy(Path(out_dir) / "rule_check.json", pp.rule_check_report)
    publish_copy(Path(out_dir) / "summary.json", pp.summary_report)
    return manifest
