"""Test projects are copies of the checkout's project files: a Python environment inside the checkout is not one."""

from __future__ import annotations

import shutil
from pathlib import Path

from project_copy import ignore_run_state


def test_a_venv_or_conda_env_anywhere_in_the_checkout_is_left_out_of_the_copy(tmp_path: Path):
    src = tmp_path / "checkout"
    (src / ".venv" / "lib").mkdir(parents=True)
    (src / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (src / ".venv" / "lib" / "big.bin").write_bytes(b"\0" * 1024)
    (src / "data" / "env" / "conda-meta").mkdir(parents=True)
    (src / "data" / "venv-notes").mkdir(parents=True)
    (src / "data" / "venv-notes" / "pyvenv.cfg.md").write_text("not an environment\n")
    (src / "data" / "pairs.yaml").write_text("- a\n")

    dest = tmp_path / "copy"
    shutil.copytree(src, dest, ignore=ignore_run_state)

    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*"))
    assert copied == ["data", "data/pairs.yaml", "data/venv-notes", "data/venv-notes/pyvenv.cfg.md"]
