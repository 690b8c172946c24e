"""`dvc repro` from a fresh copy: runs every stage, a second repro runs none, status is clean,
each stage's dvc.yaml deps cover every module its code digest hashes and every file in its identity;
a failing repro leaves the last good outputs in place; failed calls make the repro fail until completed.

The copies are the small project of tests/tiny_project.py (the shipped code, dvc.yaml, judges and data files, each
benchmark file cut to its first pairs and re-pinned): what DVC and the stages do does not depend on the sizes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import polars as pl
import pytest
import yaml
from project_copy import REPO, init_git_dvc
from tiny_project import make_tiny_project

from novelty_audit.artifacts import code_digest, declared_stages, load_manifest, uncovered_inputs


def _sh(*cmd: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # The copy's own code runs (`cwd` is the copy's root): the code DVC hashes as deps is the code the stages run,
    # whichever checkout the package happens to be installed from.
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(cwd), **(env or {})}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800)


@pytest.fixture(scope="module")
def repro(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess, subprocess.CompletedProcess]:
    root = make_tiny_project(tmp_path_factory.mktemp("clone") / "project")
    init_git_dvc(root, _sh)
    first = _sh("dvc", "repro", cwd=root)
    assert first.returncode == 0, first.stdout + first.stderr
    second = _sh("dvc", "repro", cwd=root)
    return root, first, second


def test_a_second_repro_runs_no_stage_and_status_is_clean(repro):
    root, _, second = repro
    assert second.returncode == 0
    assert "Running stage" not in second.stdout, second.stdout
    status = _sh("dvc", "status", cwd=root)
    assert status.returncode == 0 and "up to date" in status.stdout.lower(), status.stdout


def test_every_declared_stage_wrote_a_manifest_and_verify_passes(repro):
    root, _, _ = repro
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    for name in stages:
        assert load_manifest(root / "artifacts" / name).stage == name
    res = _sh("novelty-audit", "verify", cwd=root)
    assert res.returncode == 0, res.stderr


def test_the_last_stage_recorded_the_run_in_the_ledger(repro):
    root, _, _ = repro
    import orjson

    runs = orjson.loads(_sh("novelty-audit", "runs", "--json", cwd=root).stdout)
    assert len(runs) == 1 and runs[0]["git_revision"]
    assert set(runs[0]["stages"]) == set(yaml.safe_load((root / "dvc.yaml").read_text())["stages"])


def test_dvc_metrics_show_reads_one_short_headline_row_per_dataset_and_judge(repro):
    """reports/metrics/ is declared for `dvc metrics`: one file per (dataset, judge), so `dvc metrics show` prints
    one row each and every line fits a terminal; `dvc metrics diff` against a changed run too."""
    root, _, _ = repro
    shown = _sh("dvc", "metrics", "show", "--json", cwd=root)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)[""]["data"]
    first = data["reports/metrics/human-only/always-first.json"]["data"]
    assert first["tie_rate"] == 1.0 and first["first_position_rate"] == 1.0 and first["n"] > 0
    assert "reports/metrics/human-only:injection/always-first.json" in data  # the probe's attack success rate
    table = _sh("dvc", "metrics", "show", cwd=root)
    assert table.returncode == 0 and "distance-yin-minilm" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 200, table.stdout


def test_dvc_metrics_diff_lines_fit_a_terminal(repro, tmp_path: Path):
    root, _, _ = repro
    _sh("git", "add", "-A", cwd=root)
    _sh("git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "first run", cwd=root)
    row = root / "reports/metrics/human-only/distance-yin-minilm.json"
    saved = row.read_bytes()
    try:
        row.write_text(json.dumps({**json.loads(saved), "strict_accuracy": 0.1234}))  # as a changed run would
        diff = _sh("dvc", "metrics", "diff", cwd=root)
        assert diff.returncode == 0, diff.stderr
        assert "strict_accuracy" in diff.stdout and "0.1234" in diff.stdout
        assert max(len(line) for line in diff.stdout.splitlines()) <= 200, diff.stdout
    finally:
        row.write_bytes(saved)


def test_dvc_deps_cover_every_module_in_each_stage_code_digest():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, spec in stages.items():
        deps = [d for d in spec.get("deps", [])]
        for module in code_digest(f"stages.{name}").modules:
            rel = module.replace(".", "/")
            candidates = {f"{rel}.py", f"{rel}/__init__.py"}
            covered = any(c == d or c.startswith(d.rstrip("/") + "/") for c in candidates for d in deps)
            assert covered, f"dvc.yaml stage {name}: module {module} is hashed in its code digest but not a dep"


def test_every_identity_input_of_every_stage_is_a_dvc_dep_of_that_stage(repro):
    """The default params (every judge and section as shipped, sizes cut), every stage: what a stage hashed into its
    identity, DVC watches."""
    root, _, _ = repro
    declared = declared_stages(root / "dvc.yaml")
    for name, spec in declared.items():
        m = load_manifest(root / "artifacts" / name)
        assert m.inputs, f"stage {name} records no inputs"
        assert uncovered_inputs([r.path for r in m.inputs], spec.deps) == [], f"stage {name}"


# -- pin + probe + judge only, control judges: cheap enough for failure cases ------------------------------------------------

CONTROLS = {"always-first": {"backend": "always-first"}, "random": {"backend": "random"}}


def _write_params(root: Path, judges: dict, **judge_section) -> None:
    raw = yaml.safe_load((root / "params.yaml").read_text())
    raw["judge"] = {"datasets": ["human-only"], "probe_datasets": [], "tasks": ["pairwise"], "progress": False, "judges": judges, **judge_section}
    (root / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


@pytest.fixture
def small(tmp_path: Path) -> Path:
    root = make_tiny_project(tmp_path / "project")
    doc = yaml.safe_load((root / "dvc.yaml").read_text())
    doc["stages"] = {n: doc["stages"][n] for n in ("pin", "probe", "judge")}  # judge depends on artifacts/probe
    # Without the pools stage its datasets are not a dep: this judge names none (judge.datasets: human-only).
    doc["stages"]["judge"]["deps"] = [d for d in doc["stages"]["judge"]["deps"] if not d.startswith("artifacts/pools")]
    doc.pop("plots", None)
    (root / "dvc.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    _write_params(root, CONTROLS)
    init_git_dvc(root, _sh)
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for d in ("artifacts/pin", "artifacts/judge") for p in sorted((root / d).rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_failing_repro_leaves_the_last_good_outputs_in_place_and_verify_passes(small):
    first = _sh("dvc", "repro", cwd=small)
    assert first.returncode == 0, first.stdout + first.stderr
    good = _snapshot(small)
    assert {"artifacts/pin/manifest.json", "artifacts/judge/verdicts.parquet"} <= set(good)
    params = (small / "params.yaml").read_text()

    wrong_pin = yaml.safe_load(params)
    wrong_pin["pin"]["datasets"]["human-only"]["sha256"] = "0" * 64
    (small / "params.yaml").write_text(yaml.safe_dump(wrong_pin, sort_keys=False))
    res = _sh("dvc", "repro", cwd=small)
    assert res.returncode != 0 and "does not match its pin" in res.stdout + res.stderr
    assert _snapshot(small) == good
    assert _sh("novelty-audit", "verify", cwd=small).returncode == 0

    (small / "params.yaml").write_text(params)
    _write_params(small, {"typo": {"backend": "always-frist"}})
    res = _sh("dvc", "repro", cwd=small)
    assert res.returncode != 0 and "always-frist" in res.stdout + res.stderr
    assert _snapshot(small) == good
    verify = _sh("novelty-audit", "verify", cwd=small)
    assert verify.returncode == 0, verify.stderr

    (small / "params.yaml").write_text(params)
    again = _sh("dvc", "repro", cwd=small)
    assert again.returncode == 0 and "Running stage" not in again.stdout, again.stdout
    status = _sh("dvc", "status", cwd=small)
    assert "up to date" in status.stdout.lower(), status.stdout


@pytest.mark.slow
def test_failed_calls_make_repro_fail_and_the_next_repro_asks_exactly_them(small):
    """Issue 17.2: a plain `dvc repro` completes what failed and nothing else; a third runs nothing."""
    from mock_llm import MockLLM

    assert _sh("dvc", "repro", "pin", cwd=small).returncode == 0
    ideas = pl.read_parquet(small / "artifacts/pin/human-only/ideas.parquet")
    pairs = pl.read_parquet(small / "artifacts/pin/human-only/pairs.parquet").sort("pair_id")
    texts = dict(zip(ideas["idea_id"], ideas["text"]))
    with MockLLM() as mock:
        _write_params(small, {"mock": {"backend": "openai", "args": {
            "model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "max_retries": 0}}})
        _sh("git", "add", "-A", cwd=small)
        # Every prompt holding one of these ideas fails, permanently: about a tenth of the request bodies.
        for idea in pairs["idea_0"].to_list()[::10]:
            mock.add_rule(texts[idea][:80], "500")
        env_key = {"MOCK_API_KEY": "sk-test"}
        first = _sh("dvc", "repro", cwd=small, env=env_key)
        assert first.returncode != 0, first.stdout
        assert "calls failed: HTTP 500" in first.stdout + first.stderr
        failed = int(pl.read_parquet(small / "artifacts/judge/verdicts.parquet")["n_error"].sum())
        asked = mock.count
        assert 0 < failed < asked  # some calls failed, not all
        mock.reset()
        second = _sh("dvc", "repro", cwd=small, env=env_key)
        assert second.returncode == 0, second.stdout + second.stderr
        assert mock.count == failed, f"{asked} asked first, {failed} failed, {mock.count} asked again"
        assert pl.read_parquet(small / "artifacts/judge/verdicts.parquet")["n_error"].sum() == 0
        third = _sh("dvc", "repro", cwd=small, env=env_key)
        assert third.returncode == 0 and "Running stage" not in third.stdout and mock.count == failed
