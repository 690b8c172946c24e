"""Re-hash every artifact against the manifest that recorded it."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..errors import ManifestMismatchError
from ._digest import digest_file
from ._manifest import MANIFEST_NAME, load_manifest

__all__ = ["Mismatch", "verify_tree"]


class Mismatch(BaseModel):
    model_config = ConfigDict(frozen=True)
    stage: str
    path: str
    expected: str
    actual: str | None
    """None when the file is missing or unreadable."""
    reason: str | None = None
    """Why, when it is not a plain digest mismatch (an unreadable manifest)."""


def verify_tree(artifacts_root: Path) -> tuple[int, list[Mismatch]]:
    """Check every `*/manifest.json` under `artifacts_root`; return (files checked, mismatches)."""
    checked = 0
    bad: list[Mismatch] = []
    for mpath in sorted(Path(artifacts_root).glob(f"*/{MANIFEST_NAME}")):
        try:
            m = load_manifest(mpath)
        except ManifestMismatchError as exc:
            checked += 1
            bad.append(Mismatch(stage=mpath.parent.name, path=mpath.as_posix(), expected="a readable manifest", actual=None, reason=exc.message))
            continue
        for rec in m.outputs:
            p = mpath.parent / rec.path
            checked += 1
            actual = digest_file(p) if p.exists() else None
            if actual != rec.sha256:
                bad.append(Mismatch(stage=m.stage, path=p.as_posix(), expected=rec.sha256, actual=actual))
    return checked, bad
