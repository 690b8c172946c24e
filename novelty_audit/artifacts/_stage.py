"""The one shape every stage has: resolve identity → reuse, restore or compute → manifest.

`execute_stage` is what `stages/<name>.py` calls. It owns identity, reuse and atomic
publication; the stage supplies a pure `compute(tmp_dir) -> StageResult`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ._code import PROJECT_PACKAGES, code_digest
from ._digest import digest_file, digest_obj
from ._io import _DIR_MODE
from ._manifest import MANIFEST_NAME, FileRecord, StageManifest, file_record, load_manifest, tool_versions, write_manifest
from ._store import Store

__all__ = ["StageResult", "StageInput", "execute_stage", "stage_identity"]


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


def _input_records(inputs: Sequence[StageInput], root: Path) -> list[FileRecord]:
    recs = []
    for inp in inputs:
        p = Path(inp.path)
        if p.is_dir():
            # A directory input is described by its files, each hashed on its own.
            for f in sorted(x for x in p.rglob("*") if x.is_file() and not x.name.startswith(".")):
                recs.append(file_record(f).model_copy(update={"path": _record_path(f, root)}))
            continue
        rec = file_record(p, key=inp.key)
        recs.append(rec.model_copy(update={"path": _record_path(p, root)}))
    return recs


def stage_identity(code: str, params_digest: str, inputs: list[FileRecord]) -> str:
    return digest_obj({"code": code, "params": params_digest, "inputs": sorted((r.path, r.digest) for r in inputs)})


def _outputs_match(out_dir: Path, manifest: StageManifest) -> bool:
    for rec in manifest.outputs:
        p = out_dir / rec.path
        if not p.exists() or digest_file(p) != rec.sha256:
            return False
    return True


def _publish(tmp: Path, out_dir: Path) -> None:
    # Swap directories so readers see the old outputs or the new ones, never a mix.
    os.chmod(tmp, _DIR_MODE)  # mkdtemp makes it owner-only; the published directory gets the usual mode
    old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
    if out_dir.exists():
        os.replace(out_dir, old)
    os.replace(tmp, out_dir)
    shutil.rmtree(old, ignore_errors=True)


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
    """Run one stage with content-addressed reuse.

    - the outputs in `out_dir` already match this identity → nothing is done;
    - the store holds outputs for this identity → they are restored byte for byte;
    - otherwise `compute` writes into a temporary sibling directory that replaces
      `out_dir` only once everything, manifest included, is written.
    `force=True` computes even when the identity is known (the outputs must then be equal).
    """
    started = time.perf_counter()
    root = Path(workdir or Path.cwd())
    out_dir = Path(out_dir)
    code = code_digest(code_root)
    params_digest = digest_obj(dict(params))
    in_recs = _input_records(inputs, root)
    identity = stage_identity(code.digest, params_digest, in_recs)
    facts: dict[str, Any] = {"stage": name, "identity": identity, "started": datetime.now(timezone.utc).isoformat()}

    if not force and (out_dir / MANIFEST_NAME).exists():
        current = load_manifest(out_dir)
        if current.identity == identity and _outputs_match(out_dir, current):
            store.log_run_facts({**facts, "action": "reused", "seconds": round(time.perf_counter() - started, 4)})
            return current

    if not force:
        known = store.manifest_for_identity(identity)
        if known is not None:
            tmp = Path(tempfile.mkdtemp(dir=out_dir.parent if out_dir.parent.exists() else None, prefix=f".{out_dir.name}."))
            if all(store.restore_file(rec.sha256, tmp / rec.path) for rec in known.outputs):
                write_manifest(tmp, known)
                _publish(tmp, out_dir)
                store.log_run_facts({**facts, "action": "restored", "seconds": round(time.perf_counter() - started, 4)})
                return known
            shutil.rmtree(tmp, ignore_errors=True)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
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
        )
        write_manifest(tmp, manifest)
        for rec in out_recs:
            store.put_file(tmp / rec.path, rec.sha256)
        store.put_manifest(manifest)
        _publish(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    store.log_run_facts({**facts, **result.facts, "action": "computed", "seconds": round(time.perf_counter() - started, 4)})
    return manifest
