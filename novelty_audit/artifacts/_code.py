"""Code digest of a stage: its own module plus every project module it imports, transitively.

Imports are read from the source (AST), not from `sys.modules`, so the digest does not
depend on what else happened to be imported in the process. Two lazy forms are followed as imports:
- a reference string `"novelty_audit.pkg.module:attr"` (how the judge backend registry names its lazy
  factories): the module holding the string depends on that module;
- a package face that resolves exports on first use declares them in a module-level dict literal
  `_LAZY = {"name": "._module"}`: `from pkg import name` depends on `pkg._module`, for the names imported only.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import threading
from pathlib import Path

from .. import __version__
from ._digest import digest_bytes, digest_obj

__all__ = ["CodeDigest", "code_digest", "PROJECT_PACKAGES"]

PROJECT_PACKAGES = ("novelty_audit", "stages", "flows")

from pydantic import BaseModel, ConfigDict  # noqa: E402


class CodeDigest(BaseModel):
    """What code produced an artifact: one digest over every module file, plus the package version."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    digest: str
    version: str
    modules: dict[str, str]
    """module name → sha256 of its source bytes."""


def _is_project(name: str) -> bool:
    return name.split(".")[0] in PROJECT_PACKAGES


def _resolve(name: str) -> tuple[str, Path] | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return name, Path(spec.origin)


_REFERENCE = re.compile(r"^(?:%s)(?:\.[A-Za-z_]\w*)*(?=:[A-Za-z_]\w*$)" % "|".join(PROJECT_PACKAGES))


def _lazy_exports(package: str) -> dict[str, str]:
    """A package face's `_LAZY` table (export name → absolute module name), empty when it has none."""
    resolved = _resolve(package)
    if resolved is None or resolved[1].name != "__init__.py":
        return {}
    for node in ast.parse(resolved[1].read_bytes()).body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            return {k.value: package + v.value if v.value.startswith(".") else v.value
                    for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return {}


_MAY_REFER = re.compile(rb"(?:%s)(?:\.\w+)*:\w" % "|".join(PROJECT_PACKAGES).encode())
"""A source without this cannot hold a reference string (one plain literal, as the backend registry writes
them), so its expressions need no walk: walking every node of every module was a third of a digest's time."""

_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
"""The fields of a statement that hold statements (ExceptHandler and match_case hold them in `body`)."""


def _statements(body: list[ast.AST]):
    """Every statement under `body`, nested ones included (imports are statements, often inside functions)."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        for field in _BLOCKS:
            todo.extend(getattr(node, field, ()))


def _imports_of(name: str, path: Path, source: bytes, lazy_exports=_lazy_exports) -> set[str]:
    tree = ast.parse(source, filename=str(path))
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: -(node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            # `from pkg import sub` may name a submodule
            found.update(f"{mod}.{a.name}" for a in node.names)
            if _is_project(mod):
                lazy = lazy_exports(mod)
                found.update(lazy[a.name] for a in node.names if a.name in lazy)
    if _MAY_REFER.search(source):
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                ref = _REFERENCE.match(node.value)
                if ref:
                    found.add(ref.group(0))
    result: set[str] = set()
    for mod in found:
        if not _is_project(mod):
            continue
        # include parent packages: importing a.b.c executes a/__init__ and a/b/__init__
        parts = mod.split(".")
        result.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return result


_LOCK = threading.Lock()
_DIGESTS: dict[tuple[str, ...], CodeDigest] = {}


def code_digest(*roots: str) -> CodeDigest:
    """Digest the modules reachable from `roots` (module names) within the project packages.

    Computed once per `roots` per process, under a lock: `ast.parse` is not thread-safe on CPython 3.11
    (fan-out threads hashing at once crashed with "AST constructor recursion depth mismatch"), and the
    code a process runs does not change while it runs.
    """
    with _LOCK:
        found = _DIGESTS.get(roots)
        if found is None:
            found = _DIGESTS[roots] = _compute(roots)
        return found


def _compute(roots: tuple[str, ...]) -> CodeDigest:
    seen: dict[str, str] = {}
    tables: dict[str, dict[str, str]] = {}

    def lazy_exports(package: str) -> dict[str, str]:
        # Read each package face once per digest, not once per `from pkg import …` naming it.
        if package not in tables:
            tables[package] = _lazy_exports(package)
        return tables[package]

    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        resolved = _resolve(name)
        if resolved is None:
            continue
        _, path = resolved
        source = path.read_bytes()  # one read: the digest is of exactly the bytes parsed for imports
        seen[name] = digest_bytes(source)
        todo.extend(_imports_of(name, path, source, lazy_exports) - set(seen))
    modules = dict(sorted(seen.items()))
    return CodeDigest(digest=digest_obj({"modules": modules, "version": __version__}), version=__version__, modules=modules)
