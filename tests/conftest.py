"""Shared fixtures: a throw-away project directory, so no test writes into the repository."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "data" / "novelty-judge-bench"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of params.yaml, dvc.yaml and the pinned benchmark in a temp dir, made the cwd."""
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(BENCH, tmp_path / "data" / "novelty-judge-bench")
    shutil.copytree(REPO / "data" / "novbench", tmp_path / "data" / "novbench")  # params.yaml pins a NovBench file too
    shutil.copytree(REPO / "data" / "published", tmp_path / "data" / "published")  # report.published is pinned too
    shutil.copytree(REPO / "data" / "probes", tmp_path / "data" / "probes")  # probe.catalogue is pinned too
    for p in (tmp_path / "data").rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def run_main(capsys: pytest.CaptureFixture[str]):
    """Call the CLI entry point in this process: `run_main(*args) -> (exit code, stdout, stderr)`."""
    from novelty_audit.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        cap = capsys.readouterr()
        return code, cap.out, cap.err

    return run
