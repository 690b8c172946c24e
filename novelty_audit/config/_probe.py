"""params.yaml `probe:` — the injection and persuasion probe derived from pinned splits (docs/design/probe.md).

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.probe; living outside that
package keeps every stage's code digest (all import params.py) free of the probe code.
"""

from __future__ import annotations

from pydantic import Field

from ._base import Frozen
from ._signals import PinnedFile

__all__ = ["PROBE_SUFFIX", "ProbeParams", "probe_dataset"]

PROBE_SUFFIX = ":injection"
"""A probe dataset is named `<split><suffix>`: its key in metrics.json and in every table."""


def probe_dataset(split: str) -> str:
    """The probe dataset derived from a pinned split, e.g. `human-only:injection`."""
    return f"{split}{PROBE_SUFFIX}"


class ProbeParams(Frozen):
    """Which splits get a probe, from which catalogue of attack templates, and how many pairs."""

    catalogue: PinnedFile = PinnedFile(path="data/probes/injection-v1.yaml", sha256="")
    """The versioned catalogue of attack templates (id, family, position, text) and its pinned sha256."""
    datasets: list[str] = Field(default_factory=list)
    """Pinned pairwise splits to derive probes from (names under pin.datasets); each gives `<split>:injection`."""
    seed: int = 0
    """Seeds the choice of pairs and of each pair's template per family (sha256 ranking, never a global seed)."""
    pairs: int | None = Field(default=None, ge=1)
    """Clean pairs per split that get probes (the first by sha256(seed, split, pair id)); null: every pair.
    Each chosen pair gets one probe per family."""
