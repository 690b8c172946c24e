"""Copying the repository's project files into a test project, without any run state of this checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

RUN_STATE = {".git", ".dvc", "dvc.lock", ".novelty-audit", "artifacts", "reports", "tests", "benchmarks", ".pytest_cache"}
"""Top-level names that are a checkout's own state or not project files. dvc.lock is among them: it records
this checkout's `dvc repro` (the README's first command), which a fresh test project must not inherit."""

_ANYWHERE = shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache")


def environments(directory: str, names: list[str]) -> set[str]:
    """The names in `directory` that are Python environments: a venv (its pyvenv.cfg) or a conda env (conda-meta/).

    A checkout's `.venv` (or any name) holds gigabytes (torch) and no project file; copied into every test
    project, it filled the disk of a CI run whose venv lived inside the clone.
    """
    d = Path(directory)
    return {n for n in names if (d / n / "pyvenv.cfg").is_file() or (d / n / "conda-meta").is_dir()}


def ignore_run_state(directory: str, names: list[str]) -> set[str]:
    """`shutil.copytree` ignore function: run state at the top level only (novelty_audit/artifacts is a package),
    and Python environments anywhere."""
    skip = set(_ANYWHERE(directory, names)) | environments(directory, names)
    if Path(directory).resolve() == REPO:
        skip |= RUN_STATE & set(names)
    return skip


def make_project(root: Path) -> Path:
    """Copy params.yaml, dvc.yaml and the data they pin into `root`, files writable: the `project` fixture of
    tests/conftest.py, and module-scoped fixtures that build one such project for several tests. Returns root."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy(REPO / name, root / name)
    # The pinned benchmark, NovBench (pin), the published reference results (report), the probe catalogue (probe) and
    # the candidate sets folder (a pools dep).
    for data in ("novelty-judge-bench", "novbench", "published", "probes", "candidates"):
        shutil.copytree(REPO / "data" / data, root / "data" / data)
    for p in (root / "data").rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return root


def init_git_dvc(root: Path, run: Callable[..., subprocess.CompletedProcess]) -> None:
    """Make `root` a git + DVC repository with every file committed, as a researcher's clone is; each command
    goes through `run(*cmd, cwd=root)` (the caller's environment) and must succeed."""
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"]):  # fmt: skip
        res = run(*cmd, cwd=root)
        assert res.returncode == 0, res.stderr
