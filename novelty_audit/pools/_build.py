"""The pools construction as one library call: select → strip → pair → generated pool → rule check."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ..config import GENERATED_PAIRS, HUMAN_PAIRS, PoolsParams
from ..errors import ConfigError
from ..signals import ChatClient, check_file_pin, prompt_path
from ._blocklist import blocked_titles
from ._check import check_benchmark
from ._datasets import PoolDataset, build_datasets, pool_ideas
from ._generated import GENERATED_SCHEMA, generate_with_llm, generated_from_jsonl, generated_from_pin
from ._pair import pair_within_areas
from ._select import EVIDENCE_SCHEMA, paper_evidence, select_pools
from ._strip import GENERATE_PROMPT, STRIP_CHECK_VERSION, STRIP_PROMPT, check_results, strip_results

__all__ = ["PoolsOutput", "build_pools", "pools_prompt_files", "pools_pin_datasets", "POOL_SCHEMA", "FLAG_SCHEMA", "HUMAN_PAIRS", "GENERATED_PAIRS"]

POOL_SCHEMA = {**EVIDENCE_SCHEMA, "pool": pl.String, "text": pl.String, "text_stripped": pl.Boolean}
FLAG_SCHEMA = {"idea_id": pl.String, "pool": pl.String, "check": pl.String, "match": pl.String, "start": pl.Int32}


def pools_input_files(pp: PoolsParams) -> list[Path]:
    """Data files the pools stage reads besides upstream artifacts (pinned in params.yaml pools:)."""
    files = [Path(pp.title_blocklist.file.path)] if pp.title_blocklist.file is not None else []
    if pp.generated.source == "jsonl" and pp.generated.file is not None:
        files.append(Path(pp.generated.file.path))
    files += [Path(cs.path) for _, cs in sorted(pp.candidates.items())]
    return files


def pools_pin_datasets(pp: PoolsParams) -> list[str]:
    """The pinned splits the pools stage reads: those it checks, the generated pool's, the candidates' humans, the
    re-paired one."""
    out = {*pp.check_datasets, *([pp.generated.dataset] if pp.generated.source == "pin" else [])}
    if pp.candidates and pp.candidate_humans.source == "pin":
        out.add(pp.candidate_humans.dataset)
    if pp.repair.seeds:
        out.add(pp.repair.dataset)
    return sorted(out)


def pools_prompt_files(pp: PoolsParams) -> list[Path]:
    """The prompt files the configured pools run sends (their bytes decide the answers): inputs of the stage."""
    out = []
    if pp.strip.llm.enabled:
        out.append(prompt_path(STRIP_PROMPT))
    if pp.generated.source == "llm":
        out.append(prompt_path(GENERATE_PROMPT))
    return out


@dataclass
class PoolsOutput:
    """Tables and reports of one pools run; `facts` are run facts (never hashed)."""

    evidence: pl.DataFrame
    pool: pl.DataFrame
    exclusions: pl.DataFrame
    percentiles: pl.DataFrame
    pairs: pl.DataFrame
    unpaired: pl.DataFrame
    generated: pl.DataFrame
    strip_flags: pl.DataFrame
    rule_check: dict[str, Any]
    summary: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict)
    datasets: list[PoolDataset] = field(default_factory=list)
    """Every pair set as a judgeable dataset (`PoolsParams.dataset_names`)."""


def _extractor_id(pp: PoolsParams, signal_scores: dict[str, Any]) -> str:
    entry = (signal_scores.get("extractors") or {}).get(pp.extractor)
    if not entry:
        raise ConfigError(
            f"pools.extractor is '{pp.extractor}', but the signals stage did not run it",
            hint=f"add '{pp.extractor}' to signals.extractors, or pick one of {sorted(signal_scores.get('extractors') or {})}",
        )
    return entry["extractor"]


def _flags(idea_id: str, pool: str, text: str) -> list[dict[str, Any]]:
    return [{"idea_id": idea_id, "pool": pool, "check": f.check, "match": f.match, "start": f.start} for f in check_results(text)]


def build_pools(
    pp: PoolsParams,
    *,
    papers: pl.DataFrame,
    reviews: pl.DataFrame,
    snippets: pl.DataFrame,
    signal_scores: dict[str, Any],
    benchmark_ideas: dict[str, pl.DataFrame],
    benchmark_pairs: dict[str, pl.DataFrame],
    cache_root: Path,
    root: Path = Path("."),
) -> PoolsOutput:
    """Build D+ / D- and the generated pool, pair them by seed, flag leftover results, check the benchmark."""
    for ds in pools_pin_datasets(pp):
        if ds not in benchmark_ideas:
            raise ConfigError(f"pools: dataset '{ds}' is not among the pin stage's outputs {sorted(benchmark_ideas)}")
    evidence = paper_evidence(papers, snippets, reviews, _extractor_id(pp, signal_scores))
    blocked = blocked_titles(pp.title_blocklist, root)
    members, exclusions, percentiles = select_pools(evidence, pp, blocked)

    facts: dict[str, Any] = {}
    strip_client = ChatClient(pp.strip.llm, cache_root, "pools.strip.llm") if pp.strip.llm.enabled else None
    abstracts = dict(zip(papers["paper_id"].to_list(), papers["abstract"].to_list(), strict=True))
    rows, flags = [], []
    for m in members.sort("paper_id").iter_rows(named=True):
        text = abstracts.get(m["paper_id"]) or ""
        if strip_client is not None and text:
            text = strip_results(strip_client, text)
        rows.append({**m, "text": text, "text_stripped": strip_client is not None})
        flags.extend(_flags(m["paper_id"], m["pool"], text))
    pool = pl.DataFrame(rows, schema=POOL_SCHEMA)

    gp = pp.generated
    gen_client = None
    if gp.source == "pin":
        generated = generated_from_pin(benchmark_ideas[gp.dataset], gp.dataset, gp.max_words)
    elif gp.source == "jsonl":
        if gp.file is None:
            raise ConfigError("pools.generated.source is jsonl but pools.generated.file is not set")
        generated = generated_from_jsonl(check_file_pin("pools.generated.file", gp.file, root), gp.max_words)
    elif gp.source == "llm":
        if not gp.llm.enabled:
            raise ConfigError("pools.generated.source is llm but pools.generated.llm.enabled is false")
        gen_client = ChatClient(gp.llm, cache_root, "pools.generated.llm")
        areas = pool.filter(pl.col("pool") == "D+")["area"].to_list()
        generated = generate_with_llm(gen_client, areas, gp)
    else:
        generated = pl.DataFrame(schema=GENERATED_SCHEMA)
    for g in generated.iter_rows(named=True):
        flags.extend(_flags(g["idea_id"], "generated", g["text"]))

    pos = [(r["paper_id"], r["area"]) for r in pool.filter(pl.col("pool") == "D+").iter_rows(named=True)]
    neg = [(r["paper_id"], r["area"]) for r in pool.filter(pl.col("pool") == "D-").iter_rows(named=True)]
    gen = [(r["idea_id"], r["area"]) for r in generated.iter_rows(named=True)]
    h_pairs, h_unpaired = pair_within_areas(pos, neg, seed=pp.seed, dataset=HUMAN_PAIRS)
    g_pairs, g_unpaired = pair_within_areas(pos, gen, seed=pp.seed, dataset=GENERATED_PAIRS)
    pairs = pl.concat([h_pairs, g_pairs]).sort("dataset", "pair_id")
    unpaired = pl.concat([h_unpaired, g_unpaired]).sort("dataset", "idea_id")

    datasets = build_datasets(
        pp, pool_idea_df=pool_ideas(pool, generated), human_pairs=(h_pairs, h_unpaired),
        generated_pairs=(g_pairs, g_unpaired) if gp.source != "none" else None, benchmark_ideas=benchmark_ideas,
        review_areas=[a for a in papers["area"].to_list() if a], root=root,
    )  # fmt: skip
    checks = {ds: check_benchmark(benchmark_ideas[ds], benchmark_pairs[ds], pp, blocked) for ds in sorted(pp.check_datasets)}
    strip_flags = pl.DataFrame(flags, schema=FLAG_SCHEMA).sort("pool", "idea_id", "start", "check")
    flagged_pool = strip_flags.filter(pl.col("pool") != "generated")["idea_id"].n_unique()
    flagged_gen = strip_flags.filter(pl.col("pool") == "generated")["idea_id"].n_unique()
    rule_check = {
        "rules": {
            **pp.model_dump(mode="json", include={"percentile", "positive", "negative", "drop_areas"}),
            "title_blocklist": blocked,
            "title_blocklist_file": pp.title_blocklist.file.model_dump(mode="json") if pp.title_blocklist.file else None,
        },
        "notes": [
            "Benchmark signals are pooled sentences: signal-present / signal-opposite read sentence counts, which equal "
            "'at least one review' / 'no review' exactly for min_reviews_with_signal 1 and max_reviews_with_opposite 0.",
        ],
        "datasets": checks,
        "constructed_pools": {
            "strip_check": STRIP_CHECK_VERSION,
            "texts_stripped_by_llm": strip_client is not None,
            "flagged_pool_items": flagged_pool,
            "flagged_generated_items": flagged_gen,
            "flagged": [
                {"idea_id": iid, "pool": grp["pool"][0], "flags": grp.select("check", "match").to_dicts()}
                for (iid,), grp in sorted(strip_flags.group_by("idea_id"), key=lambda t: t[0][0])
            ],
        },
    }
    summary = {
        "papers": evidence.height,
        "d_plus": pool.filter(pl.col("pool") == "D+").height,
        "d_minus": pool.filter(pl.col("pool") == "D-").height,
        "excluded_papers": exclusions["paper_id"].n_unique(),
        "generated": generated.height,
        "pairs_human": h_pairs.height,
        "pairs_generated": g_pairs.height,
        "negatives_reused": int(h_pairs["negative_reused"].sum() or 0),
        "unpaired_positive": unpaired.height,
        "flagged_pool_items": flagged_pool,
        "flagged_generated_items": flagged_gen,
        "benchmark_check": {
            ds: {"ideas_violating": c["ideas_violating"], "violations": len(c["violations"]), "pair_violations": len(c["pair_violations"]),
                 "flagged_texts": c["strip_check"]["flagged_ideas"], "not_checkable_rules": len(c["not_checkable"])}
            for ds, c in checks.items()
        },
    }
    for name, client in (("strip", strip_client), ("generate", gen_client)):
        if client is not None:
            facts.update({f"{name}_llm_calls": client.stats.calls, f"{name}_llm_cache_hits": client.stats.cache_hits})
    return PoolsOutput(
        evidence=evidence,
        pool=pool,
        exclusions=exclusions,
        percentiles=percentiles,
        pairs=pairs,
        unpaired=unpaired,
        generated=generated,
        strip_flags=strip_flags,
        rule_check=rule_check,
        summary=summary,
        facts=facts,
        datasets=datasets,
    )
