"""The artifact store: content-addressed objects, stored manifests, the run log and the runs ledger.

Layout under the store root (default `.novelty-audit/`, set in params.yaml `store.root`):

    objects/ab/abcdef…      output files by sha256 of their bytes (checked against the name on every read)
    manifests/by-digest/<digest>.json     a manifest, named by the digest of its content (checked on read)
    manifests/by-identity/<identity>.json {identity, manifest: <digest>}: what a stage identity produced
    locks/<stage>.lock      one lock per stage across processes (CLI, flows, dvc)
    corrupt/                store files that failed their check: kept for inspection, never read
    runlog.jsonl            run facts per stage execution (time, host, duration); never hashed
    runs.jsonl              the runs ledger: one record per distinct pipeline run (with every time it was seen)
    cache/                  call and embedding caches (owned by the judges)

DVC decides whether to invoke a stage; the store decides whether a stage must compute
or can restore outputs for an identity it has already seen.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, model_validator

from ..errors import ManifestMismatchError, NoveltyAuditError
from ._digest import digest_bytes, digest_file, digest_obj
from ._io import atomic_write_bytes, exclusive_update, read_json, temp_prefix, write_json
from ._manifest import StageManifest

__all__ = ["Store", "RunRecord", "RunOccurrence"]

log = logging.getLogger("novelty_audit.artifacts")


class RunOccurrence(BaseModel):
    """One time a run was recorded: when, and at which git revision."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    time: str
    git_revision: str | None


