"""The faithful mode's inputs: prompt templates and a decision rule read from the user's own checkout of an
original comparator's repository, never from a copy shipped with this project.

`args.original` names the checkout (`path`), the pinned commit, the file holding the prompts and its sha256: the
file must match its pin (PinMismatchError otherwise) and, when the checkout is a git repository, its HEAD must be
the pinned commit (a `rule_file`, when the decision rule lives elsewhere, is pinned the same way). The file is parsed, never run (`ast`): the templates are module-level string constants named
by `system` and `user`, and the decision rule is the list of phrases the named function tests with
`"<phrase>" in <text>.lower()`, in the order it tests them. docs/design/agents.md ("faithful mode").
"""

from __future__ import annotations

import ast
import string
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, model_validator

from ...artifacts import check_pinned_file, digest_obj
from ...config import Frozen
from ...errors import ConfigError

__all__ = ["Original", "OriginalFiles", "load_original"]


class OriginalFiles(Frozen):
    """Where the faithful mode reads the original's prompts and decision rule (`args.original`)."""

    path: str
    """The root of your checkout of the original repository (never copied into the project or its artifacts)."""
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    """The pinned commit; when the checkout is a git repository its HEAD must be this commit."""
    file: str
    """The file (relative to `path`) holding the prompt templates and the decision rule."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of `file`: a different file is refused (PinMismatchError)."""
    system: str
    """Name of the module-level string constant that is the system template."""
    user: str
    """Name of the module-level string constant that is the per-round user template."""
    function: str
    """Name of the function whose `"<phrase>" in text.lower()` tests are the decision rule."""
    rule_file: str | None = None
    """The file holding `function` when it is not `file` (e.g. a repository keeping prompts and loop apart)."""
    rule_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    """sha256 of `rule_file` (required with it)."""

    @model_validator(mode="after")
    def _rule_pin(self) -> OriginalFiles:
        if (self.rule_file is None) != (self.rule_sha256 is None):
            raise ValueError("rule_file and rule_sha256 go together: every file read is checked by its sha256")
        return self


@dataclass(frozen=True)
class Original:
    """What the faithful mode uses: the two templates, the decision phrases (each with NEGATIVE / POSITIVE, in the
    order tested) and a digest of all three (the judge's config)."""

    system: str
    user: str
    phrases: tuple[tuple[str, str], ...]

    @property
    def digest(self) -> str:
        return digest_obj({"system": self.system, "user": self.user, "phrases": [list(p) for p in self.phrases]})

    def fill(self, which: str, values: dict[str, object]) -> str:
        """The template `which` (system | user) with its `{field}`s filled as Python's str.format does."""
        return getattr(self, which).format_map(values)


def _head(root: Path) -> str | None:
    if not (root / ".git").exists():  # not a checkout of its own (a copy, or a folder inside another repository)
        return None
    try:
        got = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return got.stdout.strip() if got.returncode == 0 else None


def _constants(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    return out


def _phrases(tree: ast.Module, function: str) -> list[str]:
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function), None)
    if fn is None:
        return []
    found: list[tuple[int, int, str]] = []
    for n in ast.walk(fn):
        if (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.In)
                and isinstance(n.left, ast.Constant) and isinstance(n.left.value, str)
                and isinstance(n.comparators[0], ast.Call) and isinstance(n.comparators[0].func, ast.Attribute)
                and n.comparators[0].func.attr == "lower"):  # fmt: skip
            found.append((n.lineno, n.col_offset, n.left.value))
    return [p for _, _, p in sorted(found)]


def _checked(path: Path, sha256: str, field: str, commit: str) -> Path:
    if not path.is_file():
        raise ConfigError(f"{field}: {path} does not exist", hint="point original.path at your checkout of the original repository")
    check_pinned_file(path, sha256, what=f"{field}: {path}", hint=f"check out commit {commit} of the original repository")
    return path


def load_original(o: OriginalFiles, *, judge: str, fields: dict[str, set[str]]) -> Original:
    """Read and check `o` (see the module docstring). `fields`: the `{field}` names each template may use; a
    template using another, a missing constant or no decision phrase is a ConfigError naming the field."""
    where = f"params.yaml judge.judges.{judge}.args.original"
    root = Path(o.path)
    path = _checked(root / o.file, o.sha256, f"{where}.file", o.commit)
    head = _head(root)
    if head is not None and head != o.commit:
        raise ConfigError(f"{where}.commit: the checkout at {root} is at {head}, not {o.commit}", hint=f"git -C {root} checkout {o.commit}")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rule_tree = tree
    if o.rule_file is not None:
        rule_path = _checked(root / o.rule_file, o.rule_sha256 or "", f"{where}.rule_file", o.commit)
        rule_tree = ast.parse(rule_path.read_text(encoding="utf-8"), filename=str(rule_path))
    consts = _constants(tree)
    templates: dict[str, str] = {}
    for which in ("system", "user"):
        name = getattr(o, which)
        if name not in consts:
            raise ConfigError(f"{where}.{which}: {path} has no module-level string constant {name!r}")
        used = {f for _, f, _, _ in string.Formatter().parse(consts[name]) if f}
        if used - fields[which]:
            raise ConfigError(f"{where}.{which}: template {name!r} uses {sorted(used - fields[which])}; the faithful mode fills "
                              f"{sorted(fields[which])}")  # fmt: skip
        templates[which] = consts[name]
    phrases = _phrases(rule_tree, o.function)
    if not phrases:
        raise ConfigError(f"{where}.function: {o.function!r} in {o.rule_file or o.file} tests no phrase with `in text.lower()`")
    rule = tuple((p.lower(), "NEGATIVE" if " not " in f" {p.lower()} " else "POSITIVE") for p in phrases)
    return Original(templates["system"], templates["user"], rule)
