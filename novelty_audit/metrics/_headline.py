"""The headline figures DVC shows: one small JSON file per (dataset, judge) under `metrics.report` (reports/metrics/).

`dvc metrics show` prints one row per metrics file and one column per key, so the full metrics.json (every metric,
interval and count of every judge: ~70 keys per judge) made one row of 74,000 characters. Published as one file per
(dataset, judge) with the same few keys, it is one short row each, and `dvc metrics diff` / `dvc exp show` compare
the figures a person compares across runs. The full table stays in artifacts/metrics/metrics.json, which the report,
`export table` and every other reader use; the headline is derived from it and never read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..artifacts import atomic_write_bytes, record_published

__all__ = ["HEADLINE_KEYS", "headline_rows", "publish_headline"]

HEADLINE_KEYS: tuple[tuple[str, str], ...] = (
    ("strict_accuracy", "strict_accuracy"),
    ("ci_low", "strict_accuracy_ci_low"),
    ("ci_high", "strict_accuracy_ci_high"),
    ("tie_rate", "tie_rate"),
    ("first_position_rate", "first_position_rate"),
    ("order_flip_rate", "order_flip_rate"),
    ("attack_success_rate", "attack_success_rate"),
)
"""(headline key, metrics.json key). ci_low/ci_high: strict accuracy's bootstrap interval. A figure the full table
has as null (not measured) is left out of the row, never written as 0."""
DECIMALS = 4


def headline_rows(metrics_json: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, float | int]]:
    """(dataset, judge) → its headline row, for every judge with a pairwise or probe figure (NovBench generators
    have none: their figures stay in the full table). `n`: the pairs (a probe dataset: the probes) the rates are over."""
    out: dict[tuple[str, str], dict[str, float | int]] = {}
    for dataset, judges in sorted(metrics_json.items()):
        if not isinstance(judges, Mapping):
            continue
        for judge, m in sorted(judges.items()):
            if not isinstance(m, Mapping):
                continue
            row: dict[str, float | int] = {
                key: round(float(m[src]), DECIMALS) for key, src in HEADLINE_KEYS if isinstance(m.get(src), (int, float))
            }
            if not row:
                continue
            n = m.get("n_probes", m.get("n_pairs"))
            if isinstance(n, int):
                row["n"] = n
            out[(dataset, judge)] = row
    return out


def _file(root: Path, dataset: str, judge: str) -> Path:
    # A sweep variant's id holds "/" (sweep/knob=value): it becomes a sub-folder, one row still.
    parts = [dataset, *judge.split("/")]
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"dataset {dataset!r}, judge {judge!r}: not usable as a file name under {root}")
    return root.joinpath(*parts[:-1], parts[-1] + ".json")


def publish_headline(metrics_json: Mapping[str, Any], root: str | Path, *, artifacts_root: str | Path) -> list[Path]:
    """Write each headline row to `root/<dataset>/<judge>.json` (atomically, recorded for `verify`) and remove the
    JSON files of rows that no longer exist: DVC reads every file in the folder. Returns the files written."""
    root = Path(root)
    written = []
    for (dataset, judge), row in headline_rows(metrics_json).items():
        path = _file(root, dataset, judge)
        data = orjson.dumps(row, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
        if not path.exists() or path.read_bytes() != data:
            atomic_write_bytes(path, data)
        written.append(path)
    keep = {p.resolve() for p in written}
    for stale in sorted(root.rglob("*.json")) if root.is_dir() else []:
        if stale.resolve() not in keep:
            stale.unlink()
    for folder in sorted((d for d in root.rglob("*") if d.is_dir()), key=lambda d: len(d.parts), reverse=True) if root.is_dir() else []:
        if not any(folder.iterdir()):
            folder.rmdir()
    record_published(written, artifacts_root=artifacts_root, stage="metrics")
    return written
