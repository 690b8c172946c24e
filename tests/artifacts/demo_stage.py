"""A tiny stage for execute_stage tests: one input file, one keyed table, a call counter."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from novelty_audit.artifacts import StageInput, StageManifest, StageResult, Store, execute_stage, write_table


def run_demo(
    tmp_path: Path, calls: list, *, value: int = 1, fail: bool = False, complete: bool = True, force: bool = False
) -> StageManifest:
    """Run the `demo` stage in `tmp_path`; each compute appends `value` to `calls`. `fail` crashes midway;
    `complete=False` publishes the outputs as incomplete (one failed call)."""
    src = tmp_path / "input.txt"
    if not src.exists():
        src.write_text("hello")

    def compute(out: Path) -> StageResult:
        calls.append(value)
        write_table(out / "t.parquet", pl.DataFrame({"k": ["a", "b"], "v": [value, value + 1]}))
        if fail:
            raise RuntimeError("crash midway")
        return StageResult(
            outputs={"t.parquet": ["k"]}, summary={"rows": 2}, complete=complete,
            incomplete_reason=None if complete else "1 call failed: HTTP 500",
        )  # fmt: skip

    return execute_stage(
        "demo",
        code_root="novelty_audit.artifacts",
        params={"demo": {"value": value}},
        inputs=[StageInput(src)],
        out_dir=tmp_path / "artifacts" / "demo",
        store=Store(tmp_path / "store"),
        compute=compute,
        workdir=tmp_path,
        force=force,
    )
