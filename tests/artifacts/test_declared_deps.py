"""A stage run into its dvc.yaml-declared output refuses identity inputs that are not DVC deps of the stage."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from novelty_audit.artifacts import StageInput, StageResult, Store, execute_stage, uncovered_inputs, write_table
from novelty_audit.errors import ConfigError

DVC_YAML = """
stages:
  demo:
    cmd: novelty-audit stage demo
    deps:
      - data/bench
      - extra.txt
    outs:
      - artifacts/demo:
          persist: true
"""


def test_a_dep_covers_itself_and_every_file_below_it_only():
    deps = ["data/bench", "extra.txt", "novelty_audit/prompts/"]
    inputs = ["data/bench/a.yaml", "data/bench", "extra.txt", "novelty_audit/prompts/x.txt",
              "data/bench2/a.yaml", "extra.txt.bak", "/abs/votes.csv"]  # fmt: skip
    assert uncovered_inputs(inputs, deps) == ["/abs/votes.csv", "data/bench2/a.yaml", "extra.txt.bak"]


def _run(root: Path, inp: Path, out_dir: Path):
    def compute(out: Path) -> StageResult:
        write_table(out / "t.parquet", pl.DataFrame({"k": ["a"]}))
        return StageResult(outputs={"t.parquet": ["k"]})

    return execute_stage("demo", code_root="novelty_audit.artifacts", params={}, inputs=[StageInput(inp)], out_dir=out_dir,
                         store=Store(root / "store"), compute=compute, workdir=root)  # fmt: skip


def test_an_input_outside_the_declared_deps_stops_the_stage_naming_the_line_to_add(tmp_path):
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    (tmp_path / "data/bench").mkdir(parents=True)
    (tmp_path / "data/bench/a.yaml").write_text("a")
    (tmp_path / "votes.csv").write_text("v")
    _run(tmp_path, tmp_path / "data/bench/a.yaml", tmp_path / "artifacts/demo")
    with pytest.raises(ConfigError, match="stage demo: 1 input.*votes.csv") as exc:
        _run(tmp_path, tmp_path / "votes.csv", tmp_path / "artifacts/demo")
    assert "      - votes.csv" in exc.value.hint and "stages: demo: deps:" in exc.value.hint
    assert exc.value.exit_code == 2


def test_a_run_into_another_directory_is_not_a_dvc_stage_and_is_not_checked(tmp_path):
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    (tmp_path / "votes.csv").write_text("v")
    m = _run(tmp_path, tmp_path / "votes.csv", tmp_path / ".drift/artifacts/demo")  # e.g. the drift flow's own store
    assert [r.path for r in m.inputs] == ["votes.csv"]
