"""The drift watch's canary: a seeded subset of each dataset's pairs, as pin-shaped tables.

A pinned split's canary has the pin stage's layout (`<dataset>/{ideas,pairs,pointwise,exclusions}.parquet`);
a dataset the pools stage builds (candidate sets, re-pairings, pools from reviews: `pools.dataset_names()`) is
drawn from `artifacts/pools/datasets/<dataset>/` and its canary keeps the pools stage's layout
(`datasets/<dataset>/...`). Given the canary directory as both its pin and its pools input, the judge stage
reads every canary exactly as it reads `artifacts/pin` and `artifacts/pools`, and the audit finds idea titles
in them. They are produced through `execute_stage`, so a canary has an identity (every table it read is an
input) and a manifest like any stage output and is kept in the (drift) store.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ..artifacts import (
    StageInput,
    StageManifest,
    StageResult,
    Store,
    execute_stage,
    read_table,
    write_table,
)
from ..errors import ConfigError

if TYPE_CHECKING:  # only novelty_audit.params may import the section module (it defines Frozen first)
    from ..config import CanaryParams

__all__ = ["CANARY_STAGE", "build_canary", "select_canary"]

CANARY_STAGE = "canary"
_KEYS: dict[str, list[str] | None] = {"ideas": ["idea_id"], "pairs": ["pair_id"], "pointwise": ["idea_id"], "exclusions": None}


def select_canary(pair_ids: Sequence[str], size: int, seed: int, dataset: str) -> list[str]:
    """`size` pair ids drawn without replacement, the same for the same ids, size, seed and dataset.

    Ids are sorted first so the draw does not depend on row order; the generator is seeded with
    (seed, dataset) so two datasets do not share a draw pattern.
    """
    ids = sorted(set(pair_ids))
    if len(ids) != len(pair_ids):
        raise ConfigError(f"dataset {dataset}: pair ids are not unique", hint="re-run the stage that built it (pin or pools)")
    rng = random.Random(f"{seed}:{dataset}")
    return sorted(rng.sample(ids, min(size, len(ids))))


def _subset(base: Path, dataset: str, canary: CanaryParams) -> dict[str, pl.DataFrame]:
    pairs = read_table(base / "pairs.parquet")
    chosen = select_canary(pairs["pair_id"].to_list(), canary.size, canary.seed, dataset)
    pairs = pairs.filter(pl.col("pair_id").is_in(chosen))
    idea_ids = set(pairs["idea_0"].to_list()) | set(pairs["idea_1"].to_list())
    ideas = read_table(base / "ideas.parquet").filter(pl.col("idea_id").is_in(sorted(idea_ids)))
    point = read_table(base / "pointwise.parquet").filter(pl.col("idea_id").is_in(sorted(idea_ids)))
    excl = read_table(base / "exclusions.parquet")
    return {"ideas": ideas, "pairs": pairs, "pointwise": point, "exclusions": excl}


def _layout(dataset: str, pools_datasets: Collection[str]) -> str:
    """Where a dataset's tables sit, relative to the pin stage's output (`<dataset>`) or the pools stage's
    (`datasets/<dataset>`, for a dataset the pools stage builds); the canary mirrors it."""
    return f"datasets/{dataset}" if dataset in pools_datasets else dataset


def _sources(
    pin_dir: Path, pools_dir: Path | None, wanted: Sequence[str], pools_datasets: Collection[str]
) -> dict[str, Path]:
    """Each wanted dataset's directory; a dataset that is not there stops the canary, naming where it was looked for."""
    roots = {ds: pools_dir if ds in pools_datasets else pin_dir for ds in wanted}
    sources = {ds: Path(root) / _layout(ds, pools_datasets) for ds, root in roots.items() if root is not None}
    missing = [ds for ds in wanted if ds not in sources or not (sources[ds] / "pairs.parquet").exists()]
    if missing or not wanted:
        pinned = sorted(p.name for p in pin_dir.iterdir() if p.is_dir() and (p / "pairs.parquet").exists()) if pin_dir.exists() else []
        where = ", ".join(f"{ds} (looked in {sources.get(ds, 'no pools directory given')})" for ds in missing) or "none"
        raise ConfigError(
            f"params.yaml flows.canary.datasets (default: the watched judges' datasets): {where} not found",
            hint=(
                "run the pin stage first (the pools stage for a dataset it builds); "
                f"pinned datasets: {', '.join(pinned) or 'none'}; pools datasets: {', '.join(pools_datasets) or 'none'}"
            ),
        )
    return sources


def build_canary(
    pin_dir: Path,
    out_dir: Path,
    canary: CanaryParams,
    *,
    store: Store,
    datasets: Sequence[str] | None = None,
    pools_dir: Path | None = None,
    pools_datasets: Collection[str] = (),
) -> StageManifest:
    """Write the canary subset of each dataset to `out_dir` with a manifest.

    A pinned split is read from `pin_dir/<name>/`; a dataset in `pools_datasets` (the names the pools stage
    builds, `params.pools.dataset_names()`) from `pools_dir/datasets/<name>/`, and its canary is written to
    `out_dir/datasets/<name>/`. Every table read is an input of the canary's identity. Datasets: `canary.datasets`,
    else `datasets`, else every pinned split in `pin_dir`.
    """
    pin_dir = Path(pin_dir)
    available = sorted(p.name for p in pin_dir.iterdir() if p.is_dir() and (p / "pairs.parquet").exists()) if pin_dir.exists() else []
    wanted = list(canary.datasets or datasets or available)
    sources = _sources(pin_dir, pools_dir, wanted, pools_datasets)
    from_pools = [ds for ds in wanted if ds in pools_datasets]

    def compute(tmp: Path) -> StageResult:
        outputs: dict[str, list[str] | None] = {}
        summary: dict[str, int] = {}
        for ds in wanted:
            tables = _subset(sources[ds], ds, canary)
            for name, df in tables.items():
                rel = f"{_layout(ds, pools_datasets)}/{name}.parquet"
                write_table(tmp / rel, df)
                outputs[rel] = _KEYS[name]
            summary[ds] = tables["pairs"].height
        return StageResult(outputs=outputs, summary={"pairs": summary, "pools_datasets": from_pools})

    inputs = [StageInput(sources[ds] / f"{t}.parquet", key=_KEYS[t]) for ds in wanted for t in _KEYS]
    return execute_stage(
        CANARY_STAGE,
        code_root=__name__,
        # Which stage a dataset came from decides where the judge reads its canary: part of the identity.
        params={"canary": canary.model_dump(mode="python"), "datasets": wanted, "pools_datasets": from_pools},
        inputs=inputs,
        out_dir=Path(out_dir),
        store=store,
        compute=compute,
    )
