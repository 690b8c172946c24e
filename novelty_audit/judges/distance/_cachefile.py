"""Checked cache entries of the distance judges (embedding shards, TF-IDF fits, corpus densities).

Every entry is one file `<digest of its key>.<kind>.chk`, written atomically:

    NACHK1\\n
    {"key": {...}, "sha256": "<sha256 of the payload>", "size": <payload bytes>}\\n
    <payload (an .npz or .npy image)>

The key is everything that decides the payload (model identity, corpus digest, cutoff, k, ...), so an
entry names what it holds and a reader compares it with what it needs, not only a file name prefix.
Reading checks the magic, the header, the size, the sha256, that the file name matches the key and
that the payload decodes; an entry failing any check is moved to `corrupt/` beside it with a warning
naming the file, and the caller recomputes. `verify_distance_caches` runs the same checks over a whole
cache root for `novelty-audit verify`.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import orjson

from ...artifacts import atomic_write_bytes, digest_bytes, digest_obj

__all__ = ["CorruptEntry", "entry_path", "read_entry", "write_entry", "verify_distance_caches", "DISTANCE_CACHE_DIRS"]

log = logging.getLogger("novelty_audit.judges.distance")

MAGIC = b"NACHK1\n"
SUFFIX = ".chk"
DISTANCE_CACHE_DIRS = ("embeddings", "distance")
"""Subdirectories of a judges' cache root that hold distance-judge entries."""
_QUARANTINE = "corrupt"

T = TypeVar("T")


class CorruptEntry(Exception):
    """A cache entry that failed a check; the message is the reason."""


def entry_path(directory: Path, key: Mapping[str, Any], kind: str) -> Path:
    """Where the entry for `key` lives: the file name is the key's digest, so a key names one file."""
    return Path(directory) / f"{digest_obj(dict(key))[:24]}.{kind}{SUFFIX}"


def write_entry(path: Path, key: Mapping[str, Any], payload: bytes) -> Path:
    header = orjson.dumps({"key": dict(key), "sha256": digest_bytes(payload), "size": len(payload)}, option=orjson.OPT_SORT_KEYS)
    return atomic_write_bytes(path, MAGIC + header + b"\n" + payload)


def _split(path: Path, data: bytes) -> tuple[dict[str, Any], bytes]:
    """(key, payload) of an entry's bytes, or CorruptEntry saying which check failed."""
    if not data.startswith(MAGIC):
        raise CorruptEntry("not a checked cache entry (bad magic)")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise CorruptEntry("header is cut off")
    try:
        header = orjson.loads(data[len(MAGIC) : end])
        key, want, size = header["key"], header["sha256"], header["size"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise CorruptEntry(f"unreadable header ({type(exc).__name__})") from None
    if not isinstance(key, dict):
        raise CorruptEntry("unreadable header (key is not a mapping)")
    payload = data[end + 1 :]
    if len(payload) != size:
        raise CorruptEntry(f"payload is {len(payload)} bytes, header says {size}")
    if digest_bytes(payload) != want:
        raise CorruptEntry("sha256 of the payload differs from its header")
    if path.name.split(".", 1)[0] != digest_obj(key)[:24]:
        raise CorruptEntry("file name does not match the key in its header")
    return key, payload


def _decode_check(payload: bytes) -> None:
    """Every entry's payload is an .npy or .npz image; decode it fully so a bad one is caught here."""
    if payload.startswith(b"PK"):
        with np.load(io.BytesIO(payload), allow_pickle=False) as z:
            for name in z.files:
                z[name]
    else:
        np.load(io.BytesIO(payload), allow_pickle=False)


def _quarantine(path: Path, data: bytes | None, reason: str) -> None:
    log.warning("%s: corrupt distance cache entry (%s); discarded and recomputed", path, reason)
    target = path.parent / _QUARANTINE / f"{path.name}.{digest_bytes(data or b'')[:12]}"
    try:
        # Only move what we judged: a concurrent writer may have replaced the file with a good entry.
        if data is not None and path.read_bytes() != data:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    except FileNotFoundError:
        pass  # another process moved or replaced it first
    except OSError as exc:
        log.warning("%s: could not move the corrupt entry aside (%s); it is ignored", path, exc)


def read_entry(path: Path, key: Mapping[str, Any] | Callable[[Mapping[str, Any]], bool], decode: Callable[[bytes], T]) -> T | None:
    """The decoded payload of the entry at `path`, or None when it is absent or fails a check.

    `key` is the exact key the caller needs, or a predicate over the stored key (readers that glob a
    directory, such as embedding shards of one model). A failing entry is moved aside with a warning.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _quarantine(path, None, f"unreadable: {type(exc).__name__}: {exc}")
        return None
    try:
        stored, payload = _split(path, data)
        ok = key(stored) if callable(key) else digest_obj(stored) == digest_obj(dict(key))
        if not ok:
            raise CorruptEntry("its key is not the one this file name stands for")
        try:
            return decode(payload)
        except Exception as exc:  # numpy/zipfile raise many types on damaged images; all mean "do not use"
            raise CorruptEntry(f"payload does not decode ({type(exc).__name__}: {exc})") from None
    except CorruptEntry as exc:
        _quarantine(path, data, str(exc))
        return None


def _entries(cache_root: Path) -> Iterator[Path]:
    for sub in DISTANCE_CACHE_DIRS:
        base = Path(cache_root) / sub
        if not base.is_dir():
            continue
        for p in sorted(base.rglob(f"*{SUFFIX}")):
            if _QUARANTINE not in p.relative_to(base).parts and p.is_file():
                yield p


def verify_distance_caches(cache_root: Path) -> list[tuple[str, str]]:
    """(file path, reason) for every corrupt distance-judge cache entry under `cache_root` (the judges'
    cache directory, `<store root>/cache`). Entries already moved to `corrupt/` are not in use and are
    not listed. Reads only; never raises on a damaged file."""
    bad: list[tuple[str, str]] = []
    for p in _entries(Path(cache_root)):
        try:
            _, payload = _split(p, p.read_bytes())
            try:
                _decode_check(payload)
            except Exception as exc:  # see read_entry
                raise CorruptEntry(f"payload does not decode ({type(exc).__name__}: {exc})") from None
        except CorruptEntry as exc:
            bad.append((str(p), str(exc)))
        except OSError as exc:
            bad.append((str(p), f"unreadable: {type(exc).__name__}: {exc}"))
    return bad
