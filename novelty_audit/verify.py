"""`novelty-audit verify`: every file the project vouches for, checked against the digest that recorded it.

What is checked (each problem names the file, or the stage whose outputs are missing):

1. every stage directory under the artifacts root: each output against its manifest's sha256, the manifest
   readable, and equal to the store's manifest for its identity when the store has one;
2. every output dvc.yaml declares: a stage directory must exist with its manifest (else the stage is named);
   any other declared path (reports/…, cached or not) must be recorded by a stage as published with its
   sha256 (`novelty_audit.artifacts.publish_copy` / `record_published`), match it, and, where it is a copy
   of a stage output, match that output;
3. the store: every object against its sha256 name, every stored manifest against its digest name, every
   identity pointer against an existing manifest;
4. the caches (call cache, distance caches) through `novelty_audit.judges.verify_caches`;
5. dvc.lock: every output it records against the md5 DVC computes for it (`<md5>.dir` for a directory), so
   outputs that DVC did not record (a stage run by hand, a partial checkout) are named with the command that
   reconciles them. Entries in the DVC 2 format (no `hash: md5`) are listed as not checked; no dvc.lock is a note.

This module sits above the artifacts layer because it also asks the judges about their caches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .artifacts import (
    MANIFEST_NAME,
    Store,
    declared_stages,
    digest_file,
    dvc_md5,
    load_manifest,
    locked_outs,
    published_records,
    verify_tree,
)
from .errors import ConfigError, ManifestMismatchError
from .params import StoreParams, load_raw_params

__all__ = ["Problem", "VerifyReport", "verify_project"]


@dataclass(frozen=True)
class Problem:
    """One bad file (or a stage with missing outputs) and why."""

    path: str
    reason: str
    stage: str | None = None

    def line(self) -> str:
        return f"{self.path}: {self.reason}" + (f" (stage {self.stage})" if self.stage else "")


@dataclass
class VerifyReport:
    checked: int = 0
    """Files checked against a recorded digest."""
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Facts that are not failures, e.g. a stage whose published outputs are incomplete."""

    @property
    def ok(self) -> bool:
        return not self.problems


def _posix(p: Path) -> str:
    return p.as_posix().removeprefix("./")


def _check_stage_dirs(artifacts: Path, store: Store, report: VerifyReport) -> None:
    checked, bad = verify_tree(artifacts)
    report.checked += checked
    for m in bad:
        if m.reason:
            report.problems.append(Problem(m.path, m.reason, m.stage))
        elif m.actual is None:
            report.problems.append(Problem(m.path, f"missing (its manifest records sha256 {m.expected[:16]})", m.stage))
        else:
            report.problems.append(Problem(m.path, f"sha256 {m.actual[:16]} does not match its manifest's {m.expected[:16]}", m.stage))
    for mpath in sorted(artifacts.glob(f"*/{MANIFEST_NAME}")):
        try:
            m = load_manifest(mpath)
        except ManifestMismatchError:
            continue  # reported by verify_tree
        stored = store.manifest_digest_for_identity(m.identity)
        if stored is not None and stored != m.digest():
            report.problems.append(
                Problem(_posix(mpath), f"differs from the store's manifest {stored[:16]} for its identity {m.identity[:16]}", m.stage)
            )
        if not m.complete:
            report.notes.append(f"stage {m.stage}: published outputs are incomplete ({m.incomplete_reason}); the next run completes them")


def _check_declared(dvc_yaml: Path, artifacts: Path, report: VerifyReport) -> None:
    records: dict[str, tuple[str, dict]] = {}
    for stage, entries in published_records(artifacts).items():
        for path, rec in entries.items():
            if path == "":
                report.problems.append(Problem(str(rec.get("error")), "unreadable publish record", stage))
                continue
            records[path] = (stage, rec)
    stage_dirs = {_posix(artifacts / name) for name in declared_stages(dvc_yaml)}
    outputs = _manifest_outputs(artifacts)
    for name, spec in declared_stages(dvc_yaml).items():
        for out in spec.outs:
            out = out.rstrip("/")
            p = Path(out)
            if out in stage_dirs:
                if not (p / MANIFEST_NAME).is_file():
                    what = "is missing" if not p.exists() else f"has no {MANIFEST_NAME}"
                    report.problems.append(Problem(out, f"declared output {what}: the stage's outputs are missing (run it: dvc repro {name})", name))
                continue
            if not p.exists():
                report.problems.append(Problem(out, f"declared output is missing (run it: dvc repro {name})", name))
                continue
            files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
            for f in files:
                _check_published(_posix(f), name, records, outputs, report)


