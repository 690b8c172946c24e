"""The layering contract of pyproject.toml: the library never imports stages/ or flows/."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_the_library_never_imports_stages_or_flows():
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (it is in the [test] extra)")
    res = subprocess.run([exe], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 kept, 0 broken" in res.stdout
