"""The bytes of one call-cache entry: `{format, key, sha256, value}`, shared by the local and the shared cache.

The checksum is over the value's exact bytes, so any edit of any field is caught on read."""

from __future__ import annotations

from typing import Any

import orjson

from ..artifacts import digest_bytes

__all__ = ["ENTRY_FORMAT", "decode_entry", "encode_entry"]

ENTRY_FORMAT = 2
"""Entries of format 1 (before checksums) were bare values; their keys (no endpoint) are never looked up."""


def _value_sha256(value: Any) -> str:
    # Exact bytes (not canonical fixed-decimal floats): any edit of any field must change the checksum.
    return digest_bytes(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def encode_entry(key: str, value: dict[str, Any]) -> bytes:
    """The file bytes of one entry (sorted keys, one line): `{"format", "key", "sha256", "value"}` as
    `orjson.dumps(entry, OPT_SORT_KEYS)` writes it, with the value serialized once for its checksum and the line."""
    data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    head = orjson.dumps({"format": ENTRY_FORMAT, "key": key, "sha256": digest_bytes(data)}, option=orjson.OPT_SORT_KEYS)
    return head[:-1] + b',"value":' + data + b"}\n"


def decode_entry(data: bytes, key: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """(value, None) for a sound entry, (None, reason) otherwise. `key`: the key its file name gives."""
    try:
        entry = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None, "not valid JSON"
    if not isinstance(entry, dict) or "format" not in entry:
        return None, "no checksum: written by an older novelty-audit under a key no longer used; delete it"
    if entry.get("format") != ENTRY_FORMAT or set(entry) != {"format", "key", "sha256", "value"}:
        return None, f"unknown entry layout (format {entry.get('format')!r})"
    value = entry["value"]
    if not isinstance(value, dict):
        return None, "the value is not a JSON object"
    if key is not None and entry["key"] != key:
        return None, f"holds the entry of another key ({str(entry['key'])[:16]}…)"
    if _value_sha256(value) != entry["sha256"]:
        return None, "checksum mismatch: the stored answer was changed after it was written"
    return value, None
