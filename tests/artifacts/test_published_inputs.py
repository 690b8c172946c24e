"""A stage checks every input another stage published against that stage's manifest before reading it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml
from demo_stage import run_demo

from novelty_audit.artifacts import StageInput, StageResult, Store, execute_stage, write_table
from novelty_audit.errors import ManifestMismatchError


def run_down(tmp_path: Path, calls: list, *, key: list[str] | None = ["k"]):
    """A `down` stage reading the demo stage's table (as judge reads pin's)."""

    def compute(out: Path) -> StageResult:
        calls.append(pl.read_parquet(tmp_path / "artifacts/demo/t.parquet")["v"].sum())
        (out / "sum.json").write_bytes(orjson.dumps(calls[-1]))
        return StageResult(outputs={"sum.json": None})

    return execute_stage(
        "down",
        code_root="novelty_audit.artifacts",
        params={},
        inputs=[StageInput(tmp_path / "artifacts/demo/t.parquet", key=key)],
        out_dir=tmp_path / "artifacts/down",
        store=Store(tmp_path / "store"),
        compute=compute,
        workdir=tmp_path,
    )


def test_an_upstream_output_changed_after_publication_stops_the_stage_before_it_reads_it(tmp_path):
    run_demo(tmp_path, [])
    table = tmp_path / "artifacts/demo/t.parquet"
    write_table(table, pl.DataFrame({"k": ["a", "b"], "v": [1, 99]}))  # a valid table, not the published one
    calls: list = []
    with pytest.raises(ManifestMismatchError) as exc:
        run_down(tmp_path, calls)
    assert calls == []
    assert "stage down: artifacts/demo/t.parquet: changed after stage demo published it" in exc.value.message
    assert exc.value.exit_code == 2 and "novelty-audit stage demo" in exc.value.hint and "dvc repro demo" in exc.value.hint
    run_demo(tmp_path, [])  # the fix the hint names: the demo stage restores its published table
    run_down(tmp_path, calls)
    assert calls == [3]


def test_an_upstream_manifest_edited_after_publication_stops_the_stage(tmp_path):
    run_demo(tmp_path, [])
    mpath = tmp_path / "artifacts/demo/manifest.json"
    m = orjson.loads(mpath.read_bytes())
    m["summary"]["rows"] = 3
    mpath.write_bytes(orjson.dumps(m))
    calls: list = []
    with pytest.raises(ManifestMismatchError, match="differs from the manifest the store recorded for its identity"):
        run_down(tmp_path, calls)
    assert calls == []


def test_a_file_the_upstream_manifest_does_not_record_is_refused(tmp_path):
    run_demo(tmp_path, [])
    shutil.copy(tmp_path / "artifacts/demo/t.parquet", tmp_path / "artifacts/demo/extra.parquet")
    with pytest.raises(ManifestMismatchError, match="extra.parquet: not an output of stage demo"):
        execute_stage(
            "down", code_root="novelty_audit.artifacts", params={}, inputs=[StageInput(tmp_path / "artifacts/demo/extra.parquet")],
            out_dir=tmp_path / "artifacts/down", store=Store(tmp_path / "store"), compute=lambda out: StageResult(outputs={}),
            workdir=tmp_path,
        )  # fmt: skip


def test_an_input_record_is_the_same_whether_taken_from_the_upstream_manifest_or_read_from_the_file(tmp_path):
    run_demo(tmp_path, [])
    for key in (["k"], None):
        from_manifest = run_down(tmp_path, [], key=key).inputs
        shutil.rmtree(tmp_path / "artifacts/down")
        saved = (tmp_path / "artifacts/demo/manifest.json").read_bytes()
        (tmp_path / "artifacts/demo/manifest.json").unlink()  # no publisher: the table is read and hashed
        from_file = run_down(tmp_path, [], key=key).inputs
        (tmp_path / "artifacts/demo/manifest.json").write_bytes(saved)
        shutil.rmtree(tmp_path / "artifacts/down")
        assert from_manifest == from_file


def test_a_manifest_json_of_another_tool_does_not_make_a_stage_directory(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.json").write_text('{"files": ["x.txt"]}')
    (data / "x.txt").write_text("x")
    m = execute_stage(
        "down", code_root="novelty_audit.artifacts", params={}, inputs=[StageInput(data / "x.txt")],
        out_dir=tmp_path / "artifacts/down", store=Store(tmp_path / "store"), compute=lambda out: StageResult(outputs={}),
        workdir=tmp_path,
    )  # fmt: skip
    assert [r.path for r in m.inputs] == ["data/x.txt"]


# The CLI path: a flipped gold idea in a pin artifact, then `stage judge` and `stage metrics`.


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.slow
def test_judge_and_metrics_refuse_a_pin_artifact_changed_after_pin_published_it(project):
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "judges": {"always-first": {"backend": "always-first"}}}
    raw["metrics"]["bootstrap_resamples"] = 0
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    for name in ("pin", "judge", "metrics"):
        res = cli("stage", name, cwd=project)
        assert res.returncode == 0, res.stderr
    metrics = (project / "artifacts/metrics/metrics.json").read_bytes()

    pairs_path = project / "artifacts/pin/human-only/pairs.parquet"
    pairs = pl.read_parquet(pairs_path)
    first = pairs.row(0, named=True)
    other = first["idea_1"] if first["gold_idea_id"] == first["idea_0"] else first["idea_0"]
    flipped = pl.when(pl.col("pair_id") == first["pair_id"]).then(pl.lit(other)).otherwise(pl.col("gold_idea_id"))
    write_table(pairs_path, pairs.with_columns(flipped.alias("gold_idea_id")))

    for name in ("judge", "metrics"):
        res = cli("stage", name, cwd=project)
        assert res.returncode == 2, (name, res.stdout, res.stderr)
        assert f"stage {name}: artifacts/pin/human-only/pairs.parquet: changed after stage pin published it" in res.stderr
        assert "novelty-audit stage pin" in res.stderr and "dvc repro pin" in res.stderr
        assert "Traceback" not in res.stderr
    assert (project / "artifacts/metrics/metrics.json").read_bytes() == metrics

    assert cli("stage", "pin", cwd=project).returncode == 0  # restores the published table from the store
    assert pl.read_parquet(pairs_path).equals(pairs)
    for name in ("judge", "metrics"):
        res = cli("stage", name, cwd=project)
        assert res.returncode == 0, res.stderr
    assert (project / "artifacts/metrics/metrics.json").read_bytes() == metrics


def test_a_table_under_another_stages_declared_output_without_a_manifest_is_read_with_a_warning(tmp_path, caplog):
    dvc = {"stages": {"demo": {"cmd": "x", "outs": ["artifacts/demo"]},
                      "down": {"cmd": "y", "deps": ["artifacts/demo"], "outs": ["artifacts/down"]}}}  # fmt: skip
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(dvc))
    write_table(tmp_path / "artifacts/demo/t.parquet", pl.DataFrame({"k": ["a"], "v": [5]}))  # made by hand
    calls: list = []
    with caplog.at_level("WARNING", logger="novelty_audit.artifacts"):
        run_down(tmp_path, calls)
    assert calls == [5]
    assert "stage down: 1 input(s) under stage demo's outputs have no manifest" in caplog.text
    assert "artifacts/demo/t.parquet" in caplog.text
