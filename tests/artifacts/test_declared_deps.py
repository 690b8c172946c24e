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


def _ignored_prefix(path: str, spec) -> str | None:
    """The path itself or the first of its parent directories that `spec` (a .dvcignore) matches, else None."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if spec.match_file(prefix) or spec.match_file(prefix + "/"):
            return prefix
    return None


def test_no_dep_or_out_of_the_pipeline_lies_under_a_dvcignored_path():
    # DVC leaves .dvcignore'd files out of a directory's hash without a word: a dep under an ignored path would
    # look unchanged whatever is edited there (the .dvcignore keeps tests/, docs/ and benchmarks/ out of DVC's walk).
    import pathspec

    from novelty_audit.artifacts import declared_stages

    repo = Path(__file__).resolve().parents[2]
    spec = pathspec.PathSpec.from_lines("gitwildmatch", (repo / ".dvcignore").read_text(encoding="utf-8").splitlines())
    hidden = {
        f"{stage.name}: {p} (ignored as {prefix})"
        for stage in declared_stages(repo / "dvc.yaml").values()
        for p in (*stage.deps, *stage.outs)
        if (prefix := _ignored_prefix(p, spec)) is not None
    }
    assert not hidden, sorted(hidden)


def test_the_dvcignore_check_sees_a_dep_inside_an_ignored_directory():
    import pathspec

    spec = pathspec.PathSpec.from_lines("gitwildmatch", ["/tests/", "__pycache__/"])
    assert _ignored_prefix("tests/fixtures/a.yaml", spec) == "tests"
    assert _ignored_prefix("tests", spec) == "tests"
    assert _ignored_prefix("novelty_audit/__pycache__/x.pyc", spec) == "novelty_audit/__pycache__"
    assert _ignored_prefix("data/tests/a.yaml", spec) is None  # anchored: only the top-level tests/
    assert _ignored_prefix("novelty_audit", spec) is None
