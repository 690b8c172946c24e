"""The artifact store: content-addressed objects, stored manifests, the run log and the runs ledger.

Layout under the store root (default `.novelty-audit/`, set in params.yaml `store.root`):

    objects/ab/abcdef…      output files by sha256 of their bytes
    manifests/<identity>.json   the manifest a stage identity produced
    runlog.jsonl            run facts per stage execution (time, host, duration); never hashed
    runs.jsonl              the runs ledger: one record per pipeline run
    cache/                  call and embedding caches (owned by the judges)

DVC decides whether to invoke a stage; the store decides whether a stage must compute
or can restore outputs for an identity it has already seen.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from ..errors import ManifestMismatchError, NoveltyAuditError
from ._digest import digest_file, digest_obj
from ._io import atomic_write_bytes, read_json, write_json
from ._manifest import StageManifest

__all__ = ["Store", "RunRecord"]


class RunRecord(BaseModel):
    """One pipeline run: the stage manifests it consisted of, when, and at which git revision."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    run_id: str
    """digest of the stage manifest digests: equal content, equal run id."""
    time: str
    git_revision: str | None
    stages: dict[str, str]
    """stage name → manifest digest (manifests are kept under manifests/by-digest/)."""


class Store:
    """A content-addressed store rooted at `root`."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    # -- objects -------------------------------------------------------------
    def object_path(self, sha256: str) -> Path:
        return self.root / "objects" / sha256[:2] / sha256

    def put_file(self, path: Path, sha256: str | None = None) -> str:
        sha = sha256 or digest_file(path)
        target = self.object_path(sha)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            shutil.copyfile(path, tmp)
            os.replace(tmp, target)
        return sha

    def restore_file(self, sha256: str, dest: Path) -> bool:
        src = self.object_path(sha256)
        if not src.exists() or digest_file(src) != sha256:
            return False
        atomic_write_bytes(dest, src.read_bytes())
        return True

    # -- manifests -----------------------------------------------------------
    def put_manifest(self, manifest: StageManifest) -> str:
        d = manifest.digest()
        payload = manifest.model_dump(mode="python")
        write_json(self.root / "manifests" / "by-identity" / f"{manifest.identity}.json", payload, canonical_floats=True)
        write_json(self.root / "manifests" / "by-digest" / f"{d}.json", payload, canonical_floats=True)
        return d

    def manifest_for_identity(self, identity: str) -> StageManifest | None:
        p = self.root / "manifests" / "by-identity" / f"{identity}.json"
        return StageManifest.model_validate(read_json(p)) if p.exists() else None

    def manifest_by_digest(self, digest: str) -> StageManifest:
        p = self.root / "manifests" / "by-digest" / f"{digest}.json"
        if not p.exists():
            raise ManifestMismatchError(f"manifest {digest[:12]} is not in the store at {self.root}")
        return StageManifest.model_validate(read_json(p))

    # -- run log (never hashed) ---------------------------------------------
    def log_run_facts(self, facts: dict[str, Any]) -> None:
        self._append(self.root / "runlog.jsonl", {"host": socket.gethostname(), **facts})

    def run_facts(self, stage: str) -> list[dict[str, Any]]:
        return [r for r in self._read_lines(self.root / "runlog.jsonl") if r.get("stage") == stage]

    # -- runs ledger ---------------------------------------------------------
    def record_run(self, manifests: dict[str, StageManifest], *, cwd: Path | None = None) -> RunRecord:
        """Append one run to the ledger (manifests are stored so any two runs can be compared later)."""
        stages = {name: self.put_manifest(m) for name, m in sorted(manifests.items())}
        record = RunRecord(
            run_id=digest_obj(stages)[:16],
            time=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            git_revision=_git_revision(cwd),
            stages=stages,
        )
        self._append(self.root / "runs.jsonl", record.model_dump(mode="json"))
        return record

    def runs(self) -> list[RunRecord]:
        return [RunRecord.model_validate(r) for r in self._read_lines(self.root / "runs.jsonl")]

    def find_run(self, ref: str) -> RunRecord:
        """A run by run id (or prefix) or git revision (or prefix); the latest match wins."""
        runs = self.runs()
        if not runs:
            raise NoveltyAuditError(f"the runs ledger {self.root / 'runs.jsonl'} is empty", hint="run `dvc repro` first")
        for rec in reversed(runs):
            if rec.run_id.startswith(ref) or (rec.git_revision and rec.git_revision.startswith(ref)):
                return rec
        resolved = _git_resolve(ref)
        if resolved:
            for rec in reversed(runs):
                if rec.git_revision == resolved:
                    return rec
        raise NoveltyAuditError(f"no run matches '{ref}' in {self.root / 'runs.jsonl'}", hint="see `novelty-audit runs`")

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
