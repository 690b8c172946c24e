"""The one shape every stage has: resolve identity → reuse, restore or compute → manifest.

`execute_stage` is what `stages/<name>.py` calls. It owns identity, reuse and atomic
publication; the stage supplies a pure `compute(tmp_dir) -> StageResult`.
"""

from __future__ import annotations

import errno
import importlib.util
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ManifestMismatchError
from ._code import PROJECT_PACKAGES, code_digest
from ._digest import digest_file, digest_obj
from ._dvc import check_declared_inputs, declared_run, unmanifested_inputs
from ._io import _DIR_MODE, temp_prefix
from ._lock import stage_lock
from ._manifest import MANIFEST_NAME, FileRecord, StageManifest, file_record, load_manifest, tool_versions, write_manifest
from ._store import Store
from ._temps import clean_stale_temps
from ._verify import PublishedInputs

__all__ = ["StageResult", "StageInput", "execute_stage", "stage_identity"]

log = logging.getLogger("novelty_audit.artifacts")


@dataclass(frozen=True)
class StageInput:
    """An input file, optionally with the columns that identify its rows (for per-item digests)."""

    path: Path
    key: list[str] | None = None


@dataclass
class StageResult:
    """What `compute` returns: output files (relative to the output dir) with their row keys, and counts."""

    outputs: dict[str, list[str] | None]
    summary: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    """Run facts (API calls made, cache hits, cost): go to the run log, never to the manifest."""
    complete: bool = True
    """False when the outputs hold failures a rerun can fix (failed API calls): they are published and stored,
    but never reused or restored by identity, so the next run computes again (and asks only what failed)."""
    incomplete_reason: str | None = None
    """One line saying what is missing, e.g. "12 calls failed: HTTP 500"."""


def _record_path(p: Path, root: Path) -> str:
    """How an input is named in a manifest: relative to the project, or to the installed package.

    Package data (prompt templates) is named from the package root, so a stage's identity does not
    depend on where the checkout or the virtualenv lives.
    """
    if not p.is_absolute():
        return p.as_posix()
    resolved = p.resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        pass
    for pkg in PROJECT_PACKAGES:
        spec = importlib.util.find_spec(pkg)
        if spec and spec.origin:
            base = Path(spec.origin).resolve().parent.parent
            try:
                return resolved.relative_to(base).as_posix()
            except ValueError:
                continue
    return resolved.as_posix()


def _input_record(path: Path, key: list[str] | None, root: Path, published: PublishedInputs) -> FileRecord:
    """One input's record, its bytes hashed once: checked against the manifest of the stage that published it
    (before it is parsed), whose record then also gives the table digest, rows and items without reading it again."""
    name = _record_path(path, root)
    sha = digest_file(path)
    upstream = published.record(path, sha, shown=name)
    if upstream is not None and upstream.key == key:
        return upstream.model_copy(update={"path": name})
    if upstream is not None and key is None:
        return FileRecord(path=name, sha256=sha, size=upstream.size, digest=upstream.digest, rows=upstream.rows)
    return file_record(path, key=key, sha256=sha).model_copy(update={"path": name})


def _check_declared_upstream(deps: Sequence[str], root: Path, published: PublishedInputs, read: set[str]) -> None:
    """The stage outputs among a stage's DVC deps that its identity does not read are checked too (the metrics
    stage declares artifacts/pin): a changed upstream artifact stops every stage that depends on it, as it
    would make `dvc repro` rerun them. Each file not hashed for the identity is hashed here, once."""
    for dep in deps:
        stage_dir = Path(root) / dep
        m = published.manifest(stage_dir) if stage_dir.is_dir() else None
        if m is None:
            continue  # data or code, or a stage not run yet
        for rec in m.outputs:
            f = stage_dir / rec.path
            shown = _record_path(f, root)
            if shown in read:
                continue
            if not f.is_file():
                raise ManifestMismatchError(
                    f"{shown}: missing; stage {m.stage}'s manifest records it as an output",
                    hint=f"run `novelty-audit stage {m.stage}` or `dvc repro {m.stage}`",
                )
            published.record(f, digest_file(f), shown=shown)


def _input_records(inputs: Sequence[StageInput], root: Path, published: PublishedInputs) -> list[FileRecord]:
    recs = []
    for inp in inputs:
        p = Path(inp.path)
        if p.is_dir():
            # A directory input is described by its files, each hashed on its own.
            for f in sorted(x for x in p.rglob("*") if x.is_file() and not x.name.startswith(".")):
                recs.append(_input_record(f, None, root, published))
            continue
        recs.append(_input_record(p, inp.key, root, published))
    return recs


def stage_identity(code: str, params_digest: str, inputs: list[FileRecord]) -> str:
    return digest_obj({"code": code, "params": params_digest, "inputs": sorted((r.path, r.digest) for r in inputs)})


def _outputs_match(out_dir: Path, manifest: StageManifest) -> bool:
    for rec in manifest.outputs:
        p = out_dir / rec.path
        if not p.is_file() or digest_file(p) != rec.sha256:
            return False
    return True


def _current(out_dir: Path) -> StageManifest | None:
    """The manifest published in `out_dir`; an unreadable one counts as none (the stage recomputes)."""
    if not (out_dir / MANIFEST_NAME).is_file():
        return None
    try:
        return load_manifest(out_dir)
    except ManifestMismatchError as exc:
        log.warning("%s; recomputing", exc.message)
        return None


def _reusable(current: StageManifest | None, identity: str, out_dir: Path, store: Store) -> bool:
    if current is None or current.identity != identity or not current.complete:
        return False
    # The store names what this identity produced; a published manifest that differs (an edited summary)
    # is not reused but replaced from the store.
    stored = store.manifest_digest_for_identity(identity)
    if stored is not None and stored != current.digest():
        log.warning("%s differs from the stored manifest of its identity; restoring it", out_dir / MANIFEST_NAME)
        return False
    return _outputs_match(out_dir, current)


