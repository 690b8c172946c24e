"""Dataset pins: check the pinned sha256, fetch a Hub release at a pinned revision, accept changes."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from ..artifacts import MANIFEST_NAME, atomic_write_bytes, check_pinned_file, digest_file, load_manifest, row_digests
from ..errors import BadInputError, ConfigError, require
from ..config import round_trip_yaml
from ..params import DatasetPin, Params
from ._normalize import Normalized, normalize_pairs
from ._records import read_pairs

__all__ = ["PinChange", "PapersReader", "check_pin", "fetch_pinned", "load_dataset", "accept_pins", "hub_filename"]

PapersReader = Callable[[Path, str], Any]
"""Reads a NovBench-format file (path, dataset name) into its tables (`novelty_audit.novbench.normalize_novbench`).
Passed in by the caller: the novbench package sits above this one (it reuses this package's text normalization)."""


def hub_filename(config: str) -> str:
    """Path of a config's pairwise Parquet inside the Hub dataset repository."""
    return f"data/{config}_pairwise.parquet"


def fetch_pinned(pin: DatasetPin) -> Path:
    """Return the local file of a pin, downloading a Hub release only when it is configured and absent."""
    path = Path(pin.path)
    if pin.source != "hf" or path.exists():
        return path
    hub = require("huggingface_hub", extra="hub")
    # Only reached when the user configured source: hf and the file is not cached yet.
    got = hub.hf_hub_download(
        repo_id=pin.repo, filename=hub_filename(pin.config or ""), repo_type="dataset", revision=pin.revision
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    shutil.copyfile(got, tmp)
    tmp.replace(path)
    return path


def check_pin(name: str, pin: DatasetPin) -> Path:
    path = fetch_pinned(pin)
    if not path.exists():
        raise BadInputError(f"dataset {name}: {path} not found", hint="check pin.datasets in params.yaml")
    check_pinned_file(
        path, pin.sha256, what=f"dataset {name}: {path}", hint="if the change is deliberate, run `novelty-audit pin --accept`"
    )
    return path


def load_dataset(name: str, pin: DatasetPin, *, check: bool = True, papers: PapersReader | None = None) -> Any:
    """The canonical tables of a pinned file: pairs (yaml/parquet/hf, a `Normalized`) or NovBench papers (source
    novbench, read by `papers`, which a caller pinning such a dataset must pass)."""
    path = check_pin(name, pin) if check else fetch_pinned(pin)
    if pin.source == "novbench":
        if papers is None:
            raise TypeError(f"dataset {name}: source novbench needs papers=novelty_audit.novbench.normalize_novbench")
        return papers(path, name)
    fmt = "yaml" if pin.source == "yaml" else "parquet"
    return normalize_pairs(read_pairs(path, fmt), dataset=name, file=path)


@dataclass
class PinChange:
    """What `pin --accept` changed for one dataset."""

    dataset: str
    path: str
    old_sha256: str
    new_sha256: str
    items: dict[str, list[str]] = field(default_factory=dict)
    """changed / added / removed → ids (ideas and pairs), against the last pin stage outputs."""

    @property
    def changed(self) -> bool:
        return self.old_sha256 != self.new_sha256


def _items(norm: Any) -> dict[str, str]:
    out = {}
    keyed = ((norm.papers, "paper_id"),) if not isinstance(norm, Normalized) else ((norm.ideas, "idea_id"), (norm.pairs, "pair_id"))
    for df, key in keyed:
        out.update(zip(df[key].to_list(), row_digests(df), strict=True))
    return out


def _previous_items(pin_dir: Path, dataset: str) -> dict[str, str]:
    if not (pin_dir / MANIFEST_NAME).exists():
        return {}
    m = load_manifest(pin_dir)
    out: dict[str, str] = {}
    for rel in (f"{dataset}/ideas.parquet", f"{dataset}/pairs.parquet", f"{dataset}/papers.parquet"):
        try:
            out.update(m.output(rel).items or {})
        except KeyError:
            continue
    return out


def accept_pins(params_path: Path, params: Params, pin_dir: Path, *, papers: PapersReader | None = None) -> list[PinChange]:
    """Re-pin every dataset file to its current sha256 in params.yaml and report what moved (`papers`: as for
    `load_dataset`)."""
    changes = []
    for name, pin in params.pin.datasets.items():
        path = fetch_pinned(pin)
        if not path.exists():
            raise BadInputError(f"dataset {name}: {path} not found")
        new = digest_file(path)
        change = PinChange(dataset=name, path=path.as_posix(), old_sha256=pin.sha256, new_sha256=new)
        if change.changed:
            before = _previous_items(pin_dir, name)
            after = _items(load_dataset(name, pin, check=False, papers=papers))
            change.items = {
                "changed": sorted(k for k in after.keys() & before.keys() if after[k] != before[k]),
                "added": sorted(after.keys() - before.keys()),
                "removed": sorted(before.keys() - after.keys()),
            }
        changes.append(change)

    if any(c.changed for c in changes):
        yaml = round_trip_yaml()  # keeps comments, long lines and layout: only the moved pins change
        doc = yaml.load(params_path.read_text(encoding="utf-8"))
        try:
            for c in changes:
                doc["pin"]["datasets"][c.dataset]["sha256"] = c.new_sha256
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"{params_path}: cannot find pin.datasets entry ({exc})") from None
        buf = StringIO()
        yaml.dump(doc, buf)
        atomic_write_bytes(params_path, buf.getvalue().encode("utf-8"))
    return changes
