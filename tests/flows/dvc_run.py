"""Running git and DVC in a test project, for the flow tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def sh(*cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a command in `cwd` with DVC analytics off; never raises on a non-zero exit."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800, check=False)


def ok(*cmd: str, cwd: Path) -> str:
    """`sh`, asserting exit 0 (stdout and stderr in the message); returns stdout."""
    res = sh(*cmd, cwd=cwd)
    assert res.returncode == 0, f"{' '.join(cmd)} exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
    return res.stdout
