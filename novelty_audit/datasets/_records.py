"""Read a benchmark file (YAML or Parquet in the Hub layout) into uniform pair records.

Both formats end as `RawPair` values; validation happens once, in `_normalize`, so the
two readers cannot drift apart in what they accept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..config import DuplicateKeyError, safe_load_unique
from ..errors import BadInputError

__all__ = ["RawPair", "read_pairs"]

# Columns of the Hub release's pairwise Parquet (one file per config, split 'test').
_HUB_SIDES = ("a", "b")
_HUB_FIELDS = ("label", "idea_source", "title", "rating", "contribution", "positive_signals", "negative_signals")


@dataclass
class RawPair:
    """One pair as found in the file, before any validation."""

    key: str
    context: Any
    winners: Any
    ideas: dict[Any, Any]
    metadata: dict[Any, Any]
    source_hint: dict[int, str] = field(default_factory=dict)
    """Parquet only: the release's own human/generated marker per slot."""


def read_pairs(path: Path, fmt: str) -> list[RawPair]:
    path = Path(path)
    if not path.exists():
        raise BadInputError(f"{path}: file not found", hint="check pin.datasets.<name>.path in params.yaml")
    if fmt == "yaml":
        return _read_yaml(path)
    return _read_parquet(path)


def _read_yaml(path: Path) -> list[RawPair]:
    try:
        data = safe_load_unique(path.read_text(encoding="utf-8"))
    except DuplicateKeyError as exc:
        # A plain YAML load keeps the second entry and drops the first without a word.
        raise BadInputError(f"{path}: {exc}", hint="every pair id (and every key inside a pair) must be unique: rename or remove one") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise BadInputError(f"{path}: malformed YAML{where}: {getattr(exc, 'problem', exc)}") from None
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not isinstance(data, dict):
        raise BadInputError(f"{path}: expected a mapping of pair id → pair, found {type(data).__name__}")
    out = []
    for key, entry in data.items():
        if not isinstance(entry, dict):
            entry = {}
        out.append(
            RawPair(
                key=str(key),
                context=entry.get("context"),
                winners=entry.get("expected_winners"),
                ideas=entry.get("ideas") if isinstance(entry.get("ideas"), dict) else {},
                metadata=entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {},
            )
        )
    return out


def _read_parquet(path: Path) -> list[RawPair]:
    import polars as pl

    try:
        df = pl.read_parquet(path)
    except Exception as exc:  # polars raises several unrelated types for a bad file
        raise BadInputError(f"{path}: not a readable Parquet file ({exc})") from None
    required = {"id", "iclr_area", "expected_winner"} | {
        f"{f}_{s}" for f in ("idea", *_HUB_FIELDS) for s in _HUB_SIDES
    }
    missing = sorted(required - set(df.columns))
    if missing:
        raise BadInputError(f"{path}: missing columns {missing} (expected the Hub release's pairwise layout)")
    out = []
    for row in df.iter_rows(named=True):
        ideas, meta, hint = {}, {}, {}
        for slot, side in enumerate(_HUB_SIDES):
            ideas[slot] = row[f"idea_{side}"]
            meta[slot] = {
                "area": row["iclr_area"],
                "title": row[f"title_{side}"],
                "type": row[f"label_{side}"],
                "rating": row[f"rating_{side}"],
                "contribution": row[f"contribution_{side}"],
                "positive_signals": row[f"positive_signals_{side}"],
                "negative_signals": row[f"negative_signals_{side}"],
            }
            hint[slot] = row[f"idea_source_{side}"]
        winner = row["expected_winner"]
        out.append(
            RawPair(
                key=str(row["id"]),
                context=row["iclr_area"],
                winners=[winner] if winner is not None else None,
                ideas=ideas,
                metadata=meta,
                source_hint=hint,
            )
        )
    return out
