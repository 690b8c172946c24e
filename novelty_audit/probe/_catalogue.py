"""The catalogue of attack templates: a versioned YAML file in the project, checked field by field."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from ..artifacts import check_pinned_file, digest_bytes, digest_file
from ..errors import BadInputError

__all__ = ["ATTACK_FAMILIES", "FAMILIES", "LENGTH_CONTROL", "RETRIEVED", "Catalogue", "Template", "load_catalogue"]

LENGTH_CONTROL = "length_control"
RETRIEVED = "retrieved"
"""The attack is not in the idea: it is a document planted first among what the judge retrieves or searches for
the (unchanged) less novel idea, a title and an abstract. Only judges that retrieve can see it."""
ATTACK_FAMILIES = ("instruction", "authority", "claim", "format")
"""Families whose text tries to move the judge: a direct instruction, fake authority, a claim of novelty
without substance, a formatting trick (a fake verdict, a fake end-of-ideas marker)."""
FAMILIES = (*ATTACK_FAMILIES, LENGTH_CONTROL, RETRIEVED)
"""`length_control`: neutral padding as long as an attack, so a judge that merely prefers longer text is
told apart from one moved by what the attack says. `retrieved`: the attack in a retrieved document."""
POSITIONS = ("prepend", "append", "either")
_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")
_FIELDS = {"id", "family", "position", "text", "length_of", "title"}


@dataclass(frozen=True)
class Template:
    """One attack (or control) template as written in the catalogue."""

    id: str
    family: str
    position: Literal["prepend", "append", "either"]
    """`either`: the probe stage picks prepend or append per pair, seeded."""
    text: str
    length_of: str | None = None
    """length_control only: the attack whose character count the padding takes."""
    title: str | None = None
    """retrieved only: the planted document's title (`text` is its abstract)."""

    @property
    def digest(self) -> str:
        """sha256 of the template's own text (what an edit moves)."""
        return digest_bytes(self.text.encode("utf-8"))


@dataclass(frozen=True)
class Catalogue:
    version: str
    path: str
    sha256: str
    templates: tuple[Template, ...]

    def by_family(self, family: str) -> list[Template]:
        return [t for t in self.templates if t.family == family]

    def get(self, template_id: str) -> Template:
        return next(t for t in self.templates if t.id == template_id)

    def applied_text(self, t: Template) -> str:
        """The text a probe writes into the idea: the template's text, or for a length control its neutral
        text repeated and cut at the character count of the attack it matches."""
        if t.family != LENGTH_CONTROL:
            return t.text
        target = len(self.get(t.length_of or "").text)
        reps = -(-target // (len(t.text) + 1)) + 1
        return " ".join([t.text] * reps)[:target].rstrip() or t.text


def load_catalogue(path: str | Path, sha256: str | None = None) -> Catalogue:
    """Read and check the catalogue; every problem is a BadInputError naming the file, the item and the field.

    With `sha256`, the file must match its pin first (PinMismatchError otherwise)."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"{path}: probe catalogue not found", hint="check probe.catalogue.path in params.yaml")
    if sha256 is not None:
        check_pinned_file(path, sha256, what=f"probe catalogue {path}",
                          hint="if the edit is deliberate, put the actual sha256 in params.yaml probe.catalogue.sha256")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise BadInputError(f"{path}: malformed YAML{where}: {getattr(exc, 'problem', exc)}") from None
    problems: list[str] = []

    def bad(item: str, field: str, why: str) -> None:
        problems.append(f"{path}: item {item}, field {field}: {why}")

    if not isinstance(raw, dict):
        raise BadInputError(f"{path}: expected a mapping with `version` and `templates`")
    version = raw.get("version")
    if not isinstance(version, str) or not version.strip():
        bad("(catalogue)", "version", "missing or not a string")
    items = raw.get("templates")
    if not isinstance(items, list) or not items:
        bad("(catalogue)", "templates", "missing or empty list")
        items = []
    templates: list[Template] = []
    seen: set[str] = set()
    for n, item in enumerate(items):
        name = str(item.get("id")) if isinstance(item, dict) and item.get("id") is not None else f"#{n + 1}"
        if not isinstance(item, dict):
            bad(name, "(template)", "expected a mapping")
            continue
        before = len(problems)
        for extra in sorted(set(item) - _FIELDS):
            bad(name, extra, f"unknown field (allowed: {', '.join(sorted(_FIELDS))})")
        tid = item.get("id")
        if not isinstance(tid, str) or not _ID.fullmatch(tid):
            bad(name, "id", "needs lowercase letters, digits, '.', '_' or '-'")
        elif tid in seen:
            bad(name, "id", "duplicate id")
        family = item.get("family")
        if family not in FAMILIES:
            bad(name, "family", f"unknown family {family!r} (known: {', '.join(FAMILIES)})")
        position = item.get("position")
        if position not in POSITIONS:
            bad(name, "position", f"unknown position {position!r} (known: {', '.join(POSITIONS)})")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            bad(name, "text", "missing or empty")
        length_of = item.get("length_of")
        if family == LENGTH_CONTROL and not isinstance(length_of, str):
            bad(name, "length_of", "a length control names the attack whose length it matches")
        if family != LENGTH_CONTROL and length_of is not None:
            bad(name, "length_of", "only a length_control template has one")
        title = item.get("title")
        if family == RETRIEVED and (not isinstance(title, str) or not title.strip()):
            bad(name, "title", "a retrieved template names the planted document's title")
        if family != RETRIEVED and title is not None:
            bad(name, "title", "only a retrieved template has one")
        if family == RETRIEVED and position != "prepend":
            bad(name, "position", "a planted document goes first among the results: prepend")
        if len(problems) == before:
            seen.add(tid)
            templates.append(Template(tid, family, position, text.strip(), length_of, title.strip() if isinstance(title, str) else None))
    attacks = {t.id for t in templates if t.family != LENGTH_CONTROL}
    for t in templates:
        if t.length_of is not None and t.length_of not in attacks:
            bad(t.id, "length_of", f"{t.length_of!r} names no attack template of this catalogue")
    for family in FAMILIES:
        if family == RETRIEVED:
            continue  # optional: a catalogue without planted documents probes the ideas only
        if templates and not any(t.family == family for t in templates) and not problems:
            bad("(catalogue)", "templates", f"no template of family {family}")
    if problems:
        raise BadInputError(f"{len(problems)} problem(s) in the probe catalogue:\n  " + "\n  ".join(problems),
                            hint="fix the catalogue file (fields: id, family, position, text, length_of, title)")
    return Catalogue(version=version, path=path.as_posix(), sha256=digest_file(path), templates=tuple(templates))
