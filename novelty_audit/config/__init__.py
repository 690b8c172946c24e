"""The params.yaml section models, one module per section, importing nothing else of the project.

`novelty_audit.params` assembles them into `Params`. Keeping them here, light and cycle-free, means a
stage's code digest (and its dvc.yaml deps) covers one small folder of configuration rather than
every subsystem whose settings happen to live in params.yaml.
"""

from ._audit import AuditParams
from ._base import CONTROL_BACKENDS, DATASET_NAMES, REASONING_EFFORTS, DuplicateKeyError, Frozen, check_name, round_trip_yaml, safe_load_unique
from ._flows import BackendLimit, CanaryParams, FlowsParams, SchedulesParams
from ._judge import CallSettings, GeneratorSpec, JudgeParams, JudgeSpec, Price, check_call_knobs
from ._metrics import MetricsParams
from ._probe import PROBE_SUFFIX, ProbeParams, probe_dataset
from ._pools import (
    GENERATED_PAIRS,
    HUMAN_PAIRS,
    LOW_SUFFIX,
    CandidateSet,
    GeneratedPoolParams,
    HumanIdeas,
    PercentileRule,
    PoolRules,
    PoolsParams,
    RepairParams,
    StripParams,
    TitleBlocklist,
    check_set_name,
    repair_name,
)
from ._report import ReportParams
from ._signals import EXTRACTOR_IDS, LLMSpec, PinnedFile, RecoveryParams, SignalsParams
from ._sweeps import KNOB_NOTES as SWEEP_KNOB_NOTES, KNOBS as SWEEP_KNOBS, SweepSpec, SweepVariant

__all__ = [
    "round_trip_yaml",
    "safe_load_unique",
    "DuplicateKeyError",
    "AuditParams",
    "DATASET_NAMES",
    "CONTROL_BACKENDS",
    "REASONING_EFFORTS",
    "check_name",
    "Frozen",
    "BackendLimit",
    "CanaryParams",
    "FlowsParams",
    "SchedulesParams",
    "CallSettings",
    "GeneratorSpec",
    "JudgeParams",
    "JudgeSpec",
    "Price",
    "check_call_knobs",
    "MetricsParams",
    "GeneratedPoolParams",
    "PercentileRule",
    "PoolRules",
    "PoolsParams",
    "GENERATED_PAIRS",
    "HUMAN_PAIRS",
    "LOW_SUFFIX",
    "CandidateSet",
    "HumanIdeas",
    "RepairParams",
    "check_set_name",
    "repair_name",
    "TitleBlocklist",
    "StripParams",
    "PROBE_SUFFIX",
    "ProbeParams",
    "probe_dataset",
    "ReportParams",
    "EXTRACTOR_IDS",
    "LLMSpec",
    "PinnedFile",
    "RecoveryParams",
    "SignalsParams",
    "SWEEP_KNOBS",
    "SWEEP_KNOB_NOTES",
    "SweepSpec",
    "SweepVariant",
]
