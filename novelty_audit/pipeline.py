"""Run stages by name, the way dvc.yaml and the Prefect flows both do.

dvc.yaml is the table of contents: its stage order is the pipeline order, and the last
stage of a run appends the run to the ledger. Stage modules are found by name
(`stages.<name>`) at run time, so the library never imports them statically.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .artifacts import MANIFEST_NAME, RunRecord, StageManifest, Store, load_manifest, stage_lock
from .errors import ConfigError, UnknownNameError
from .judges import validate_judges
from .params import Params, load_params

__all__ = ["load_checked_params", "stage_order", "run_stage", "record_run", "stage_out_dir", "current_manifests"]


def load_checked_params(path: str | Path = "params.yaml") -> Params:
    """params.yaml parsed and checked: every section against its model, and every configured judge, enabled or
    not, against its backend's args model, so a typo in any judge fails before any stage runs.

    The judge check is here, not in `params.load_params`: the judge registry sits above the params models (it
    validates against them), and a stage's code digest stays free of the judge backends it does not use."""
    params = load_params(path)
    validate_judges(params.judge, source=str(path))
    return params


def stage_order(dvc_yaml: str | Path = "dvc.yaml") -> list[str]:
    path = Path(dvc_yaml)
    if not path.exists():
        raise ConfigError(f"{path}: not found", hint="run from the project root")
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return list((doc.get("stages") or {}).keys())


def stage_out_dir(params: Params, name: str) -> Path:
    return Path(params.store.artifacts) / name


def _module(name: str):
    try:
        return importlib.import_module(f"stages.{name}")
    except ModuleNotFoundError as exc:
        if exc.name not in (f"stages.{name}", "stages"):
            raise
        import difflib

        known = stage_order() if Path("dvc.yaml").exists() else []
        close = difflib.get_close_matches(name, known)
        raise UnknownNameError(
            f"unknown stage '{name}'", hint=f"did you mean {', '.join(close)}?" if close else f"stages: {', '.join(known)}"
        ) from None


def current_manifests(params: Params, names: list[str]) -> dict[str, StageManifest]:
    out = {}
    for name in names:
        d = stage_out_dir(params, name)
        if (d / MANIFEST_NAME).exists():
            out[name] = load_manifest(d)
    return out


def record_run(params: Params, dvc_yaml: str | Path = "dvc.yaml") -> RunRecord:
    """Record the current state of every stage in dvc.yaml in the runs ledger.

    One record per distinct run: recording content the ledger already holds (a rerun on an up-to-date
    project, by dvc or a flow) adds an occurrence to that record's `seen` and makes it the latest run.
    """
    return Store(params.store.root).record_run(current_manifests(params, stage_order(dvc_yaml)))


def run_stage(
    name: str,
    *,
    params_path: str | Path = "params.yaml",
    dvc_yaml: str | Path = "dvc.yaml",
    force: bool = False,
    hooks: Mapping[str, Any] | None = None,
) -> StageManifest:
    """Run `stages.<name>.run` with its upstream outputs; the pipeline's last stage records the run.

    `hooks` are extra keyword arguments for the stage's `run` that change how, never what, it computes
    (e.g. the judge stage's `map_judges`, which the Prefect flow uses to fan work out as tasks).
    """
    params = load_checked_params(params_path)
    order = stage_order(dvc_yaml)
    if name not in order:
        import difflib

        close = difflib.get_close_matches(name, order)
        raise UnknownNameError(
            f"stage '{name}' is not declared in {dvc_yaml}",
            hint=f"did you mean {', '.join(close)}?" if close else f"stages: {', '.join(order)}",
        )
    mod = _module(name)
    upstream = {u: stage_out_dir(params, u) for u in getattr(mod, "UPSTREAM", ())}
    # The stage's lock (execute_stage takes it again, re-entrantly) also covers what the stage publishes
    # after its outputs (reports/…), so two runs never interleave their copies.
    with stage_lock(params.store.root, name):
        manifest = mod.run(params, stage_out_dir(params, name), inputs=upstream, force=force, **dict(hooks or {}))
    if name == order[-1]:
        record_run(params, dvc_yaml)
    return manifest
