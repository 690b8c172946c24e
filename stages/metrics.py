"""metrics: every registered metric per (dataset, judge), judge comparisons and prompt sensitivity.

dvc.yaml: `metrics`; params.yaml: `metrics:`; outputs: artifacts/metrics/{metrics.json, metrics.parquet,
pairs.parquet, comparisons.parquet, flip_matrix.parquet, prompt_sensitivity.parquet, error_reasons.parquet,
definitions.json, sweeps.json}, and candidates.json when params.yaml names candidate sets (pools.candidates):
their win rates per judge, spread and disagreement across sweeps (novelty_audit/metrics/_candidates.py).

The headline of `metrics.json` (a few figures per dataset and judge) is published to `params.metrics.report`
(reports/metrics/<dataset>/<judge>.json, declared under `metrics:` in dvc.yaml with cache: false) so `dvc metrics
show/diff` and `dvc exp show` print one short row per judge; every reader of the full table reads the artifact. The
path comes from params because `run`'s signature is shared by every stage; the files are rewritten on reuse too, so
they always match the current outputs. `sweeps.json` (each `judge.sweeps` variant against its base, a dataset variant on the split its split is a variant
of: `pin.datasets.<split>.variant_of`, in this stage's identity; `{}` without sweeps) is published as a byte copy
beside the folder (reports/sweeps.json).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl

from novelty_audit.artifacts import (
    StageInput,
    StageManifest,
    StageResult,
    Store,
    publish_copy,
    execute_stage,
    read_json,
    write_json,
    write_table,
)
from novelty_audit.errors import ManifestMismatchError
from novelty_audit.metrics import (
    CANDIDATE_DEFINITIONS,
    PROBE_DEFINITIONS,
    candidate_metrics,
    candidate_metrics_json,
    compute_metrics,
    probe_metrics,
    publish_headline,
    sweeps_json,
)
from novelty_audit.novbench import NOVBENCH_OUTPUTS, novbench_inputs, resolve_fluency, score_reviews
from novelty_audit.config import CONTROL_BACKENDS
from novelty_audit.params import Params, section_payload
from novelty_audit.probe import PROBE_SUFFIX

UPSTREAM: tuple[str, ...] = ("judge", "probe")
KEYS: dict[str, list[str] | None] = {
    "metrics.json": None,
    "definitions.json": None,
    "sweeps.json": None,
    "metrics.parquet": ["dataset", "judge", "metric"],
    "pairs.parquet": ["dataset", "judge", "pair_id"],
    "comparisons.parquet": ["dataset", "judge_a", "judge_b"],
    "flip_matrix.parquet": ["dataset", "judge_a", "judge_b"],
    "prompt_sensitivity.parquet": ["dataset", "backbone"],
    "error_reasons.parquet": ["dataset", "judge", "table", "reason"],
}
PROBE_KEYS: dict[str, list[str] | None] = {"probe_pairs.parquet": ["dataset", "judge", "pair_id"]}
"""Written when the judge stage judged probe datasets: both verdicts of every probe pair (metrics/_probe.py)."""


def run(params: Params, out_dir: Path, *, inputs: dict[str, Path] | None = None, force: bool = False) -> StageManifest:
    """Compute the metrics of the judge stage's verdict tables into `out_dir`, then publish metrics.json."""
    judge_dir = Path((inputs or {}).get("judge", Path(params.store.artifacts) / "judge"))
    verdicts_path = judge_dir / "verdicts.parquet"
    if not verdicts_path.exists():
        raise ManifestMismatchError(
            f"{verdicts_path}: not found; the metrics stage reads the judge stage's verdicts",
            hint="run the judge stage first (novelty-audit stage judge, or dvc repro judge)",
        )
    optional = [judge_dir / n for n in ("pointwise.parquet", "judges.parquet")]
    files = [verdicts_path] + [p for p in optional if p.exists()]
    pin_dir = Path(params.store.artifacts) / "pin"
    # Probe datasets judged by the judge stage: their probe tables say which clean pair and family each probe is.
    probe_dir = Path((inputs or {}).get("probe", Path(params.store.artifacts) / "probe"))
    probe_names = sorted(d for d in pl.read_parquet(verdicts_path, columns=["dataset"])["dataset"].unique().to_list() if d.endswith(PROBE_SUFFIX))
    probe_files = [probe_dir / ds / "probes.parquet" for ds in probe_names]
    missing = [p for p in probe_files if not p.is_file()]
    if missing:
        raise ManifestMismatchError(f"{missing[0]}: not found; the judge stage judged probe dataset(s) {', '.join(probe_names)}",
                                    hint="run the probe stage (novelty-audit stage probe) with the same params as the judge stage")
    novbench_files = novbench_inputs(judge_dir, pin_dir)  # reviews.parquet + the pinned references it is scored against
    variants = params.judge.sweep_variants()  # generated judge id → sweep, base, knobs (empty without sweeps)
    # A `dataset` variant's split → the split its base is compared on, and whether item by item (pin variant_of).
    compared_with = {ds: params.pin.compared_with(ds) for ds in sorted({v.knobs["dataset"] for v in variants.values() if "dataset" in v.knobs})}
    # Candidate sets and head-to-head pairs (pools stage): win rates, never accuracy (no correct answer).
    kinds = params.pools.candidate_kinds()
    lm, lm_reason = resolve_fluency(params.store.root, params.metrics.novbench_clarity_lm) if novbench_files else (None, "no NovBench reviews")

    def compute(tmp: Path) -> StageResult:
        def maybe(name: str) -> pl.DataFrame | None:
            p = judge_dir / name
            return pl.read_parquet(p) if p.exists() else None

        verdicts = pl.read_parquet(verdicts_path)
        clean = verdicts.filter(~pl.col("dataset").is_in(probe_names) & ~pl.col("dataset").is_in(list(kinds)))
        tables = compute_metrics(clean, maybe("pointwise.parquet"), maybe("judges.parquet"), params.metrics)
        # The probe datasets get their own figures (attack success per family), never accuracy or comparisons.
        probes = pl.concat([pl.read_parquet(p) for p in probe_files]) if probe_files else None
        probe = probe_metrics(verdicts, probes, confidence=params.metrics.confidence) if probes is not None else None
        if probe is not None:
            tables = replace(tables, metrics=pl.concat([tables.metrics, probe.metrics]), definitions=[*tables.definitions, *PROBE_DEFINITIONS])
        # NovBench generators (the review task) under their own dataset names (novelty_audit/novbench).
        nb = score_reviews(judge_dir, pin_dir, params.metrics, params.store.root, fluency=(lm, lm_reason)) if novbench_files else None
        nb_metrics = nb.metrics if nb else {}
        cands = _candidates(verdicts, kinds, params, variants, maybe("judges.parquet"))
        write_json(tmp / "metrics.json", {**tables.as_json(), **nb_metrics, **candidate_metrics_json(cands)})
        if kinds:
            write_json(tmp / "candidates.json", cands)
        if nb is not None:  # only a judge stage with a reviews table has NovBench outputs
            write_json(tmp / "novbench.json", nb.details)
            write_table(tmp / "novbench_papers.parquet", nb.papers)
        write_json(tmp / "definitions.json", [*tables.definitions, *(CANDIDATE_DEFINITIONS if cands else [])])
        write_json(tmp / "sweeps.json", sweeps_json(clean, variants, params.metrics, pointwise=maybe("pointwise.parquet"), compared_with=compared_with) if variants else {})
        for name, df in (
            ("metrics", tables.metrics),
            ("pairs", tables.pairs),
            ("comparisons", tables.comparisons),
            ("flip_matrix", tables.flip_matrix),
            ("prompt_sensitivity", tables.prompt_sensitivity),
            ("error_reasons", tables.error_reasons),
        ):
            write_table(tmp / f"{name}.parquet", df.sort(KEYS[f"{name}.parquet"]))
        summary = {
            ds: {
                "judges": tables.metrics.filter(pl.col("dataset") == ds)["judge"].n_unique(),
                "comparisons": tables.comparisons.filter(pl.col("dataset") == ds).height,
                "prompt_groups": tables.prompt_sensitivity.filter(pl.col("dataset") == ds).height,
            }
            for ds in sorted(tables.metrics["dataset"].unique().to_list())
        }
        summary.update({ds: {"generators": len(gens)} for ds, gens in nb_metrics.items()})
        if probe is not None:
            write_table(tmp / "probe_pairs.parquet", probe.pairs.sort(PROBE_KEYS["probe_pairs.parquet"]))
        extra = {**(NOVBENCH_OUTPUTS if novbench_files else {}), **(PROBE_KEYS if probe is not None else {}), **({"candidates.json": None} if kinds else {})}
        return StageResult(outputs={**KEYS, **extra}, summary=summary)

    manifest = execute_stage(
        "metrics",
        code_root="stages.metrics",
        params={**section_payload(params, "metrics"), **({"novbench_clarity_lm": lm.name if lm else lm_reason} if novbench_files else {}),
                **({"sweeps": {vid: v.model_dump(mode="json") for vid, v in sorted(variants.items())}} if variants else {}),
                **({"sweep_compared_with": {ds: list(c) for ds, c in compared_with.items()}} if compared_with else {}),
                **({"candidate_datasets": kinds} if kinds else {})},
        inputs=[StageInput(p, key=k) for p, k in zip(files, _keys(files))] + [StageInput(p, key=_NOVBENCH_KEYS.get(p.name)) for p in novbench_files]
        + [StageInput(p, key=["pair_id"]) for p in probe_files],
        out_dir=out_dir,
        store=Store(params.store.root),
        compute=compute,
        force=force,
    )
    publish_headline(read_json(Path(out_dir) / "metrics.json"), params.metrics.report, artifacts_root=Path(out_dir).parent)
    publish_copy(Path(out_dir) / "sweeps.json", Path(params.metrics.report).with_name("sweeps.json"))
    return manifest


