"""The base of every params.yaml section model; imports nothing of the project.

Section models (`config/_<section>.py`) import from here, and `params.py` imports them, so any of
them can be the first module a process imports (a Dask worker unpickling a Params) without a cycle.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen", "DATASET_NAMES", "round_trip_yaml"]

DATASET_NAMES = ("human-only", "human-plus-generated")


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
