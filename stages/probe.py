"""probe: derive the injection and persuasion probe datasets from pinned splits (docs/design/probe.md).

dvc.yaml: `probe`; params.yaml: `probe:`; outputs: artifacts/probe/<split>:injection/{ideas,pairs,pointwise,probes,planted}.parquet.
"""

from __future__ import annotations

from pathlib import Path

from novelty_audit.artifacts import StageInput, StageManifest, StageResult, Store, execute_stage, write_table
from novelty_audit.params import Params, section_payload
from novelty_audit.probe import FAMILIES, build_probes, load_catalogue, probe_dataset

UPSTREAM: tuple[str, ...] = ("pin",)
KEYS = {"ideas": ["idea_id"], "pairs": ["pair_id"], "pointwise": ["idea_id"], "probes": ["pair_id"], "planted": ["idea_id", "doc_id"]}


def run(params: Params, out_dir: Path, *, inputs: dict[str, Path] | None = None, force: bool = False) -> StageManifest:
    """Write one probe dataset per split in `params.probe.datasets` into `out_dir`."""
    pin_dir = Path((inputs or {}).get("pin", Path(params.store.artifacts) / "pin"))
    pc = params.probe
    cat = load_catalogue(pc.catalogue.path, pc.catalogue.sha256)  # checked before the identity, like a dataset pin
    files = [Path(pc.catalogue.path)] + [pin_dir / split / t for split in pc.datasets for t in ("ideas.parquet", "pairs.parquet")]

    def compute(tmp: Path) -> StageResult:
        outputs: dict[str, list[str] | None] = {}
        summary: dict[str, object] = {"catalogue": cat.version, "templates": {f: len(cat.by_family(f)) for f in FAMILIES}}
        for split in pc.datasets:
            tables = build_probes(cat, pin_dir, split, seed=pc.seed, pairs=pc.pairs)
            name = probe_dataset(split)
            for table, key in KEYS.items():
                write_table(tmp / name / f"{table}.parquet", getattr(tables, table))
                outputs[f"{name}/{table}.parquet"] = key
            summary[name] = {
                "clean_pairs": tables.probes["clean_pair_id"].n_unique(),
                "probes": tables.probes.height,
                **{f"probes_{f}": tables.probes.filter(tables.probes["family"] == f).height for f in FAMILIES},
            }
        return StageResult(outputs=outputs, summary=summary)

    return execute_stage(
        "probe",
        code_root="stages.probe",
        params=section_payload(params, "probe"),
        inputs=[StageInput(p) for p in files],
        out_dir=out_dir,
        store=Store(params.store.root),
        compute=compute,
        force=force,
    )
