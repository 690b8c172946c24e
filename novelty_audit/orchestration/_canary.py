"""The drift watch's canary: a seeded subset of each dataset's pairs, as pin-shaped tables.

The canary tables have the pin stage's layout (`<dataset>/{ideas,pairs,pointwise,exclusions}.parquet`),
so the judge stage reads them exactly as it reads `artifacts/pin`, and the audit finds idea titles in
them. They are produced through `execute_stage`, so a canary has an identity and a manifest like any
stage output and is kept in the (drift) store.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
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
        raise ConfigError(f"dataset {dataset}: pair ids are not unique", hint="re-run the pin stage")
    rng = random.Random(f"{seed}:{dataset}")
    return sorted(rng.sample(ids, min(size, len(ids))))


def _subset(pin_dir: Path, dataset: str, canary: CanaryParams) -> dict[str, pl.DataFrame]:
    base = pin_dir / dataset
    pairs = read_table(base / "pairs.parquet")
    chosen = select_canary(pairs["pair_id"].to_list(), canary.size, canary.seed, dataset)
    pairs = pairs.filter(pl.col("pair_id").is_in(chosen))
    idea_ids = set(pairs["idea_0"].to_list()) | set(pairs["idea_1"].to_list())
    ideas = read_table(base / "ideas.parquet").filter(pl.col("idea_id").is_in(sorted(idea_ids)))
    point = read_table(base / "pointwise.parquet").filter(pl.col("idea_id").is_in(sorted(idea_ids)))
    excl = read_table(base / "exclusions.parquet")
    return {"ideas": ideas, "pairs": pairs, "pointwise": point, "exclusions": excl}


def build_canary(
    pin_dir: Path, out_dir: Path, canary: CanaryParams, *, store: Store, datasets: Sequence[str] | None = None
) -> StageManifest:
    """Write the canary subset of the pin outputs in `pin_dir` to `out_dir` (pin layout) with a manifest."""
    pin_dir = Path(pin_dir)
    available = sorted(p.name for p in pin_dir.iterdir() if p.is_dir() and (p / "pairs.parquet").exists()) if pin_dir.exists() else []
    wanted = list(canary.datasets or datasets or available)
    missing = [d for d in wanted if d not in available]
    if missing or not wanted:
        raise ConfigError(
            f"params.yaml flows.canary.datasets: {', '.join(missing) or 'none'} not found in {pin_dir}",
            hint=f"run the pin stage first; pinned datasets: {', '.join(available) or 'none'}",
        )

    def compute(tmp: Path) -> StageResult:
        outputs: dict[str, list[str] | None] = {}
        summary: dict[str, int] = {}
        for ds in wanted:
            tables = _subset(pin_dir, ds, canary)
            for name, df in tables.items():
                write_table(tmp / ds / f"{name}.parquet", df)
                outputs[f"{ds}/{name}.parquet"] = _KEYS[name]
            summary[ds] = tables["pairs"].height
        return StageResult(outputs=outputs, summary={"pairs": summary})

    inputs = [StageInput(pin_dir / ds / f"{t}.parquet", key=_KEYS[t]) for ds in wanted for t in _KEYS]
    return execute_stage(
        CANARY_STAGE,
        code_root=__name__,
        params={"canary": canary.model_dump(mode="python"), "datasets": wanted},
        inputs=inputs,
        out_dir=Path(out_dir),
        store=store,
        compute=compute,
    )
