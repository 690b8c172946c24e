"""Publish the report where people and DVC look (`report.publish_dir`), plus the latest audit.

The published report files are byte copies of the stage outputs in the manifest. The audit
files are not: they compare the previous ledger run with the current stage outputs, so they
depend on the runs ledger and are written on every report run, outside the manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..artifacts import StageManifest, atomic_write_bytes, publish_copy, write_json
from ..errors import ManifestMismatchError
from ._build import AUDIT_FILES
from ._decisions import DECISIONS_KEY, with_decisions

if TYPE_CHECKING:
    from ..params import Params

__all__ = ["publish_report", "write_latest_audit"]


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


def write_latest_audit(params: Params, publish_dir: Path) -> Path:
    """audit.md and audit.json: the previous ledger run → the current stage outputs, with the decisions per judge."""
    from ..audit import audit_since_last_run, decisions_per_judge

    publish_dir = Path(publish_dir)
    md_name, json_name = AUDIT_FILES
    try:
        report = audit_since_last_run(params)
    except ManifestMismatchError as exc:
        # The previous run's objects were pruned from the store: say so where the audit would be, and go on;
        # the report itself does not depend on the ledger.
        text = f"# Verdict-change audit\n\nThe audit against the previous run could not be computed: {exc.message}\n"
        atomic_write_bytes(publish_dir / md_name, text.encode("utf-8"))
        write_json(publish_dir / json_name, {"error": exc.message})
        return publish_dir / md_name
    if report is None:
        text = ("# Verdict-change audit\n\nNo earlier run with judge verdicts is in the runs ledger yet: "
                "nothing to compare. The next pipeline run is audited against this one.\n")
        atomic_write_bytes(publish_dir / md_name, text.encode("utf-8"))
        write_json(publish_dir / json_name, None)
        return publish_dir / md_name
    tally = decisions_per_judge(report.result)
    atomic_write_bytes(publish_dir / md_name, with_decisions(report.markdown, tally).encode("utf-8"))
    write_json(publish_dir / json_name, {**report.result.to_json(), DECISIONS_KEY: tally})
    return publish_dir / md_name