def _candidates(verdicts: pl.DataFrame, kinds: dict[str, str], params: Params, variants: dict, judges: pl.DataFrame | None) -> dict:
    """Candidate-set figures per dataset (novelty_audit/metrics/_candidates.py); sweeps: base plus variants."""
    if not kinds:
        return {}
    sweeps: dict[str, list[str]] = {}
    for vid, v in sorted(variants.items()):
        sweeps.setdefault(v.sweep, [v.base]).append(vid)
    controls = set() if judges is None else {r["judge"] for r in judges.iter_rows(named=True) if r["backend"] in CONTROL_BACKENDS}
    return candidate_metrics(verdicts, kinds, confidence=params.metrics.confidence, sweeps=sweeps, controls=controls)


_NOVBENCH_KEYS = {
    "reviews.parquet": ["dataset", "judge", "paper_id"],
    "papers.parquet": ["paper_id"],
    "sentences.parquet": ["sentence_id"],
    "reference_items.parquet": ["item_id"],
    "retrieved.parquet": ["paper_id", "rank"],
}


def _keys(files: list[Path]) -> list[list[str] | None]:
    by_name = {
        "verdicts.parquet": ["dataset", "judge", "pair_id"],
        "pointwise.parquet": ["dataset", "judge", "idea_id"],
        "judges.parquet": ["judge"],
    }
    return [by_name.get(p.name) for p in files]
