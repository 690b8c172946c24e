"""Fixtures for the Prefect flow tests: one ephemeral Prefect API per session, throw-away project copies."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_TOP_LEVEL_SKIP = {".git", ".dvc", ".novelty-audit", "artifacts", "reports", "tests", "benchmarks", ".pytest_cache"}
_ANYWHERE_SKIP = shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache")


def _ignore(directory: str, names: list[str]) -> set[str]:
    # Top-level names only: novelty_audit/artifacts is code, ./artifacts is pipeline output.
    skip = set(_ANYWHERE_SKIP(directory, names))
    if Path(directory).resolve() == REPO:
        skip |= _TOP_LEVEL_SKIP & set(names)
    return skip


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[None]:
    """A temporary Prefect server (SQLite in a temp dir) for every flow run of the session.

    Start-up takes ~10-15 s on this machine; the timeout is generous for a loaded CI box.
    """
    from prefect.testing.utilities import prefect_test_harness

    # Telemetry writes race the harness's SQLite on start-up; it has nothing to tell here.
    old = os.environ.get("PREFECT_SERVER_ANALYTICS_ENABLED")
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    try:
        with prefect_test_harness(server_startup_timeout=180):
            yield
    finally:
        if old is None:
            os.environ.pop("PREFECT_SERVER_ANALYTICS_ENABLED", None)
        else:
            os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = old


def copy_project(dest: Path) -> Path:
    """A copy of the repository's project files (no store, no artifacts, no git) at `dest`."""
    shutil.copytree(REPO, dest, ignore=_ignore)
    # Embedding the prior-work corpus is slow and its cache is keyed by (model, text digest):
    # sharing it cannot change a result.
    cache = REPO / ".novelty-audit" / "cache" / "embeddings"
    if cache.exists():
        shutil.copytree(cache, dest / ".novelty-audit" / "cache" / "embeddings")
    return dest


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A fresh copy of the project, not the cwd (flows take `project_dir`)."""
    return copy_project(tmp_path / "project")


@pytest.fixture
def make_project(tmp_path: Path):
    """A factory of project copies: `make_project("a")` → tmp_path/a."""
    return lambda name: copy_project(tmp_path / name)
