"""The base of every params.yaml section model; imports nothing of the project.

Section models (`config/_<section>.py`) import from here, and `params.py` imports them, so any of
them can be the first module a process imports (a Dask worker unpickling a Params) without a cycle.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen", "CONTROL_BACKENDS", "DATASET_NAMES", "DuplicateKeyError", "round_trip_yaml", "safe_load_unique"]

DATASET_NAMES = ("human-only", "human-plus-generated")
CONTROL_BACKENDS = frozenset({"always-first", "always-second", "random", "abstain"})
"""The control judges' backends: the floor a real judge must beat, left out of spreads over judge configurations."""


class Frozen(BaseModel):
    """Base for config models: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


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
