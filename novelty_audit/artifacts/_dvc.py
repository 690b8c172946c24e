"""What dvc.yaml declares for a stage, and the check that a stage's identity inputs are all DVC deps.

A file that decides a stage's outputs is in its identity (our reuse) and must be a DVC dependency
(DVC's decision to run the stage at all); otherwise editing it leaves `dvc status` clean and nothing
reruns. The identity is computed from what the stage actually reads, so it is the reference: every
identity input must lie under a declared dep of the stage.

Also what dvc.lock records for each output (`locked_outs`) and the md5 DVC computes for it (`dvc_md5`), so
`novelty-audit verify` can tell when the files on disk are not the ones DVC recorded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import ConfigError

__all__ = ["DeclaredStage", "declared_stages", "uncovered_inputs", "check_declared_inputs", "declared_run", "unmanifested_inputs", "LockedOut", "locked_outs", "dvc_md5"]


@dataclass(frozen=True)
class DeclaredStage:
    """One stage of dvc.yaml: its deps and its outs (every `outs:` and `metrics:`/`plots:` path)."""

    name: str
    deps: tuple[str, ...]
    outs: tuple[str, ...]


def _paths(entries: list | None) -> list[str]:
    out = []
    for e in entries or []:
        if isinstance(e, str):
            out.append(e)
        elif isinstance(e, dict):
            out.extend(str(k) for k in e)
    return out


def declared_stages(dvc_yaml: str | Path) -> dict[str, DeclaredStage]:
    """The stages of `dvc_yaml` in file order; a file DVC could not read either is a ConfigError."""
    path = Path(dvc_yaml)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    stages = doc.get("stages") if isinstance(doc, dict) else None
    if not isinstance(stages, dict):
        raise ConfigError(f"{path}: no `stages:` mapping")
    out = {}
    for name, spec in stages.items():
        spec = spec or {}
        outs = _paths(spec.get("outs")) + _paths(spec.get("metrics")) + _paths(spec.get("plots"))
        out[str(name)] = DeclaredStage(str(name), tuple(_paths(spec.get("deps"))), tuple(outs))
    return out


def _norm(p: str) -> str:
    return Path(p).as_posix().rstrip("/").removeprefix("./")


def uncovered_inputs(input_paths: list[str], deps: tuple[str, ...] | list[str]) -> list[str]:
    """Identity input paths (as recorded in a manifest) that no dep covers (equal to it or inside it)."""
    ds = [_norm(d) for d in deps]
    return sorted({p for p in input_paths if not any(_norm(p) == d or _norm(p).startswith(d + "/") for d in ds)})


def declared_run(name: str, out_dir: Path, root: Path) -> DeclaredStage | None:
    """The dvc.yaml stage this run is: `root/dvc.yaml` declares `name` with `out_dir` as an out; else None.

    Other runs of the same code (the drift flow's canary into its own store, library tests) are not DVC stages.
    """
    dvc_yaml = Path(root) / "dvc.yaml"
    if not dvc_yaml.is_file():
        return None
    declared = declared_stages(dvc_yaml).get(name)
    if declared is None:
        return None
    try:
        rel = Path(out_dir).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return None
    return declared if rel in {_norm(o) for o in declared.outs} else None


def check_declared_inputs(name: str, input_paths: list[str], out_dir: Path, root: Path) -> None:
    """Refuse to run stage `name` into its dvc.yaml-declared output when an identity input is not a dep.

    Applies only when the run is the declared stage (`declared_run`).
    """
    declared = declared_run(name, out_dir, root)
    if declared is None:
        return
    dvc_yaml = Path(root) / "dvc.yaml"
    missing = uncovered_inputs(input_paths, declared.deps)
    if missing:
        lines = "\n".join(f"      - {p}" for p in missing)
        raise ConfigError(
            f"stage {name}: {len(missing)} input(s) decide its outputs but are not DVC dependencies, so "
            f"`dvc repro` would not rerun it when they change: {', '.join(missing)}",
            hint=f"add under `stages: {name}: deps:` in {dvc_yaml}:\n{lines}\n(or move the file under a declared dep)",
        )


def unmanifested_inputs(name: str, input_paths: list[str], root: Path) -> dict[str, list[str]]:
    """Inputs of stage `name` (as recorded in a manifest) that lie under another stage's declared out holding no
    stage manifest: {that stage: paths}. Nothing vouches for such a file (a hand-made table, a deleted manifest).

    Empty when `root/dvc.yaml` is missing; an input under a manifest was checked against it already.
    """
    from ._manifest import MANIFEST_NAME

    dvc_yaml = Path(root) / "dvc.yaml"
    if not dvc_yaml.is_file():
        return {}
    out: dict[str, list[str]] = {}
    for stage in declared_stages(dvc_yaml).values():
        if stage.name == name:
            continue
        for o in map(_norm, stage.outs):
            inside = [p for p in input_paths if _norm(p).startswith(o + "/")]
            if inside and not (Path(root) / o / MANIFEST_NAME).is_file():
                out.setdefault(stage.name, []).extend(inside)
    return out


@dataclass(frozen=True)
class LockedOut:
    """One output as dvc.lock records it: the stage, the path, and DVC's md5 (`<md5>.dir` for a directory)."""

    stage: str
    path: str
    md5: str | None
    hash: str | None
    """`md5` in DVC 3 lock files (the md5 of the bytes); None in DVC 2 ones (md5 of text with CRLF turned into LF)."""


def locked_outs(dvc_lock: str | Path) -> list[LockedOut]:
    """Every `outs:` entry of `dvc_lock` in file order; a lock file that cannot be read is a ConfigError."""
    path = Path(dvc_lock)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot be read ({type(exc).__name__}: {exc})", hint="`dvc repro` rewrites it") from None
    stages = doc.get("stages") if isinstance(doc, dict) else None
    out = []
    for name, spec in (stages or {}).items() if isinstance(stages, dict) else ():
        for o in (spec or {}).get("outs") or []:
            if isinstance(o, dict) and "path" in o:
                out.append(LockedOut(str(name), _norm(str(o["path"])), o.get("md5"), o.get("hash")))
    return out


def _dvcignore(root: Path):
    """The project's .dvcignore as a matcher of paths relative to `root` (DVC leaves those files out of a directory's md5)."""
    import pathspec

    f = Path(root) / ".dvcignore"
    lines = f.read_text(encoding="utf-8").splitlines() if f.is_file() else []
    return pathspec.PathSpec.from_lines("gitwildmatch", lines)


def _md5_file(path: Path) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def dvc_md5(path: str | Path, root: str | Path = ".") -> str:
    """The md5 DVC 3 records for an output (`hash: md5`): of the bytes for a file; for a directory, `<md5>.dir`
    where the md5 is of the JSON list of its files' {md5, relpath}, sorted by relpath, as dvc-data builds it
    (files the project's .dvcignore matches are left out, as DVC leaves them out)."""
    p = Path(root) / path
    if not p.is_dir():
        return _md5_file(p)
    ignore = _dvcignore(Path(root))
    entries = []
    for f in sorted(x for x in p.rglob("*") if x.is_file()):
        if ignore.match_file(f.relative_to(root).as_posix()):
            continue
        entries.append({"md5": _md5_file(f), "relpath": f.relative_to(p).as_posix()})
    entries.sort(key=lambda e: e["relpath"])
    return hashlib.md5(json.dumps(entries, sort_keys=True).encode("utf-8"), usedforsecurity=False).hexdigest() + ".dir"
