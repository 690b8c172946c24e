"""Judges: one registry of backends (controls, API LLMs, local GGUF, distance), the voting protocol,
prompts and the call cache. A judge is built from its params.yaml spec with `build_judges`.

The backends are named in one table (`_backends.py`) with lazy factories: importing this package imports no
backend module; a backend's module is imported when its name is first used, its heavy dependencies inside
its factory.
"""

from ..config import JudgeParams, JudgeSpec, Price
from ._backends import BACKENDS, JUDGES
from ._base import (
    AGENT_COLUMNS,
    JUDGES_SCHEMA,
    NEGATIVE,
    NONE,
    OUTCOMES,
    PAIRWISE_SCHEMA,
    PLANTED_SCHEMA,
    PLANTED_TABLE,
    POINTWISE_SCHEMA,
    POSITIVE,
    TIE,
    Idea,
    IdeaScore,
    Judge,
    JudgeContext,
    JudgeOutput,
    PairItem,
    Planted,
    PointItem,
    ScoreJudge,
    evidence_digest,
    judges_row,
    pairwise_row,
    parse_args,
    pointwise_row,
)
from ._build import Built, build_judges, judge_catalog, validate_judges
from ..llm import Budget, CallCache, CallClaim, Sampling, call_key, endpoint_id
from ._cache import verify_caches
from ._dry_run import DryRun, JudgeEstimate, JudgeRunParams, dataset_dirs, dry_run_judges, dry_run_stage, judge_run_params
from ._llm import LLMArgs, LLMJudge
from ._prompts import load_prompt, parse_verdict, prompt_names
from ._protocol import ORDERS, Call, CallResult, VoteJudge
from ._registry import Lazy, Registry
from ._run import DatasetDirs, JudgeMap, JudgeRun, failed_calls, failure_line, judge_stage_inputs, load_items, run_judges

__all__ = [
    "AGENT_COLUMNS",
    "BACKENDS",
    "JUDGES",
    "JUDGES_SCHEMA",
    "NEGATIVE",
    "NONE",
    "ORDERS",
    "OUTCOMES",
    "PAIRWISE_SCHEMA",
    "PLANTED_SCHEMA",
    "PLANTED_TABLE",
    "POINTWISE_SCHEMA",
    "POSITIVE",
    "TIE",
    "Budget",
    "Built",
    "Call",
    "DryRun",
    "CallCache",
    "CallClaim",
    "CallResult",
    "Idea",
    "IdeaScore",
    "Judge",
    "JudgeContext",
    "JudgeEstimate",
    "JudgeMap",
    "JudgeOutput",
    "JudgeParams",
    "JudgeRun",
    "JudgeRunParams",
    "JudgeSpec",
    "Lazy",
    "LLMArgs",
    "LLMJudge",
    "PairItem",
    "Planted",
    "PointItem",
    "Price",
    "Registry",
    "Sampling",
    "ScoreJudge",
    "VoteJudge",
    "build_judges",
    "call_key",
    "dry_run_judges",
    "dry_run_stage",
    "endpoint_id",
    "evidence_digest",
    "failed_calls",
    "failure_line",
    "judge_catalog",
    "judge_run_params",
    "judge_stage_inputs",
    "DatasetDirs",
    "dataset_dirs",
    "judges_row",
    "load_items",
    "load_prompt",
    "pairwise_row",
    "parse_args",
    "parse_verdict",
    "pointwise_row",
    "prompt_names",
    "resolve_gguf",
    "run_judges",
    "validate_judges",
    "verify_caches",
]


def resolve_gguf(model: str, cache_dir):  # noqa: ANN001
    """The .gguf file of `model` (the packaged gemma-3-270m alias or a path), as the `gguf-logprob` judge finds
    it; NovBench's GGUF generator and fluency model use it too. Imports the backend module only when called."""
    from ._gguf import resolve_gguf as resolve

    return resolve(model, cache_dir)
