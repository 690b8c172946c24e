"""pin: check each benchmark file against its pinned sha256 and normalize it into canonical tables.

dvc.yaml: `pin`; params.yaml: `pin:`; outputs: artifacts/pin/<dataset>/{ideas,pairs,pointwise,exclusions}.parquet
(NovBench datasets: their tables, and published.json when a published file is pinned beside them).
"""

from __future__ import annotations

from pathlib import Path

from novelty_audit.artifacts import StageInput, StageManifest, StageResult, Store, execute_stage, write_json, write_table
from novelty_audit.datasets import check_pin, load_dataset
from novelty_audit.errors import BadInputError
from novelty_audit.novbench import TABLE_KEYS as NOVBENCH_TABLE_KEYS
from novelty_audit.novbench import PUBLISHED_FILE, check_published, normalize_novbench, published_rows
from novelty_audit.params import Params, section_payload

UPSTREAM: tuple[str, ...] = ()
KEYS = {"ideas": ["idea_id"], "pairs": ["pair_id"], "pointwise": ["idea_id"], "exclusions": None}


def run(params: Params, out_dir: Path, *, inputs: dict[str, Path] | None = None, force: bool = False) -> StageManifest:
    """Pin and normalize every dataset in `params.pin.datasets` into `out_dir`."""
    files = {name: check_pin(name, pin) for name, pin in sorted(params.pin.datasets.items())}
    published = {name: check_published(name, pin) for name, pin in sorted(params.pin.datasets.items()) if pin.published}

    def compute(tmp: Path) -> StageResult:
        outputs: dict[str, list[str] | None] = {}
        summary: dict[str, dict[str, int]] = {}
        problems: list[str] = []
        for name, pin in sorted(params.pin.datasets.items()):
            norm = load_dataset(name, pin, check=False, papers=normalize_novbench)  # every pin was checked above, before the identity
            for ex in norm.exclusions.iter_rows(named=True):
                problems.append(f"{ex['file']}: item {ex['item']}, field {ex['field']}: {ex['reason']}")
            if pin.source == "novbench":  # NovBench papers: their own tables (novelty_audit.novbench.normalize_novbench)
                for table, key in NOVBENCH_TABLE_KEYS.items():
                    write_table(tmp / f"{name}/{table}.parquet", getattr(norm, table))
                    outputs[f"{name}/{table}.parquet"] = key
                if name in published:  # the study's rows for this dataset's own data set (novelty_audit.novbench)
                    write_json(tmp / name / PUBLISHED_FILE, published_rows(published[name], name, pin.published.data))
                    outputs[f"{name}/{PUBLISHED_FILE}"] = None
                summary[name] = norm.summary()
                continue
            for table in KEYS:
                rel = f"{name}/{table}.parquet"
                write_table(tmp / rel, getattr(norm, table))
                outputs[rel] = KEYS[table]
            summary[name] = {
                "pairs": norm.pairs.height,
                "ideas": norm.ideas.height,
                "positive": norm.ideas.filter(norm.ideas["label"] == "POSITIVE").height,
                "negative": norm.ideas.filter(norm.ideas["label"] == "NEGATIVE").height,
                "gold_in_slot_0": norm.pairs.filter(norm.pairs["gold_slot"] == 0).height,
                "pointwise_items": norm.pointwise.height,
                "excluded": norm.exclusions.height,
            }
        if problems and params.pin.on_bad_item == "error":
            listing = "\n  ".join(problems[:50]) + ("" if len(problems) <= 50 else f"\n  … and {len(problems) - 50} more")
            raise BadInputError(
                f"{len(problems)} bad item(s) in the pinned datasets:\n  {listing}",
                hint="fix the file, or set pin.on_bad_item: exclude to record them in exclusions.parquet and go on",
            )
        return StageResult(outputs=outputs, summary=summary)

    return execute_stage(
        "pin",
        code_root="stages.pin",
        params=section_payload(params, "pin"),
        inputs=[StageInput(p) for p in [*files.values(), *published.values()]],
        out_dir=out_dir,
        store=Store(params.store.root),
        compute=compute,
        force=force,
    )
