"""Keep DVC's record in step with stages run outside `dvc repro` (the Prefect flows).

`dvc repro` writes each stage's deps, params and outs hashes to dvc.lock after running it. A flow runs the same
stage functions but not through DVC, so dvc.lock would go stale: `dvc status` would report changed outputs and the
next `dvc repro` would run the stages again. After a flow has run stages, `record_in_dvc` records exactly those
stages with `dvc commit --force` — what `dvc repro` itself would have written, without running anything again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ..errors import NoveltyAuditError

__all__ = ["DvcRecord", "is_dvc_project", "record_in_dvc"]


class DvcRecord(NamedTuple):
    """What `record_in_dvc` did."""

    stages: list[str]
    """Stages recorded in dvc.lock (empty when nothing was done)."""
    skipped: str | None = None
    """Why nothing was recorded (not a DVC project, no stage ran), else None."""


def is_dvc_project(project_dir: str | Path) -> bool:
    """Whether `project_dir` is the root of a DVC repository (has `.dvc/`)."""
    return (Path(project_dir) / ".dvc").is_dir()


def _dvc_command() -> list[str]:
    exe = shutil.which("dvc")
    return [exe] if exe else [sys.executable, "-m", "dvc"]


def record_in_dvc(project_dir: str | Path, stages: Sequence[str], *, timeout_s: float = 3600.0) -> DvcRecord:
    """`dvc commit --force STAGES` in `project_dir`, waiting for DVC's repository lock (a concurrent `dvc repro`).

    Raises NoveltyAuditError naming the stages and DVC's message when the commit fails, so a flow never
    reports success while dvc.lock disagrees with the outputs.
    """
    if not stages:
        return DvcRecord([], skipped="no stage ran")
    if not is_dvc_project(project_dir):
        return DvcRecord([], skipped=f"{Path(project_dir).resolve()} is not a DVC repository (no .dvc/)")
    cmd = [*_dvc_command(), "--wait-for-lock", "commit", "--force", "--quiet", *stages]
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    try:
        res = subprocess.run(cmd, cwd=project_dir, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NoveltyAuditError(
            f"dvc commit of stages {', '.join(stages)} did not complete: {exc}",
            hint=f"run `dvc commit --force {' '.join(stages)}` in {project_dir} (or `dvc repro`, which reuses the outputs)",
        ) from None
    if res.returncode != 0:
        detail = (res.stderr or res.stdout).strip().splitlines()[-5:]
        raise NoveltyAuditError(
            f"dvc commit of stages {', '.join(stages)} failed (exit {res.returncode}): {' / '.join(detail)}",
            hint=f"run `dvc commit --force {' '.join(stages)}` in {project_dir} (or `dvc repro`, which reuses the outputs)",
        )
    return DvcRecord(list(stages))
