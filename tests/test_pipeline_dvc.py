"""`dvc repro` from a fresh copy: runs every stage, a second repro runs none, status is clean,
and each stage's dvc.yaml deps cover every module its code digest hashes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from novelty_audit.artifacts import code_digest, load_manifest

REPO = Path(__file__).resolve().parents[1]
TOP_LEVEL_SKIP = {".git", ".dvc", ".novelty-audit", "artifacts", "reports", "tests", "benchmarks", ".pytest_cache"}


def _copy_ignore(directory: str, names: list[str]) -> set[str]:
    # Skip run state at the top level only: novelty_audit/artifacts is a package, not run state.
    top = TOP_LEVEL_SKIP if Path(directory) == REPO else set()
    return {n for n in names if n in top or n == "__pycache__" or n.endswith(".egg-info")}


def _sh(*cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800)


@pytest.fixture(scope="module")
def repro(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("clone") / "project"
    shutil.copytree(REPO, root, ignore=_copy_ignore)
    # Reuse the repository's embedding cache when there is one: embedding the corpus is slow and
    # the cache is keyed by (model, text digest), so sharing it cannot change a result.
    cache = REPO / ".novelty-audit" / "cache" / "embeddings"
    if cache.exists():
        shutil.copytree(cache, root / ".novelty-audit" / "cache" / "embeddings")
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"]):
        res = _sh(*cmd, cwd=root)
        assert res.returncode == 0, res.stderr
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


def test_dvc_deps_cover_every_module_in_each_stage_code_digest():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, spec in stages.items():
        deps = [d for d in spec.get("deps", [])]
        for module in code_digest(f"stages.{name}").modules:
            rel = module.replace(".", "/")
            candidates = {f"{rel}.py", f"{rel}/__init__.py"}
            covered = any(c == d or c.startswith(d.rstrip("/") + "/") for c in candidates for d in deps)
            assert covered, f"dvc.yaml stage {name}: module {module} is hashed in its code digest but not a dep"
