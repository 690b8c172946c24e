"""What dvc.yaml declares for a stage, and the check that a stage's identity inputs are all DVC deps.

A file that decides a stage's outputs is in its identity (our reuse) and must be a DVC dependency
(DVC's decision to run the stage at all); otherwise editing it leaves `dvc status` clean and nothing
reruns. The identity is computed from what the stage actually reads, so it is the reference: every
identity input must lie under a declared dep of the stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import ConfigError

__all__ = ["DeclaredStage", "declared_stages", "uncovered_inputs", "check_declared_inputs"]


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


def check_declared_inputs(name: str, input_paths: list[str], out_dir: Path, root: Path) -> None:
    """Refuse to run stage `name` into its dvc.yaml-declared output when an identity input is not a dep.

    Applies only when `root/dvc.yaml` declares `name` with `out_dir` as an out: other runs of the same
    code (the drift flow's canary into its own store, library tests) are not DVC stages.
    """
    dvc_yaml = Path(root) / "dvc.yaml"
    if not dvc_yaml.is_file():
        return
    declared = declared_stages(dvc_yaml).get(name)
    if declared is None:
        return
    try:
        rel = Path(out_dir).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return
    if rel not in {_norm(o) for o in declared.outs}:
        return
    missing = uncovered_inputs(input_paths, declared.deps)
    if missing:
        lines = "\n".join(f"      - {p}" for p in missing)
        raise ConfigError(
            f"stage {name}: {len(missing)} input(s) decide its outputs but are not DVC dependencies, so "
            f"`dvc repro` would not rerun it when they change: {', '.join(missing)}",
            hint=f"add under `stages: {name}: deps:` in {dvc_yaml}:\n{lines}\n(or move the file under a declared dep)",
        )
