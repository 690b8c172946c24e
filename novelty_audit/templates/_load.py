"""Finding and reading prompt templates: the packaged ones (novelty_audit/prompts/) and project files.

Every prompt family loads through here: the judges' task templates and output contracts, the signals
extractor's and the pools' prompts, and NovBench's review templates. Rendering stays with each family
(its placeholders and sections are its own); what is shared is where a template's bytes come from, the
errors naming the file, and the digest of those bytes. The bytes are read exactly as stored (no newline
translation), so what a call key holds is what the file holds.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..artifacts import digest_bytes
from ..errors import ConfigError

__all__ = [
    "JINJA_SUFFIXES",
    "PACKAGED_LABEL",
    "TEMPLATE_FILE_SUFFIXES",
    "TemplateSource",
    "is_template_file",
    "packaged",
    "packaged_dir",
    "packaged_file",
    "packaged_names",
    "packaged_text",
    "resolve_template",
]

PACKAGED_LABEL = "novelty_audit/prompts"
"""How messages name the folder of packaged templates."""
TEMPLATE_FILE_SUFFIXES = (".txt", ".jinja2", ".j2")
"""A template ref ending in one of these (or holding a "/") names a project file, not a packaged template."""
JINJA_SUFFIXES = (".jinja2", ".j2")
"""Project files rendered with Jinja2 (strict: an undefined variable is an error); others use `{{name}}` substitution."""
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def is_template_file(ref: str) -> bool:
    """True when `ref` names a project file rather than a packaged template."""
    return "/" in ref or "\\" in ref or ref.endswith(TEMPLATE_FILE_SUFFIXES)


@dataclass(frozen=True)
class TemplateSource:
    """One template's bytes and where they came from: a project file (`path`) or the package."""

    ref: str
    """As configured: a packaged name or a project file path."""
    label: str
    """Where the bytes were read (for messages): the project path or novelty_audit/prompts/<file>."""
    data: bytes
    path: str | None
    """The project file (as configured, relative to the project root); None for a packaged template."""

    @property
    def jinja(self) -> bool:
        return self.path is not None and self.path.endswith(JINJA_SUFFIXES)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")

    @property
    def sha256(self) -> str:
        return digest_bytes(self.data)

    def knob(self) -> dict[str, Any]:
        """`{"prompt_files": {path: sha256}}` for a judge's config (empty for a packaged template, whose bytes
        are covered by its versioned name and the prompt digest): an edit then names the file in the audit."""
        return {"prompt_files": {self.path: self.sha256}} if self.path is not None else {}

    def variables(self, text: str | None = None) -> set[str]:
        """The variables `text` (default: the whole template) uses."""
        text = self.text if text is None else text
        if not self.jinja:
            return set(_PLACEHOLDER.findall(text))
        from jinja2 import TemplateSyntaxError, meta

        try:
            return set(meta.find_undeclared_variables(_jinja_env().parse(text)))
        except TemplateSyntaxError as exc:
            raise ConfigError(f"prompt template {self.label}, line {exc.lineno}: Jinja2 syntax error: {exc.message}") from None

    def check(self, allowed: Collection[str], *, required: Collection[str] = (), text: str | None = None) -> None:
        """Refuse a template using a variable outside `allowed` (naming file and variable), or lacking a `required` one."""
        used = self.variables(text)
        unknown = sorted(used - set(allowed))
        if unknown:
            raise ConfigError(
                f"prompt template {self.label}: undefined variable {', '.join('{{' + v + '}}' for v in unknown)}",
                hint=f"variables of this template: {', '.join('{{' + v + '}}' for v in allowed)}",
            )
        missing = [v for v in required if v not in used]
        if missing:
            raise ConfigError(
                f"prompt template {self.label}: never uses {', '.join('{{' + v + '}}' for v in missing)}",
                hint="a judge template must show the idea(s) it asks about",
            )

    def render(self, variables: Mapping[str, str], text: str | None = None) -> str:
        """`text` (default: the whole template) with `variables` filled in; a variable the template uses but
        `variables` lacks is a ConfigError naming the file and the variable. `{{name}}` templates are filled
        in one pass, so a value is never read as a template itself."""
        text = self.text if text is None else text
        self.check(variables, text=text)
        if self.jinja:
            from jinja2 import TemplateError

            try:
                return _jinja_env().from_string(text).render(**variables)
            except TemplateError as exc:  # e.g. {{ idea_a.missing }}, or an operation the sandbox refuses
                raise ConfigError(f"prompt template {self.label}: {type(exc).__name__}: {exc}") from None
        return _PLACEHOLDER.sub(lambda m: variables[m.group(1)], text)


def _jinja_env():
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    # Sandboxed: a template file is data, not code. keep_trailing_newline: the bytes shown are the bytes written.
    return SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)


def packaged_dir() -> Path:
    """The folder of the packaged templates."""
    return Path(str(resources.files("novelty_audit").joinpath("prompts")))


def packaged_file(name: str, *, missing: str | None = None, hint: str | None = None) -> Path:
    """The file of the packaged template `name` (file name with suffix): an input of every stage that sends
    it. A missing one is a ConfigError: `missing` (default: "no prompt template novelty_audit/prompts/<name>")."""
    path = packaged_dir() / name
    if not path.is_file():
        raise ConfigError(missing or f"no prompt template {PACKAGED_LABEL}/{name}", hint=hint)
    return path


def packaged(name: str, *, missing: str | None = None, hint: str | None = None) -> TemplateSource:
    """The packaged template `name` (file name with suffix) with its exact bytes (see `packaged_file`)."""
    return _packaged(name, name, missing, hint)


def _packaged(ref: str, name: str, missing: str | None, hint: str | None) -> TemplateSource:
    data = packaged_file(name, missing=missing, hint=hint).read_bytes()
    return TemplateSource(ref=ref, label=f"{PACKAGED_LABEL}/{name}", data=data, path=None)


def packaged_text(stem: str) -> str:
    """The text of the packaged template `<stem>.txt` (e.g. signals-extract-v1)."""
    return packaged(f"{stem}.txt").text


def packaged_names(*prefixes: str) -> list[str]:
    """Stems of the packaged .txt templates whose names start with one of `prefixes` (all when none), sorted."""
    return sorted(p.name[: -len(".txt")] for p in packaged_dir().iterdir()
                  if p.name.endswith(".txt") and (not prefixes or p.name.startswith(prefixes)))


def resolve_template(ref: str, *, packaged: str | None = None, root: str | Path | None = None,
                     hint: str | None = None) -> TemplateSource:
    """The template `ref` names: a project file (relative to `root`, default the working directory, i.e. the
    project root) when `is_template_file(ref)`, else the packaged file `packaged` (default `<ref>.txt`).
    A missing or non-UTF-8 file is a ConfigError naming it (`hint` for a missing packaged one)."""
    if not is_template_file(ref):
        return _packaged(ref, packaged if packaged is not None else f"{ref}.txt", None, hint)
    rel = Path(ref)
    if rel.is_absolute() or ".." in rel.parts:
        raise ConfigError(f"prompt template {ref}: give a path inside the project, relative to its root", hint="e.g. prompts/my-judge.jinja2")
    full = Path(root or Path.cwd()) / rel
    if not full.is_file():
        raise ConfigError(
            f"prompt template file {ref} does not exist (looked in {full.parent})",
            hint="paths are relative to the project root; packaged templates are named without a suffix, e.g. reference-v1",
        )
    data = full.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"prompt template {ref}: not UTF-8 text (byte {exc.start})") from None
    return TemplateSource(ref=ref, label=rel.as_posix(), data=data, path=rel.as_posix())
