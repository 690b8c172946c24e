"""Judges: one registry of backends (controls, API LLMs, local GGUF, distance), the voting protocol,
prompts and the call cache. A judge is built from its params.yaml spec with `build_judge`.

Importing this package imports every backend module so each registers itself; heavy dependencies are
imported inside the factories.
"""

from ..config import JudgeParams, JudgeSpec, Price
from ._base import (
    JUDGES,
    JUDGES_SCHEMA,
    NEGATIVE,
    NONE,
    OUTCOMES,
    PAIRWISE_SCHEMA,
    POINTWISE_SCHEMA,
    POSITIVE,
    TIE,
    Idea,
    IdeaScore,
    Judge,
    JudgeContext,
    JudgeOutput,
    PairItem,
    PointItem,
    ScoreJudge,
    evidence_digest,
    judges_row,
    pairwise_row,
    parse_args,
    pointwise_row,
)
from ._budget import Budget
from ._build import Built, build_judges, judge_catalog, validate_judges
from ._cache import CallCache, CallClaim, call_key, endpoint_id, verify_caches
from ._llm import LLMArgs, LLMJudge, Sampling
from ._prompts import load_prompt, parse_verdict, prompt_names
from ._protocol import ORDERS, Call, CallResult, VoteJudge
from ._registry import Registry
from ._run import JudgeMap, JudgeRun, failed_calls, failure_line, judge_stage_inputs, load_items, run_judges

# Backend modules: imported for their registrations (heavy imports stay inside their factories).
from . import _controls, _import, _openai, _anthropic  # noqa: F401  isort: skip
from . import _gguf, distance  # noqa: F401  isort: skip
# Distance judges (novelty_audit/judges/distance/) and the GGUF logprob judge (_gguf.py) register here too.

__all__ = [
    "JUDGES",
    "JUDGES_SCHEMA",
    "NEGATIVE",
    "NONE",
    "ORDERS",
    "OUTCOMES",
    "PAIRWISE_SCHEMA",
    "POINTWISE_SCHEMA",
    "POSITIVE",
    "TIE",
    "Budget",
    "Built",
    "Call",
    "CallCache",
    "CallClaim",
    "CallResult",
    "Idea",
    "IdeaScore",
    "Judge",
    "JudgeContext",
    "JudgeMap",
    "JudgeOutput",
    "JudgeParams",
    "JudgeRun",
    "JudgeSpec",
    "LLMArgs",
    "LLMJudge",
    "PairItem",
    "PointItem",
    "Price",
    "Registry",
    "Sampling",
    "ScoreJudge",
    "VoteJudge",
    "build_judges",
    "call_key",
    "endpoint_id",
    "evidence_digest",
    "failed_calls",
    "failure_line",
    "judge_catalog",
    "judge_stage_inputs",
    "judges_row",
    "load_items",
    "load_prompt",
    "pairwise_row",
    "parse_args",
    "parse_verdict",
    "pointwise_row",
    "prompt_names",
    "run_judges",
    "validate_judges",
    "verify_caches",
]