def _stage_tmp(out_dir: Path) -> Path:
    """`.<stage>.<pid>.<random>` next to `out_dir`: the pid lets the next run remove a killed writer's leftovers."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=temp_prefix(out_dir.name)))


def _publish(tmp: Path, out_dir: Path) -> None:
    """Swap `tmp` in as `out_dir`, so readers see the old outputs or the new ones, never a mix.

    Never raises under contention: each attempt moves the current directory aside under a name of its own
    (pid + random), and when another publisher slipped its directory in between (ENOTEMPTY/EEXIST) the
    swap is retried. The stage lock makes that rare; this keeps it correct without it.
    """
    os.chmod(tmp, _DIR_MODE)  # mkdtemp makes it owner-only; the published directory gets the usual mode
    for _ in range(1000):
        old = out_dir.with_name(f"{temp_prefix(out_dir.name)}{uuid.uuid4().hex[:12]}.old")
        try:
            os.replace(out_dir, old)
        except FileNotFoundError:
            old = None
        try:
            os.replace(tmp, out_dir)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
    raise OSError(errno.EBUSY, f"could not publish {out_dir}: 1000 concurrent replacements in a row")


def _clean_leftovers(out_dir: Path, store: Store) -> None:
    clean_stale_temps(out_dir.parent, f".{out_dir.name}.*")
    for sub in ("objects", "manifests"):
        clean_stale_temps(store.root / sub, ".*.tmp", recursive=True)


def execute_stage(
    name: str,
    *,
    code_root: str,
    params: Mapping[str, Any],
    inputs: Sequence[StageInput],
    out_dir: Path,
    store: Store,
    compute: Callable[[Path], StageResult],
    workdir: Path | None = None,
    force: bool = False,
) -> StageManifest:
    """Run one stage with content-addressed reuse, holding the stage's lock (`stage_lock`).

    - the outputs in `out_dir` already match this identity (and a complete manifest) → nothing is done;
    - the store holds a complete manifest and intact objects for this identity → they are restored byte for byte;
    - otherwise `compute` writes into a temporary sibling directory that replaces
      `out_dir` only once everything, manifest included, is written.
    `force=True` computes even when the identity is known (the outputs must then be equal).
    An incomplete result (`StageResult.complete=False`) is published and stored like any other, and the
    returned manifest says so; it is never reused, so the next run computes again.
    When `workdir/dvc.yaml` declares this stage with `out_dir` as an out, every identity input must be one
    of its deps (ConfigError naming the line to add otherwise).
    Every input another stage published (a file under a directory holding a stage manifest) is checked against
    that manifest, and the manifest against the store, before anything parses it: a changed file stops the run
    with a ManifestMismatchError (exit 2) naming it and the stage to rerun (`PublishedInputs`).
    """
    started = time.perf_counter()
    root = Path(workdir or Path.cwd())
    out_dir = Path(out_dir)
    with stage_lock(store.root, name):
        _clean_leftovers(out_dir, store)
        code = code_digest(code_root)
        params_digest = digest_obj(dict(params))
        published = PublishedInputs(store, reader=name)
        in_recs = _input_records(inputs, root, published)
        check_declared_inputs(name, [r.path for r in in_recs], out_dir, root)
        declared = declared_run(name, out_dir, root)
        if declared is not None:
            _check_declared_upstream(declared.deps, root, published, {r.path for r in in_recs})
        for upstream, paths in unmanifested_inputs(name, [r.path for r in in_recs], root).items():
            log.warning("stage %s: %d input(s) under stage %s's outputs have no manifest to check them against, read as they are: %s",
                        name, len(paths), upstream, ", ".join(paths[:5]) + (" …" if len(paths) > 5 else ""))
        identity = stage_identity(code.digest, params_digest, in_recs)
        facts: dict[str, Any] = {"stage": name, "identity": identity, "started": datetime.now(timezone.utc).isoformat()}

        if not force:
            current = _current(out_dir)
            if _reusable(current, identity, out_dir, store):
                store.log_run_facts({**facts, "action": "reused", "seconds": round(time.perf_counter() - started, 4)})
                return current

            known = store.manifest_for_identity(identity)
            if known is not None:
                tmp = _stage_tmp(out_dir)
                try:
                    if all(store.restore_file(rec.sha256, tmp / rec.path) for rec in known.outputs):
                        write_manifest(tmp, known)
                        _publish(tmp, out_dir)
                        store.log_run_facts({**facts, "action": "restored", "seconds": round(time.perf_counter() - started, 4)})
                        return known
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)

        tmp = _stage_tmp(out_dir)
        try:
            result = compute(tmp)
            out_recs = [file_record(tmp / rel, relative_to=tmp, key=key) for rel, key in sorted(result.outputs.items())]
            manifest = StageManifest(
                stage=name,
                identity=identity,
                code=code,
                params_digest=params_digest,
                params=dict(params),
                inputs=in_recs,
                outputs=out_recs,
                tools=tool_versions(),
                summary=result.summary,
                complete=result.complete,
                incomplete_reason=None if result.complete else (result.incomplete_reason or "incomplete"),
            )
            write_manifest(tmp, manifest)
            for rec in out_recs:
                store.put_file(tmp / rec.path, rec.sha256)
            store.put_manifest(manifest)
            _publish(tmp, out_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        action = "computed" if result.complete else "computed-incomplete"
        store.log_run_facts({**facts, **result.facts, "action": action, "seconds": round(time.perf_counter() - started, 4)})
        return manifest
