"""Synthetic upstream outputs for the report stage, in the schemas of docs/design/tables.md and the
metrics stage (metrics.json {dataset: {judge: {metric, metric_ci_low, …}}} plus its tables)."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from novelty_audit.artifacts import write_json, write_table

DATASETS = ("human-only", "human-plus-generated")
JUDGES = {
    "always-first": {"backend": "always-first"},
    "distance-yin": {"backend": "distance-yin", "model": "minilm"},
    "gpt-p1": {"backend": "openai", "model": "gpt-x", "prompt": "p1"},
    "gpt-p3": {"backend": "openai", "model": "gpt-x", "prompt": "p3"},
}
# Deliberately odd values: the report must show exactly these, never recompute them from verdicts.
ACCURACY = {"always-first": 0.0, "distance-yin": 0.6125, "gpt-p1": 0.9345, "gpt-p3": 0.4091}


def write_metrics(d: Path, *, cost: bool = False) -> None:
    doc: dict = {}
    long_rows = []
    for ds in DATASETS:
        for j, acc in ACCURACY.items():
            m = {"n_pairs": 154, "strict_accuracy": acc, "strict_accuracy_ci_low": max(acc - 0.05, 0.0),
                 "strict_accuracy_ci_high": min(acc + 0.05, 1.0), "soft_accuracy": min(acc + 0.02, 1.0),
                 "tie_rate": 1.0 if j == "always-first" else 0.02, "tie_rate_wilson_low": 0.01, "tie_rate_wilson_high": 0.05,
                 "coverage": 1.0, "n_invalid": 2 if j.startswith("gpt") else 0, "n_refusal": 0, "n_error": 1 if j == "gpt-p3" else 0,
                 "n_truncated": 3 if j == "gpt-p1" else 0,
                 "order_flip_rate": 0.45 if j == "gpt-p3" else 0.0, "first_position_rate": 0.5,
                 "n_error_by_reason": {"connection refused": 1} if j == "gpt-p3" else {}}
            if cost:
                m["cost_usd"] = 1.25 if j.startswith("gpt") else 0.0
            doc.setdefault(ds, {})[j] = m
            long_rows.append({"dataset": ds, "judge": j, "metric": "strict_accuracy", "value": acc,
                              "ci_low": max(acc - 0.05, 0.0), "ci_high": min(acc + 0.05, 1.0),
                              "ci_method": "bootstrap percentile (10000 resamples, seed 7)", "wilson_low": None,
                              "wilson_high": None, "direction": "higher"})
    write_json(d / "metrics.json", doc)
    write_table(d / "metrics.parquet", pl.DataFrame(long_rows))
    fm = []
    for ds in DATASETS:
        for a in JUDGES:
            for b in JUDGES:
                fm.append({"dataset": ds, "judge_a": a, "judge_b": b, "compared": 154, "flips": 0 if a == b else 30,
                           "flip_rate": 0.0 if a == b else 30 / 154})
    write_table(d / "flip_matrix.parquet", pl.DataFrame(fm))
    write_table(d / "prompt_sensitivity.parquet", pl.DataFrame(
        [{"dataset": ds, "backbone": "openai/gpt-x", "judges": ["gpt-p1", "gpt-p3"], "n_judges": 2,
          "strict_accuracy_min": 0.4091, "strict_accuracy_max": 0.9345, "strict_accuracy_spread": 0.5254,
          "mean_flip_rate": 0.52, "max_flip_rate": 0.52} for ds in DATASETS]))


def write_judge(d: Path) -> None:
    rows = []
    for ds in DATASETS:
        for k in range(4):
            a, b = f"i-{k}a", f"i-{k}b"
            for j in JUDGES:
                rows.append({"dataset": ds, "judge": j, "pair_id": f"p-{k}", "idea_0": a, "idea_1": b, "gold_idea_id": a,
                             "verdict": a if j != "always-first" else "tie", "score_0": 0.31 if j == "distance-yin" else None,
                             "score_1": 0.22 if j == "distance-yin" else None, "cost_usd": 0.01 if j.startswith("gpt") else 0.0,
                             "evidence_titles": [f"Prior {k}a-1", f"Prior {k}a-2", f"Prior {k}b-1", f"Prior {k}b-2"]
                             if j == "distance-yin" else []})
    write_table(d / "verdicts.parquet", pl.DataFrame(rows))
    write_table(d / "judges.parquet", pl.DataFrame(
        [{"judge": j, "backend": c["backend"], "config_digest": j, "config": orjson.dumps(c).decode()} for j, c in JUDGES.items()]))


def write_pin(d: Path) -> None:
    for ds in DATASETS:
        ideas = [{"dataset": ds, "idea_id": f"i-{k}{s}", "title": f"Idea {k}{s.upper()}"} for k in range(4) for s in "ab"]
        write_table(d / ds / "ideas.parquet", pl.DataFrame(ideas))


def write_upstream(artifacts: Path, *, cost: bool = False) -> dict[str, Path]:
    dirs = {u: artifacts / u for u in ("pin", "judge", "metrics")}
    write_pin(dirs["pin"])
    write_judge(dirs["judge"])
    write_metrics(dirs["metrics"], cost=cost)
    return dirs
