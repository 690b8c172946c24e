"""The injection and persuasion probe: a catalogue of attack templates, probe datasets derived from pinned
splits, and the mitigations LLM judges can turn on (docs/design/probe.md). Its metrics live in
novelty_audit.metrics (`probe_metrics`), like every metric."""

from ..config import PROBE_SUFFIX, ProbeParams, probe_dataset
from ._build import PROBE_SCHEMA, ProbeTables, attack_text, build_probes
from ._catalogue import ATTACK_FAMILIES, FAMILIES, LENGTH_CONTROL, RETRIEVED, Catalogue, Template, load_catalogue

__all__ = [
    "ATTACK_FAMILIES",
    "FAMILIES",
    "LENGTH_CONTROL",
    "PROBE_SCHEMA",
    "PROBE_SUFFIX",
    "RETRIEVED",
    "Catalogue",
    "ProbeParams",
    "ProbeTables",
    "Template",
    "attack_text",
    "build_probes",
    "load_catalogue",
    "probe_dataset",
]
