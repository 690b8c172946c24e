"""The base of every params.yaml section model; imports nothing of the project.

Section models (`config/_<section>.py`) import from here, and `params.py` imports them, so any of
them can be the first module a process imports (a Dask worker unpickling a Params) without a cycle.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen", "DATASET_NAMES"]

DATASET_NAMES = ("human-only", "human-plus-generated")


class Frozen(BaseModel):
    """Base for config models: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")
