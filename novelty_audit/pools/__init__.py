"""Pools: the D+ / D- selection with recorded exclusions, seeded pairing, the generated pool,
result stripping, and the rule check of the embedded benchmark."""

from ..config import GeneratedPoolParams, PercentileRule, PoolRules, PoolsParams, StripParams
from ._blocklist import blocked_titles
from ._build import FLAG_SCHEMA, GENERATED_PAIRS, HUMAN_PAIRS, POOL_SCHEMA, PoolsOutput, build_pools, pools_input_files, pools_pin_datasets, pools_prompt_files
from ._candidates import CANDIDATES_DIR, AddReport, CandidateRead, add_candidates, candidates_add, read_candidates
from ._datasets import DATASET_TABLES, PoolDataset, build_datasets
from ._check import NOT_CHECKABLE, check_benchmark
from ._generated import GENERATED_SCHEMA, generate_with_llm, generated_from_jsonl, generated_from_pin
from ._pair import PAIR_SCHEMA, UNPAIRED_SCHEMA, area_rng, pair_within_areas
from ._select import (
    EVIDENCE_SCHEMA,
    PERCENTILE_SCHEMA,
    POOL_EXCLUSION_SCHEMA,
    area_percentiles,
    norm_key,
    paper_evidence,
    select_pools,
)
from ._strip import STRIP_CHECK_VERSION, StripFlag, check_results, strip_results

__all__ = [
    "FLAG_SCHEMA",
    "GENERATED_PAIRS",
    "HUMAN_PAIRS",
    "POOL_SCHEMA",
    "PoolsOutput",
    "build_pools",
    "pools_pin_datasets",
    "CANDIDATES_DIR",
    "CandidateRead",
    "AddReport",
    "candidates_add",
    "add_candidates",
    "read_candidates",
    "DATASET_TABLES",
    "PoolDataset",
    "build_datasets",
    "pools_prompt_files",
    "pools_input_files",
    "blocked_titles",
    "NOT_CHECKABLE",
    "check_benchmark",
    "GeneratedPoolParams",
    "PercentileRule",
    "PoolRules",
    "PoolsParams",
    "StripParams",
    "GENERATED_SCHEMA",
    "generate_with_llm",
    "generated_from_jsonl",
    "generated_from_pin",
    "PAIR_SCHEMA",
    "UNPAIRED_SCHEMA",
    "area_rng",
    "pair_within_areas",
    "EVIDENCE_SCHEMA",
    "PERCENTILE_SCHEMA",
    "POOL_EXCLUSION_SCHEMA",
    "area_percentiles",
    "norm_key",
    "paper_evidence",
    "select_pools",
    "STRIP_CHECK_VERSION",
    "StripFlag",
    "check_results",
    "strip_results",
]
