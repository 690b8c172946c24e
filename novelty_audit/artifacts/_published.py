"""Files a stage publishes outside its own directory (reports/…), each recorded with its sha256.

A stage directory is described by its manifest; a published copy (reports/sweeps.json is a byte copy
of artifacts/metrics/sweeps.json) or a file written next to the report (the latest audit, which reads
the runs ledger and so is not part of any identity) is not. Each is recorded in
`<artifacts root>/.published/<stage>.json` as {path: {sha256, source}}, where `source` names the
stage output it copies (or is null). `novelty-audit verify` checks every record: the file against its
sha256 and, for a copy, against the output it copies.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson

from ._digest import digest_bytes, digest_file
from ._io import atomic_write_bytes, exclusive_update
from ._manifest import MANIFEST_NAME, load_manifest

__all__ = ["PUBLISHED_DIR", "publish_copy", "record_published", "published_records"]

PUBLISHED_DIR = ".published"


def _records_path(artifacts_root: Path, stage: str) -> Path:
    return Path(artifacts_root) / PUBLISHED_DIR / f"{stage}.json"


def _name(path: Path) -> str:
    """How a published file is named in a record: relative to the working directory when it is inside it."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(path).resolve().as_posix()


def _update(artifacts_root: Path, stage: str, entries: dict[str, dict[str, str | None]]) -> None:
    path = _records_path(artifacts_root, stage)
    # Two stages (or runs) publishing at once keep both records.
    with exclusive_update(path):
        try:
            current = orjson.loads(path.read_bytes()) if path.exists() else {}
            if not isinstance(current, dict):
                current = {}
        except (OSError, ValueError):
            current = {}  # a corrupt record file is rewritten from what this run publishes
        current.update(entries)
        atomic_write_bytes(path, orjson.dumps(current, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")


def _stage_dir(src: Path) -> Path:
    for parent in Path(src).resolve().parents:
        if (parent / MANIFEST_NAME).is_file():
            return parent
    raise ValueError(f"{src} is not inside a stage output directory (no {MANIFEST_NAME} above it)")


def publish_copy(src: str | Path, dest: str | Path) -> Path:
    """Copy the stage output `src` to `dest` atomically and record the copy (for `verify`)."""
    src, dest = Path(src), Path(dest)
    stage_dir = _stage_dir(src)
    stage = load_manifest(stage_dir).stage
    data = src.read_bytes()
    if not dest.exists() or digest_file(dest) != digest_bytes(data):
        atomic_write_bytes(dest, data)
    _update(stage_dir.parent, stage, {_name(dest): {"sha256": digest_bytes(data), "source": _name(src)}})
    return dest


def record_published(paths: Iterable[str | Path], *, artifacts_root: str | Path, stage: str) -> None:
    """Record files `stage` wrote outside its directory that copy no output (e.g. the latest audit)."""
    entries: dict[str, dict[str, str | None]] = {_name(Path(p)): {"sha256": digest_file(p), "source": None} for p in paths}
    if entries:
        _update(Path(artifacts_root), stage, entries)


def published_records(artifacts_root: str | Path) -> dict[str, dict[str, dict[str, str | None]]]:
    """stage → {published path → {sha256, source}}; a record file that cannot be read maps to {"": {"error": …}}."""
    out: dict[str, dict[str, dict[str, str | None]]] = {}
    for p in sorted((Path(artifacts_root) / PUBLISHED_DIR).glob("*.json")):
        try:
            raw = orjson.loads(p.read_bytes())
            if not isinstance(raw, dict):
                raise ValueError("not a mapping")
        except (OSError, ValueError) as exc:
            out[p.stem] = {"": {"error": f"{p}: unreadable ({type(exc).__name__})"}}
            continue
        out[p.stem] = raw
    return out
