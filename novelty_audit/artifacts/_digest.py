"""Canonical bytes and digests.

Identity payloads are encoded with orjson and sorted keys. Floats become fixed strings
(`repr`, the shortest round-trip form, stable across platforms) so an identity never
depends on a float formatter, and NaN/inf are refused because they have no canonical
JSON form. Tables are hashed row by row over a canonical encoding, rows sorted, so the
digest depends neither on row order nor on the Parquet writer.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ..errors import NoveltyAuditError, PinMismatchError

__all__ = [
    "canonical",
    "canonical_bytes",
    "digest_bytes",
    "digest_obj",
    "digest_file",
    "digest_rows",
    "digest_table",
    "row_digests",
    "short_id",
]

_CHUNK = 1 << 20


def canonical(value: Any) -> Any:
    """Return `value` with floats turned into fixed strings and containers normalized."""
    # Exact built-in types first (a call key walks every message of a prompt, ~60,000 keys in a paper-scale
    # rerun); subclasses and other types take the general path below, with the same result.
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict:
        return {k if type(k) is str else str(k): canonical(v) for k, v in value.items()}
    if t is list:
        return [canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise NoveltyAuditError(f"cannot hash a non-finite float ({value!r}) inside an identity payload")
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, Path):
        return value.as_posix()
    if hasattr(value, "model_dump"):
        return canonical(value.model_dump(mode="python"))
    raise TypeError(f"no canonical encoding for {type(value).__name__}")


def canonical_bytes(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, floats as fixed strings, no NaN."""
    return orjson.dumps(canonical(value), option=orjson.OPT_SORT_KEYS)


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_obj(value: Any) -> str:
    """sha256 of the canonical encoding of `value`."""
    return digest_bytes(canonical_bytes(value))


def digest_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def check_pinned_file(path: str | Path, sha256: str, *, what: str, hint: str) -> None:
    """Refuse a pinned file whose bytes do not match its sha256 pin (`what`: how the message names the file)."""
    actual = digest_file(path)
    if actual != sha256:
        raise PinMismatchError(
            f"{what} does not match its pin\n  expected sha256 {sha256}\n  actual   sha256 {actual}", hint=hint
        )


def short_id(prefix: str, *parts: str) -> str:
    """A readable content-derived id: `prefix` + 16 hex of sha256 over the parts."""
    return f"{prefix}{digest_obj(list(parts))[:16]}"


def digest_rows(rows: Iterable[Mapping[str, Any]]) -> str:
    """Order-independent digest of a collection of records."""
    encoded = sorted(canonical_bytes(r) for r in rows)
    h = hashlib.sha256()
    for line in encoded:
        h.update(line)
        h.update(b"\n")
    return h.hexdigest()


def row_digests(df: pl.DataFrame, columns: list[str] | None = None) -> list[str]:
    """Per-row digests over `columns` (default: all), in the frame's row order."""
    cols = columns or df.columns
    return [digest_obj(r) for r in df.select(cols).to_dicts()]


def digest_table(df: pl.DataFrame) -> str:
    """Digest of a table's content: column names plus the sorted canonical rows."""
    h = hashlib.sha256()
    h.update(canonical_bytes({"columns": sorted(df.columns)}))
    h.update(b"\n")
    h.update(digest_rows(df.to_dicts()).encode())
    return h.hexdigest()
