"""Publish the report where people and DVC look (`report.publish_dir`).

The published report files are byte copies of the stage outputs in the manifest. The latest audit beside them
is not (`novelty_audit.audit.write_latest_audit`): it depends on the runs ledger and is written on every report
run, outside the manifest.
"""

from __future__ import annotations

from pathlib import Path

from ..artifacts import StageManifest, publish_copy

__all__ = ["publish_report"]


def publish_report(manifest: StageManifest, out_dir: Path, publish_dir: Path) -> list[Path]:
    """Copy every output of the report manifest from `out_dir` to `publish_dir`; drop stale plots."""
    out_dir, publish_dir = Path(out_dir), Path(publish_dir)
    written = []
    for rec in manifest.outputs:
        written.append(publish_copy(out_dir / rec.path, publish_dir / rec.path))
    keep = {publish_dir / rec.path for rec in manifest.outputs}
    plots = publish_dir / "plots"
    if plots.is_dir():
        for p in sorted(plots.iterdir()):
            if p.is_file() and p not in keep:
                p.unlink()
    return written

