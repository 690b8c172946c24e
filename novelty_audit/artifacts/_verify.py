"""Re-hash every artifact against the manifest that recorded it."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ._digest import digest_file
from ._manifest import MANIFEST_NAME, load_manifest

__all__ = ["Mismatch", "verify_tree"]


class Mismatch(BaseModel):
    model_config = ConfigDict(frozen=True)
    stage: str
    path: str
    expected: str
    actual: str | None
    """None when the file is missing."""


def verify_tree(artifacts_root: Path) -> tuple[int, list[Mismatch]]:
    """Check every `*/manifest.json` under `artifacts_root`; return (files checked, mismatches)."""
    checked = 0
    bad: list[Mismatch] = []
    for mpath in sorted(Path(artifacts_root).glob(f"*/{MANIFEST_NAME}")):
        m = load_manifest(mpath)
        for rec in m.outputs:
            p = mpath.parent / rec.path
            checked += 1
            actual = digest_file(p) if p.exists() else None
            if actual != rec.sha256:
                bad.append(Mismatch(stage=m.stage, path=p.as_posix(), expected=rec.sha256, actual=actual))
    return checked, bad
