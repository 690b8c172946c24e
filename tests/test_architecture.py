"""The architecture holds: the import-linter contracts of pyproject.toml (the library never imports stages/ or flows/;
its packages are layered, so no circle and no upward import), and no module reaches into another package's
`_private` module (packages export what others use from their `__init__.py`)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("novelty_audit", "stages", "flows")


def test_every_import_linter_contract_is_kept():
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (it is in the [test] extra)")
    res = subprocess.run([exe], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    found = re.search(r"Contracts: (\d+) kept, (\d+) broken", res.stdout)
    assert found, res.stdout
    kept, broken = map(int, found.groups())
    assert broken == 0 and kept >= 3, res.stdout  # the forbidden contract and the two layers contracts at least


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _owner(module: str) -> str:
    """The package a module belongs to for this rule: `novelty_audit.<pkg>` (a top module is its own), else the root."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "novelty_audit" else parts[0]


def _private_part(target: str) -> str | None:
    """`target` up to its first `_private` component (after the root), or None when it has none."""
    parts = target.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[: i + 1])
    return None


def _targets(module: str, is_package: bool, tree: ast.AST):
    """(line, imported module or name) for every import statement and constant `import_module("...")` call."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield node.lineno, mod
            for alias in node.names:
                yield node.lineno, f"{mod}.{alias.name}"
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def _cross_package_private_imports() -> list[tuple[str, int, str]]:
    found = []
    for root in SCANNED:
        for path in sorted((REPO / root).rglob("*.py")):
            module = _module_name(path)
            for line, target in _targets(module, path.name == "__init__.py", ast.parse(path.read_bytes())):
                if target.split(".")[0] not in SCANNED:
                    continue
                private = _private_part(target)
                if private and _owner(private) != _owner(module):
                    found.append((path.relative_to(REPO).as_posix(), line, private))
    return sorted(set(found))


def test_no_module_imports_another_packages_private_module():
    bad = [f"{f}:{line} imports {mod}" for f, line, mod in _cross_package_private_imports()]
    assert not bad, "import these from the package's face (export them in its __init__.py):\n  " + "\n  ".join(bad)


def test_the_private_import_scan_sees_every_import_form(tmp_path):
    tree = ast.parse(
        "from ..judges._llm import X\n"
        "from ..judges.distance import _embed\n"
        "import novelty_audit.metrics._estimates\n"
        "importlib.import_module('novelty_audit.novbench._tables')\n"
        "from ._sibling import Y\n"
    )
    targets = [t for _, t in _targets("novelty_audit.signals._llm", False, tree)]
    privates = {p for t in targets if (p := _private_part(t)) and _owner(p) != "novelty_audit.signals"}
    assert privates == {"novelty_audit.judges._llm", "novelty_audit.judges.distance._embed",
                        "novelty_audit.metrics._estimates", "novelty_audit.novbench._tables"}