class RunRecord(BaseModel):
    """One distinct pipeline run: the stage manifests it consisted of, and every time it was recorded.

    The ledger holds one record per run id; recording the same content again (a flow run or `dvc repro`
    on an up-to-date project) adds an occurrence to `seen` and makes the run the latest, nothing more.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    run_id: str
    """digest of the stage manifest digests: equal content, equal run id."""
    time: str
    """When the run was last recorded (the latest entry of `seen`)."""
    git_revision: str | None
    """The git revision it was last recorded at."""
    stages: dict[str, str]
    """stage name → manifest digest (manifests are kept under manifests/by-digest/)."""
    seen: list[RunOccurrence] = []
    """Every time this content was recorded, oldest first (a ledger written before `seen` existed gets its
    lines' times here when read)."""

    @model_validator(mode="before")
    @classmethod
    def _seen_at_least_once(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("seen"):
            data = {**data, "seen": [{"time": data.get("time"), "git_revision": data.get("git_revision")}]}
        return data

    @staticmethod
    def run_id_for(manifest_digests: Mapping[str, str]) -> str:
        """The run id of a set of stage manifests (stage name → manifest digest)."""
        return digest_obj(dict(sorted(manifest_digests.items())))[:16]

    def revisions(self) -> list[str]:
        """The git revisions this run was recorded at, without repeats, oldest first."""
        return list(dict.fromkeys(o.git_revision for o in self.seen if o.git_revision))

    def describe(self) -> str:
        """One line for listings: run id, last time, revisions, occurrences."""
        revs = ", ".join(r[:12] for r in self.revisions()) or "no git revision"
        return f"{self.run_id}  last recorded {self.time}  at {revs}  ({len(self.seen)}×)"


class Store:
    """A content-addressed store rooted at `root`."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    # -- objects -------------------------------------------------------------
    def object_path(self, sha256: str) -> Path:
        return self.root / "objects" / sha256[:2] / sha256

    def put_file(self, path: Path, sha256: str | None = None) -> str:
        """Store a copy of `path` under its sha256 (checked after copying; a corrupt stored copy is replaced)."""
        sha = sha256 or digest_file(path)
        target = self.object_path(sha)
        if target.exists() and self._object_ok(target, sha):
            return sha
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=temp_prefix(target.name), suffix=".tmp")
        os.close(fd)
        try:
            shutil.copyfile(path, tmp)
            if digest_file(tmp) != sha:
                raise ManifestMismatchError(f"{path}: its content changed while it was being stored (expected sha256 {sha[:16]})")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return sha

    def restore_file(self, sha256: str, dest: Path) -> bool:
        """Copy the object `sha256` to `dest` if the store holds an intact copy; a corrupt one is discarded."""
        src = self.object_path(sha256)
        if not src.exists():
            return False
        data = src.read_bytes()
        if digest_bytes(data) != sha256:
            self.discard(src, f"its content does not match its name (sha256 {sha256[:16]})")
            return False
        atomic_write_bytes(dest, data)
        return True

    def _object_ok(self, path: Path, sha256: str) -> bool:
        if digest_file(path) == sha256:
            return True
        self.discard(path, f"its content does not match its name (sha256 {sha256[:16]})")
        return False

    def discard(self, path: Path, why: str) -> None:
        """Move a corrupt store file to `<root>/corrupt/` (kept for inspection, never read again) and warn, naming it."""
        dest = self.root / "corrupt" / f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, dest)
            where = f"moved to {dest}"
        except FileNotFoundError:
            where = "already gone"
        log.warning("discarded corrupt store file %s: %s (%s); it will be recomputed", path, why, where)

    # -- manifests -----------------------------------------------------------
    # A manifest is stored once, under the digest of its content (by-digest/<digest>.json), and checked
    # against that name whenever it is read. by-identity/<identity>.json only points to a digest, so a value
    # edited in either file is detected instead of published.
    def put_manifest(self, manifest: StageManifest) -> str:
        d = manifest.digest()
        payload = manifest.content()
        by_digest = self.root / "manifests" / "by-digest" / f"{d}.json"
        if not (by_digest.exists() and self._load_by_digest(d) is not None):
            write_json(by_digest, payload, canonical_floats=True)
        pointer = self.root / "manifests" / "by-identity" / f"{manifest.identity}.json"
        # An incomplete manifest never replaces a complete one for the same identity (say under --force).
        if manifest.complete or (known := self.manifest_for_identity(manifest.identity)) is None or not known.complete:
            write_json(pointer, {"identity": manifest.identity, "manifest": d})
        return d

    def manifest_digest_for_identity(self, identity: str) -> str | None:
        """The digest of the stored manifest recorded for `identity` (None when unknown or corrupt)."""
        p = self.root / "manifests" / "by-identity" / f"{identity}.json"
        if not p.exists():
            return None
        d, problem = _read_pointer(p, identity)
        if d is None:
            self.discard(p, problem or "")
        return d

    def has_manifest(self, digest: str) -> bool:
        """Whether a manifest with this digest was stored (its content is checked on load and by `verify`)."""
        return (self.root / "manifests" / "by-digest" / f"{digest}.json").is_file()

    def manifest_for_identity(self, identity: str) -> StageManifest | None:
        """The complete manifest this identity produced before, checked against its digest; None if unknown."""
        d = self.manifest_digest_for_identity(identity)
        if d is None:
            return None
        m = self._load_by_digest(d)
        if m is None or m.identity != identity:
            return None
        return m if m.complete else None

    def manifest_by_digest(self, digest: str) -> StageManifest:
        p = self.root / "manifests" / "by-digest" / f"{digest}.json"
        if not p.exists():
            raise ManifestMismatchError(f"manifest {digest[:12]} is not in the store at {self.root}")
        m = self._load_by_digest(digest)
        if m is None:
            raise ManifestMismatchError(
                f"{p}: the stored manifest was corrupt (moved to {self.root / 'corrupt'})",
                hint="rerun the pipeline to store it again; a run recorded with it can no longer be compared",
            )
        return m

    def _load_by_digest(self, digest: str) -> StageManifest | None:
        p = self.root / "manifests" / "by-digest" / f"{digest}.json"
        if not p.exists():
            return None
        m, problem = _read_stored_manifest(p, digest)
        if m is None:
            self.discard(p, problem or "")
        return m

    def verify(self) -> list[tuple[str, str]]:
        """Check every object and stored manifest against its name; [(file, reason)] for each bad one. Reads only."""
        bad: list[tuple[str, str]] = []
        for p in sorted((self.root / "objects").glob("*/*")):
            if p.name.startswith(".") or not p.is_file():
                continue
            if digest_file(p) != p.name:
                bad.append((p.as_posix(), "store object: content does not match its sha256 name"))
        for p in sorted((self.root / "manifests" / "by-digest").glob("*.json")):
            _, problem = _read_stored_manifest(p, p.stem)
            if problem:
                bad.append((p.as_posix(), f"stored manifest: {problem}"))
        for p in sorted((self.root / "manifests" / "by-identity").glob("*.json")):
            d, problem = _read_pointer(p, p.stem)
            if problem:
                bad.append((p.as_posix(), f"stored manifest pointer: {problem}"))
            elif not (self.root / "manifests" / "by-digest" / f"{d}.json").exists():
                bad.append((p.as_posix(), f"stored manifest pointer: manifest {str(d)[:16]} is not in the store"))
        return bad

    # -- run log (never hashed) ---------------------------------------------
    def log_run_facts(self, facts: dict[str, Any]) -> None:
        self._append(self.root / "runlog.jsonl", {"host": socket.gethostname(), **facts})

    def run_facts(self, stage: str) -> list[dict[str, Any]]:
        return [r for r in self._read_lines(self.root / "runlog.jsonl") if r.get("stage") == stage]

    # -- runs ledger ---------------------------------------------------------
    def record_run(self, manifests: dict[str, StageManifest], *, cwd: Path | None = None) -> RunRecord:
        """Record a run in the ledger: a new run is appended; a run already there gets one more occurrence in
        `seen` and moves to the end (it is the latest again). Manifests are stored so any two runs can be
        compared later."""
        stages = {name: self.put_manifest(m) for name, m in sorted(manifests.items())}
        occurrence = RunOccurrence(time=datetime.now(timezone.utc).isoformat(timespec="seconds"), git_revision=_git_revision(cwd))
        run_id = RunRecord.run_id_for(stages)
        path = self.root / "runs.jsonl"
        with exclusive_update(path):
            runs = self.runs()
            known = next((r for r in runs if r.run_id == run_id), None)
            seen = [*(known.seen if known else []), occurrence]
            record = RunRecord(run_id=run_id, time=occurrence.time, git_revision=occurrence.git_revision, stages=stages, seen=seen)
            ledger = [r for r in runs if r.run_id != run_id] + [record]
            data = b"".join(orjson.dumps(r.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS) + b"\n" for r in ledger)
            atomic_write_bytes(path, data)
        return record

    def runs(self) -> list[RunRecord]:
        """The distinct runs, least recently recorded first (the last one is the latest run).

        Lines with the same run id (a ledger written before records were merged) are read as one run whose
        occurrences are all of theirs, placed where its last line is.
        """
        merged: dict[str, RunRecord] = {}
        for raw in self._read_lines(self.root / "runs.jsonl"):
            rec = RunRecord.model_validate(raw)
            prior = merged.pop(rec.run_id, None)
            if prior is not None:
                rec = rec.model_copy(update={"seen": [*prior.seen, *rec.seen]})
            merged[rec.run_id] = rec
        return list(merged.values())

    def find_run(self, ref: str) -> RunRecord:
        """The one run named by `ref`: a run id (or prefix), or a git revision (prefix, or anything `git rev-parse`
        resolves, e.g. HEAD~1) it was recorded at. A ref that matches several runs is an error listing them."""
        runs = self.runs()
        ledger = self.root / "runs.jsonl"
        if not runs:
            raise NoveltyAuditError(f"the runs ledger {ledger} is empty", hint="run `dvc repro` first")
        exact = [r for r in runs if r.run_id == ref]
        matches = exact or [r for r in runs if r.run_id.startswith(ref) or any(v.startswith(ref) for v in r.revisions())]
        if not matches:
            resolved = _git_resolve(ref)
            matches = [r for r in runs if resolved and resolved in r.revisions()]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NoveltyAuditError(f"no run matches '{ref}' in {ledger}", hint="see `novelty-audit runs`")
        listing = "\n".join(f"  {r.describe()}" for r in reversed(matches))
        raise NoveltyAuditError(
            f"'{ref}' matches {len(matches)} runs in {ledger} (latest first):\n{listing}",
            hint="name one run by its run id (or a longer prefix)",
        )

    # -- helpers -------------------------------------------------------------
    @staticmethod
    def _append(path: Path, record: dict[str, Any]) -> None:
        # One write() of one line with O_APPEND: concurrent appenders never interleave within a line.
        path.parent.mkdir(parents=True, exist_ok=True)
        line = orjson.dumps(record, option=orjson.OPT_SORT_KEYS) + b"\n"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    @staticmethod
    def _read_lines(path: Path) -> list[dict[str, Any]]:
        if not path.exists():
            return []
        out = []
        for line in path.read_bytes().splitlines():
            if line.strip():
                out.append(orjson.loads(line))
        return out


def _read_stored_manifest(path: Path, digest: str) -> tuple[StageManifest | None, str | None]:
    """(manifest, None) when `path` holds a manifest whose digest is `digest`, else (None, what is wrong).
    The one check behind both reading the store and `Store.verify`."""
    try:
        m = StageManifest.model_validate(read_json(path))
    except (OSError, ValueError) as exc:
        return None, f"unreadable ({type(exc).__name__})"
    if m.digest() != digest:
        return None, "its content does not match the digest in its name"
    return m, None


def _read_pointer(path: Path, identity: str) -> tuple[str | None, str | None]:
    """(manifest digest, None) when `path` points `identity` at a stored manifest, else (None, what is wrong).

    A store written before pointers held the whole manifest here: that is trusted only as far as its digest,
    whose by-digest copy is checked against its name when it is read."""
    try:
        raw = read_json(path)
    except (OSError, ValueError) as exc:
        return None, f"unreadable ({type(exc).__name__})"
    if not isinstance(raw, dict) or raw.get("identity") != identity:
        return None, "names another identity, or none"
    if set(raw) == {"identity", "manifest"}:
        d = raw["manifest"]
        if isinstance(d, str) and re.fullmatch(r"[0-9a-f]{64}", d):
            return d, None
        return None, "not a pointer to a stored manifest"
    try:
        return StageManifest.model_validate(raw).digest(), None
    except ValueError:
        return None, "neither a pointer nor a manifest of this identity"


def _git(args: list[str], cwd: Path | None) -> str | None:
    try:
        res = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.strip() if res.returncode == 0 and res.stdout.strip() else None


def _git_revision(cwd: Path | None) -> str | None:
    return _git(["rev-parse", "HEAD"], cwd)


def _git_resolve(ref: str) -> str | None:
    return _git(["rev-parse", "--verify", f"{ref}^{{commit}}"], None)