def _manifest_outputs(artifacts: Path) -> dict[str, str]:
    """sha256 → the stage output file (as recorded by its manifest) with those bytes."""
    out: dict[str, str] = {}
    for mpath in sorted(artifacts.glob(f"*/{MANIFEST_NAME}")):
        try:
            m = load_manifest(mpath)
        except ManifestMismatchError:
            continue
        for rec in m.outputs:
            out.setdefault(rec.sha256, _posix(mpath.parent / rec.path))
    return out


def _check_published(
    path: str, stage: str, records: dict[str, tuple[str, dict]], outputs: dict[str, str], report: VerifyReport
) -> None:
    found = records.get(path)
    if found is None:
        # No publish record (a fresh clone: records are local unless committed): a byte copy of an output that
        # a manifest records is still vouched for by that manifest's digest.
        report.checked += 1
        source = outputs.get(digest_file(path))
        if source is None:
            report.problems.append(
                Problem(path, "declared output recorded by no stage and equal to no recorded output, so it cannot be verified (rerun the stage)", stage)
            )
        return
    owner, rec = found
    report.checked += 1
    actual = digest_file(path)
    if actual != rec.get("sha256"):
        report.problems.append(Problem(path, f"sha256 {actual[:16]} does not match the {str(rec.get('sha256'))[:16]} its stage published", owner))
        return
    source = rec.get("source")
    if source:
        if not Path(source).is_file():
            report.problems.append(Problem(path, f"copies {source}, which is missing", owner))
        elif digest_file(source) != actual:
            report.problems.append(Problem(path, f"differs from {source}, the stage output it is a copy of", owner))


def _check_dvc_lock(dvc_yaml: Path, report: VerifyReport) -> None:
    lock = dvc_yaml.with_name("dvc.lock")
    if not lock.is_file():
        report.notes.append(f"no {_posix(lock)}: DVC has recorded no outputs here yet (`dvc repro` writes it), so none is checked against it")
        return
    root = dvc_yaml.parent
    declared = {o.rstrip("/") for spec in declared_stages(dvc_yaml).values() for o in spec.outs}
    matched, unchecked = 0, []
    for out in locked_outs(lock):
        p = root / out.path
        if out.md5 is None or out.hash != "md5":
            unchecked.append(out.path)
            continue
        if not p.exists():
            if out.path not in declared:  # a declared output that is missing is reported as such already
                report.problems.append(Problem(out.path, f"missing; {_posix(lock)} records it (md5 {out.md5[:12]})", out.stage))
            continue
        report.checked += 1
        actual = dvc_md5(out.path, root)
        if actual != out.md5:
            report.problems.append(Problem(
                out.path,
                f"not the output {_posix(lock)} records (md5 {actual[:12]}, recorded {out.md5[:12]}): run `dvc repro {out.stage}`, "
                f"or `dvc commit {out.stage}` to record these files as they are, or `dvc checkout {out.stage}` to restore the recorded ones",
                out.stage,
            ))
        else:
            matched += 1
    report.notes.append(f"{_posix(lock)}: {matched} recorded output(s) match what is on disk")
    if unchecked:
        report.notes.append(f"{_posix(lock)}: not checked (DVC 2 entries without `hash: md5`; `dvc repro` rewrites them): {', '.join(unchecked)}")


def verify_project(params_path: str | Path = "params.yaml", dvc_yaml: str | Path = "dvc.yaml") -> VerifyReport:
    """Check the artifacts, the published files dvc.yaml declares, the store and the caches (see the module doc)."""
    # Only the store section: verify checks files, and must work while another section is being fixed
    # (a misspelled judge backend makes the stage fail, not the check of what the last good run published).
    try:
        store_params = StoreParams.model_validate(load_raw_params(params_path).get("store") or {})
    except ValueError as exc:
        raise ConfigError(f"{params_path}: invalid `store:` section ({exc})") from None
    artifacts = Path(store_params.artifacts)
    store = Store(store_params.root)
    report = VerifyReport()
    _check_stage_dirs(artifacts, store, report)
    if Path(dvc_yaml).is_file():
        _check_declared(Path(dvc_yaml), artifacts, report)
        _check_dvc_lock(Path(dvc_yaml), report)
    for path, reason in store.verify():
        report.checked += 1
        report.problems.append(Problem(path, reason))
    from .judges import verify_caches

    for path, reason in verify_caches(Path(store_params.root) / "cache"):
        report.problems.append(Problem(str(path), reason))
    return report
