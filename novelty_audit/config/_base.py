"""The base of every params.yaml section model; imports nothing of the project.

Section models (`config/_<section>.py`) import from here, and `params.py` imports them, so any of
them can be the first module a process imports (a Dask worker unpickling a Params) without a cycle.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen", "CONTROL_BACKENDS", "DATASET_NAMES", "REASONING_EFFORTS", "SLUG", "DuplicateKeyError", "check_name", "round_trip_yaml",
           "safe_load_unique"]

DATASET_NAMES = ("human-only", "human-plus-generated")
SLUG = re.compile(r"[a-z0-9][a-z0-9._-]*")
"""A name that is also part of an id, a file name or a params key (sweeps, candidate sets): lowercase letters, digits,
'.', '_' or '-', starting with a letter or digit (use `fullmatch`)."""
CONTROL_BACKENDS = frozenset({"always-first", "always-second", "random", "abstain"})
"""The control judges' backends: the floor a real judge must beat, left out of spreads over judge configurations."""

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""The reasoning efforts OpenAI's chat API takes (`reasoning_effort`), lowest first; the Anthropic provider maps
each to an extended-thinking budget (novelty_audit/llm/_anthropic.py, docs/judges.md)."""


class Frozen(BaseModel):
    """Base for config models: immutable, unknown keys rejected, no NaN or infinity in a number field (a
    `budget_usd: .inf` would be no cap at all, a NaN compares false with every bound)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def check_name(name: Any, where: str) -> Any:
    """`name` unchanged when it is one line of visible text; else ValueError naming `where` (the field).

    A name (a judge, a sweep, a dataset, a candidate set) ends up in table rows, headings, CSV and LaTeX cells and
    file names: a line break or a control character there splits a row or hides text, so it is refused when
    params load. Refused: control characters (Unicode Cc, which includes newline and tab), format characters
    (Cf: bidirectional overrides, zero-width marks) and line/paragraph separators (Zl, Zp)."""
    if not isinstance(name, str):
        return name  # the field's own type check names it
    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        raise ValueError(f"{where}: name {name!r} holds the control character U+{ord(bad):04X}; a name is one line of visible text")
    if not name.strip():
        raise ValueError(f"{where}: a name cannot be empty or blank")
    return name


def round_trip_yaml() -> Any:
    """A ruamel round-trip YAML that writes the project's params.yaml back unchanged: comments, long lines,
    the list indent (`  key:` / `    - item`) and `null` kept, so an accept rewrites only the pins it moves."""
    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # never fold a long pin line
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return yaml


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A YAML mapping that names one key twice (a plain YAML load keeps only the last one, silently)."""

    def __init__(self, key: Any, first: yaml.Mark, second: yaml.Mark):
        super().__init__(problem=f"duplicate key {key!r}", problem_mark=second)
        self.key = key
        self.first_line = first.line + 1
        self.second_line = second.line + 1

    def __str__(self) -> str:
        return f"key {self.key!r} appears twice in one mapping, at line {self.first_line} and line {self.second_line}"


_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""LibYAML's parser when PyYAML was built with it (its wheels are): the pure-Python scanner was most of the pin
stage's time on the benchmark's splits, ~10x LibYAML's (docs/benchmarks.md). Both give the same documents for
every YAML file the project ships (tests/datasets/test_duplicate_keys.py checks them against `yaml.safe_load`);
the types come from the same `SafeConstructor` either way."""


class _UniqueKeyLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """PyYAML's safe loader (the types of `yaml.safe_load`), refusing duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` overrides by design
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:
                continue  # an unhashable key: the base constructor reports it
            if first is not key_node.start_mark:
                raise DuplicateKeyError(key, first, key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def safe_load_unique(text: str) -> Any:
    """`yaml.safe_load(text)`, except that a mapping naming one key twice raises `DuplicateKeyError` (a
    `yaml.YAMLError`) with both line numbers: for files people edit by hand (params.yaml, benchmark splits)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 — a SafeLoader subclass
