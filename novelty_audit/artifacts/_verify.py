"""Re-hash artifacts against the manifest that recorded them: all of them (`verify_tree`), or the ones a stage
is about to read (`PublishedInputs`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ..errors import ManifestMismatchError
from ._digest import digest_file
from ._io import read_json
from ._manifest import MANIFEST_NAME, FileRecord, StageManifest, load_manifest

if TYPE_CHECKING:
    from ._store import Store

__all__ = ["Mismatch", "verify_tree", "PublishedInputs", "check_published_file"]


class Mismatch(BaseModel):
    model_config = ConfigDict(frozen=True)
    stage: str
    path: str
    expected: str
    actual: str | None
    """None when the file is missing or unreadable."""
    reason: str | None = None
    """Why, when it is not a plain digest mismatch (an unreadable manifest)."""


def verify_tree(artifacts_root: Path) -> tuple[int, list[Mismatch]]:
    """Check every `*/manifest.json` under `artifacts_root`; return (files checked, mismatches)."""
    checked = 0
    bad: list[Mismatch] = []
    for mpath in sorted(Path(artifacts_root).glob(f"*/{MANIFEST_NAME}")):
        try:
            m = load_manifest(mpath)
        except ManifestMismatchError as exc:
            checked += 1
            bad.append(Mismatch(stage=mpath.parent.name, path=mpath.as_posix(), expected="a readable manifest", actual=None, reason=exc.message))
            continue
        for rec in m.outputs:
            p = mpath.parent / rec.path
            checked += 1
            actual = digest_file(p) if p.exists() else None
            if actual != rec.sha256:
                bad.append(Mismatch(stage=m.stage, path=p.as_posix(), expected=rec.sha256, actual=actual))
    return checked, bad


def _republish(stage: str) -> str:
    return (f"run `novelty-audit stage {stage}` (it restores the outputs its manifest records from the store, or "
            f"recomputes them) or `dvc repro {stage}`; `novelty-audit verify` lists every changed file")


class PublishedInputs:
    """Checks each file a stage is about to read against the manifest of the stage that published it.

    A file under a directory holding a stage manifest (`artifacts/<stage>/…`) must be one of that manifest's
    outputs with the same sha256, and the manifest itself must be one the store recorded, whenever the store
    knows its identity (a fresh clone's store may know nothing: the file check still applies). Anything else is
    a ManifestMismatchError naming the file and how to republish it, before the file is parsed. A file under no
    stage manifest (data, prompts, a hand-made table) is not a stage output and is not checked here: pins and
    identities cover data. Each manifest is loaded and digested once per instance.
    """

    def __init__(self, store: Store | None = None, *, reader: str | None = None):
        self._store = store
        self._who = f"stage {reader}: " if reader else ""
        self._manifests: dict[Path, StageManifest | None] = {}
        """directory → its stage manifest (checked), or None when it holds none"""
        self._publishers: dict[Path, tuple[Path, StageManifest] | None] = {}
        """directory → the nearest directory at or above it holding a stage manifest, with that manifest"""

    def record(self, path: str | Path, sha256: str, *, shown: str | None = None) -> FileRecord | None:
        """The publishing manifest's record of `path`, whose bytes hash to `sha256`; None when no stage published it.

        `shown` is how messages name the file (default: `path` as given).
        """
        full = Path(os.path.abspath(path))
        found = self._publisher(full.parent)
        if found is None:
            return None
        stage_dir, m = found
        name = shown or Path(path).as_posix()
        rel = full.relative_to(stage_dir).as_posix()
        if rel == MANIFEST_NAME:
            return None  # the manifest itself (a stage reading a whole stage directory): checked against the store on load
        try:
            rec = m.output(rel)
        except KeyError:
            raise ManifestMismatchError(
                f"{self._who}{name}: not an output of stage {m.stage} (its manifest {stage_dir / MANIFEST_NAME} records no such file)",
                hint=f"remove the file, or {_republish(m.stage)}",
            ) from None
        if rec.sha256 != sha256:
            raise ManifestMismatchError(
                f"{self._who}{name}: changed after stage {m.stage} published it (sha256 {sha256[:16]}, its manifest "
                f"records {rec.sha256[:16]})",
                hint=_republish(m.stage),
            )
        return rec

    def manifest(self, stage_dir: str | Path) -> StageManifest | None:
        """The manifest published in `stage_dir`, checked against the store; None when it holds no stage manifest."""
        d = Path(os.path.abspath(stage_dir))
        if d not in self._manifests:
            self._manifests[d] = self._load(d) if (d / MANIFEST_NAME).is_file() else None
        return self._manifests[d]

    def _publisher(self, directory: Path) -> tuple[Path, StageManifest] | None:
        """The nearest directory at or above `directory` holding a stage manifest, with that manifest."""
        walked: list[Path] = []
        found: tuple[Path, StageManifest] | None = None
        for d in (directory, *directory.parents):
            if d in self._publishers:
                found = self._publishers[d]
                break
            walked.append(d)
            m = self.manifest(d)
            if m is not None:
                found = (d, m)
                break
        for d in walked:
            self._publishers[d] = found
        return found

    def _load(self, stage_dir: Path) -> StageManifest | None:
        path = stage_dir / MANIFEST_NAME
        fix = _republish(stage_dir.name)
        try:
            raw = read_json(path)
        except (OSError, ValueError) as exc:
            raise ManifestMismatchError(
                f"{self._who}{path}: unreadable stage manifest ({type(exc).__name__}), so the files it published cannot be checked",
                hint=fix,
            ) from None
        if not (isinstance(raw, dict) and "stage" in raw and "identity" in raw):
            return None  # another tool's manifest.json: not a stage directory
        try:
            m = StageManifest.model_validate(raw)
        except ValueError as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise ManifestMismatchError(f"{self._who}{path}: unreadable stage manifest ({first})", hint=fix) from None
        store = self._store
        if store is not None and not store.has_manifest(m.digest()) and store.manifest_digest_for_identity(m.identity) is not None:
            raise ManifestMismatchError(
                f"{self._who}{path}: differs from the manifest the store recorded for its identity {m.identity[:16]} "
                f"(edited after stage {m.stage} published it)",
                hint=_republish(m.stage),
            )
        return m


def check_published_file(path: str | Path, store: Store | None = None) -> FileRecord | None:
    """Check one stage output against the manifest that published it before a command reads it (see
    `PublishedInputs`); its manifest record, or None when the file lies under no stage manifest."""
    return PublishedInputs(store).record(path, digest_file(path))
