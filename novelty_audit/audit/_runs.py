"""Load the two sides of an audit: a recorded run (runs ledger) or the current stage outputs.

A side is a set of stage manifests. Its verdicts are read through the judge manifest: output
record → sha256 → the store's object file, so a run stays auditable after its working files
were overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ..artifacts import MANIFEST_NAME, RunRecord, StageManifest, Store, digest_file, load_manifest
from ..errors import ManifestMismatchError, NoveltyAuditError
from ._adjudicate import index_adjudications, load_adjudications
from ._classify import classify_changes
from ._model import AuditResult

__all__ = ["RunSide", "ledger_side", "current_side", "current_run_id", "latest_other_run", "audit", "audit_sides", "CURRENT"]

CURRENT = "current"
"""The RUN name for the stage outputs in the working tree (not yet, or not necessarily, recorded)."""


@dataclass(frozen=True)
class RunSide:
    """One side of an audit: a label (run id or `current`) and the stage manifests it consists of."""

    label: str
    manifests: dict[str, StageManifest] = field(default_factory=dict)


def ledger_side(store: Store, ref: str) -> RunSide:
    """A recorded run by run id or git revision (prefixes allowed)."""
    rec = store.find_run(ref)
    return RunSide(rec.run_id, {name: store.manifest_by_digest(d) for name, d in rec.stages.items()})


def current_side(artifacts: str | Path, stages: tuple[str, ...] = ("pin", "judge")) -> RunSide:
    """The stage outputs now in `artifacts/<stage>/` (their manifests)."""
    out = {}
    for name in stages:
        if (Path(artifacts) / name / MANIFEST_NAME).exists():
            out[name] = load_manifest(Path(artifacts) / name)
    return RunSide(CURRENT, out)


def current_run_id(artifacts: str | Path) -> str | None:
    """The run id the stage outputs now in `artifacts/` would be recorded under (None when there are none).

    Every `artifacts/<stage>/` with a manifest counts, as in `record_run`: recorded runs and the working
    outputs are told apart by content, never by position in the ledger.
    """
    root = Path(artifacts)
    if not root.is_dir():
        return None
    digests = {
        d.name: load_manifest(d).digest()
        for d in sorted(root.iterdir())
        if d.is_dir() and not d.name.startswith(".") and (d / MANIFEST_NAME).exists()
    }
    return RunRecord.run_id_for(digests) if digests else None


def latest_other_run(store: Store, artifacts: str | Path) -> RunRecord | None:
    """The latest ledger run whose content differs from the current stage outputs (None if there is none).

    The run the current outputs are compared with: the same whether or not they were recorded already, so
    the report's audit is the same after `dvc repro`, after a flow run, and after either run again.
    """
    current = current_run_id(artifacts)
    others = [r for r in store.runs() if r.run_id != current]
    return others[-1] if others else None


def _object(store: Store, manifest: StageManifest, rel: str) -> Path:
    sha = manifest.output(rel).sha256
    p = store.object_path(sha)
    if not p.exists():
        raise ManifestMismatchError(
            f"stage {manifest.stage}: output {rel} (sha256 {sha[:12]}) is not in the store at {store.root}",
            hint="the store was pruned or copied partially; rerun the stage (dvc repro) to store it again",
        )
    if digest_file(p) != sha:
        raise ManifestMismatchError(f"store object {p} for {manifest.stage}/{rel} does not match its sha256 {sha[:12]}")
    return p


def _tables(store: Store, manifest: StageManifest | None, name: str) -> list[pl.DataFrame]:
    if manifest is None:
        return []
    rels = sorted(r.path for r in manifest.outputs if r.path == name or r.path.endswith("/" + name))
    return [pl.read_parquet(_object(store, manifest, rel)) for rel in rels]


def _verdicts(store: Store, side: RunSide) -> pl.DataFrame:
    judge = side.manifests.get("judge")
    if judge is None:
        raise NoveltyAuditError(
            f"run {side.label} has no judge stage manifest", hint="audit runs that include the judge stage"
        )
    tables = _tables(store, judge, "verdicts.parquet")
    if not tables:
        raise ManifestMismatchError(f"run {side.label}: the judge manifest lists no verdicts.parquet output")
    return pl.concat(tables, how="diagonal_relaxed") if len(tables) > 1 else tables[0]


def _configs(store: Store, side: RunSide) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for df in _tables(store, side.manifests.get("judge"), "judges.parquet"):
        for row in df.select("judge", "config").to_dicts():
            cfg = row["config"]
            out[row["judge"]] = orjson.loads(cfg) if isinstance(cfg, (str, bytes)) else dict(cfg or {})
    return out


def _titles(store: Store, side: RunSide) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for df in _tables(store, side.manifests.get("pin"), "ideas.parquet"):
        for row in df.select("dataset", "idea_id", "title").to_dicts():
            out[(row["dataset"], row["idea_id"])] = row["title"]
    return out


def audit_sides(store: Store, before: RunSide, after: RunSide, *, adjudications: str | Path | None = None) -> AuditResult:
    """Classify every verdict change from `before` to `after` (see `classify_changes`)."""
    titles = {**_titles(store, before), **_titles(store, after)}
    return classify_changes(
        _verdicts(store, before),
        _verdicts(store, after),
        from_run=before.label,
        to_run=after.label,
        configs_before=_configs(store, before),
        configs_after=_configs(store, after),
        titles=titles,
        adjudications=index_adjudications(load_adjudications(adjudications)),
    )


def _resolve(store: Store, ref: str, artifacts: str | Path | None) -> RunSide:
    if ref == CURRENT:
        if artifacts is None:
            raise NoveltyAuditError("RUN 'current' needs the artifacts directory", hint="pass artifacts=")
        return current_side(artifacts)
    return ledger_side(store, ref)


def audit(
    store: Store,
    from_run: str | None = None,
    to_run: str | None = None,
    *,
    adjudications: str | Path | None = None,
    artifacts: str | Path | None = None,
) -> AuditResult:
    """Audit verdict changes between two runs of the ledger (default: its last two).

    The ledger holds one record per distinct run, latest last, so the default compares the last two
    distinct runs. A RUN is a run id or git revision (prefixes allowed; one that matches several runs is
    an error listing them), or `current` for the stage outputs in `artifacts`. With only `to_run` given,
    `from_run` is the ledger run before it (for `current`: the latest run of other content); with only
    `from_run` given, `to_run` is the latest run.
    """
    runs = store.runs()
    if from_run is None or to_run is None:
        if to_run is None:
            if len(runs) < (2 if from_run is None else 1):
                raise NoveltyAuditError(
                    f"the runs ledger {store.root / 'runs.jsonl'} holds {len(runs)} run(s); an audit needs two",
                    hint="run the pipeline again (dvc repro), or pass --from RUN --to current",
                )
            to_side = ledger_side(store, runs[-1].run_id)
            position = len(runs) - 1
        else:
            to_side = _resolve(store, to_run, artifacts)
            ids = [r.run_id for r in runs]
            if to_side.label == CURRENT:
                # `current` may already be recorded (it is, right after `dvc repro`): compare it with the latest
                # run of other content, never with itself.
                current = current_run_id(artifacts) if artifacts is not None else None
                others = [i for i, r in enumerate(ids) if r != current]
                position = others[-1] + 1 if others else 0
            else:
                position = ids.index(to_side.label)
        if from_run is None:
            if position < 1:
                raise NoveltyAuditError(
                    f"no run precedes {to_side.label} in the runs ledger {store.root / 'runs.jsonl'}",
                    hint="pass --from RUN",
                )
            from_side = ledger_side(store, runs[position - 1].run_id)
        else:
            from_side = _resolve(store, from_run, artifacts)
    else:
        from_side = _resolve(store, from_run, artifacts)
        to_side = _resolve(store, to_run, artifacts)
    return audit_sides(store, from_side, to_side, adjudications=adjudications)
