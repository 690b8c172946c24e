"""Typed stage manifests.

A manifest holds content only (code, params, input and output digests, tool versions,
counts), so the same identity always yields a byte-identical manifest. Run facts such as
start time, host and duration go to the store's run log, which is never hashed.
"""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ManifestMismatchError
from ._code import CodeDigest
from ._digest import digest_file, digest_obj, digest_table, row_digests
from ._io import read_json, write_json

__all__ = [
    "FileRecord",
    "StageManifest",
    "file_record",
    "load_manifest",
    "write_manifest",
    "tool_versions",
    "MANIFEST_NAME",
]

MANIFEST_NAME = "manifest.json"
_TOOLS = ("polars", "pyarrow", "orjson", "numpy", "scipy", "duckdb", "dvc", "prefect")


class FileRecord(BaseModel):
    """One input or output file.

    `digest` is the content digest used in identities: for Parquet tables it is the
    order-independent table digest, never the Parquet bytes; for other files the sha256
    of the bytes. `sha256` is always the byte digest, which `verify` checks.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str
    sha256: str
    size: int
    digest: str
    rows: int | None = None
    key: list[str] | None = None
    """Columns that identify a row; `items` maps their joined values to row digests."""
    items: dict[str, str] | None = None


class StageManifest(BaseModel):
    """What a stage read, how it was configured, what code ran, and what it wrote."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    stage: str
    identity: str
    """digest(code, params, inputs): same identity, byte-identical outputs."""
    code: CodeDigest
    params_digest: str
    params: dict[str, Any]
    inputs: list[FileRecord]
    outputs: list[FileRecord]
    tools: dict[str, str]
    summary: dict[str, Any] = Field(default_factory=dict)
    """Counts and other content-derived facts, e.g. pairs per dataset, exclusions."""
    complete: bool = True
    """False when the outputs hold failures that a rerun can fix (failed API calls): published so nothing is
    lost and verify works, but never reused or restored by identity: the next run computes again."""
    incomplete_reason: str | None = None
    """One line saying what is missing, e.g. "12 calls failed: HTTP 500"."""

    def content(self) -> dict[str, Any]:
        """What is written and hashed. A complete manifest leaves out `complete`/`incomplete_reason`, so its bytes
        and digest are those of manifests written before the fields existed (the ledger's older runs still verify)."""
        exclude = {"complete", "incomplete_reason"} if self.complete and self.incomplete_reason is None else set()
        return self.model_dump(mode="python", exclude=exclude)

    def digest(self) -> str:
        return digest_obj(self.content())

    def output(self, relpath: str) -> FileRecord:
        for rec in self.outputs:
            if rec.path == relpath:
                return rec
        raise KeyError(relpath)


def tool_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _TOOLS:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def file_record(
    path: Path, *, relative_to: Path | None = None, key: list[str] | None = None, sha256: str | None = None
) -> FileRecord:
    """Describe a file: byte digest, and for Parquet the table digest and per-item digests.

    `sha256`: the byte digest when the caller has just computed it, so a large file is not read twice for it.
    """
    path = Path(path)
    name = path.relative_to(relative_to).as_posix() if relative_to else path.as_posix()
    sha = sha256 or digest_file(path)
    size = path.stat().st_size
    if path.suffix != ".parquet":
        return FileRecord(path=name, sha256=sha, size=size, digest=sha)
    df = pl.read_parquet(path)
    items = None
    if key:
        missing = [k for k in key if k not in df.columns]
        if missing:
            raise ManifestMismatchError(f"{name}: key columns {missing} are not in the table")
        ids = ["|".join(str(v) for v in row) for row in df.select(key).iter_rows()]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise ManifestMismatchError(f"{name}: key {key} is not unique (e.g. {dup})")
        items = dict(sorted(zip(ids, row_digests(df), strict=True)))
    return FileRecord(
        path=name, sha256=sha, size=size, digest=digest_table(df), rows=df.height, key=key, items=items
    )


def write_manifest(out_dir: Path, manifest: StageManifest) -> Path:
    return write_json(Path(out_dir) / MANIFEST_NAME, manifest.content(), canonical_floats=True)


def load_manifest(path: Path) -> StageManifest:
    """Load a manifest from a stage output directory or a manifest file."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    if not path.exists():
        raise ManifestMismatchError(f"no manifest at {path}", hint="run the stage first (dvc repro)")
    # Floats were written as fixed strings; they stay strings on reload, and since
    # canonical() maps a float to that same string the manifest digest is unchanged.
    try:
        return StageManifest.model_validate(read_json(path))
    except (OSError, ValueError) as exc:  # orjson.JSONDecodeError and pydantic's ValidationError are ValueErrors
        raise ManifestMismatchError(
            f"{path}: unreadable manifest ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
            hint="rerun the stage to rewrite it (novelty-audit stage <name>, or dvc repro)",
        ) from None
