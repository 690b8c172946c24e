"""Library support for orchestrated runs (Prefect flows): run summaries, the canary subset, drift checks.

Prefect itself lives in flows/; everything here is plain Python the flows call, testable without a server.
"""

from ._canary import CANARY_STAGE, build_canary, select_canary
from ._drift import (
    API_BACKENDS,
    NO_API_JUDGE,
    DriftPaths,
    canary_datasets,
    drift_judges,
    drift_markdown,
    drift_params,
    drift_paths,
    drift_rows,
)
from ._dvc import DvcRecord, is_dvc_project, record_in_dvc
from ._fanout import JudgeChunk, balanced_size, chunkable, failed_chunk_facts, failed_fanout_facts, merge_outputs, plan_chunks, run_chunk
from ._summary import RunSummary, StageOutcome, fact_number, summarize_run

__all__ = [
    "API_BACKENDS",
    "CANARY_STAGE",
    "NO_API_JUDGE",
    "DriftPaths",
    "DvcRecord",
    "JudgeChunk",
    "RunSummary",
    "StageOutcome",
    "balanced_size",
    "build_canary",
    "canary_datasets",
    "chunkable",
    "drift_judges",
    "drift_markdown",
    "drift_params",
    "drift_paths",
    "drift_rows",
    "fact_number",
    "failed_chunk_facts",
    "failed_fanout_facts",
    "is_dvc_project",
    "merge_outputs",
    "plan_chunks",
    "record_in_dvc",
    "run_chunk",
    "select_canary",
    "summarize_run",
]
