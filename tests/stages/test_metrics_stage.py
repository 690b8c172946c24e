"""The metrics stage: reads the judge stage's tables, writes the metrics artifact and publishes metrics.json."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml

from novelty_audit.artifacts import load_manifest, write_table
from novelty_audit.errors import ManifestMismatchError
from novelty_audit.pipeline import run_stage

VERDICT_SCHEMA = {
    "dataset": pl.String, "judge": pl.String, "pair_id": pl.String, "idea_0": pl.String, "idea_1": pl.String,
    "gold_idea_id": pl.String, "verdict": pl.String, "verdict_forward": pl.String, "verdict_reverse": pl.String,
    "votes_forward": pl.List(pl.String), "votes_reverse": pl.List(pl.String), "n_valid": pl.Int64,
    "n_invalid": pl.Int64, "n_refusal": pl.Int64, "n_error": pl.Int64, "n_truncated": pl.Int64,
    "error_reasons": pl.List(pl.String), "cost_usd": pl.Float64,
}
OUTPUTS = {
    "metrics.json", "definitions.json", "metrics.parquet", "pairs.parquet", "comparisons.parquet",
    "flip_matrix.parquet", "prompt_sensitivity.parquet", "error_reasons.parquet", "sweeps.json",
}


def verdict_rows(dataset: str, judge: str, picks: list[str]) -> list[dict]:
    """picks: per pair 'g' (gold), 'o' (other idea), 'tie' or 'none'; gold is idea_1 on odd pairs."""
    rows = []
    for i, pick in enumerate(picks):
        a, b = f"i-{i:02d}a", f"i-{i:02d}b"
        gold = b if i % 2 else a
        verdict = {"g": gold, "o": a if gold == b else b}.get(pick, pick)
        rows.append({
            "dataset": dataset, "judge": judge, "pair_id": f"p-{i:02d}", "idea_0": a, "idea_1": b, "gold_idea_id": gold,
            "verdict": verdict, "verdict_forward": verdict, "verdict_reverse": None,
            "votes_forward": [verdict if verdict not in ("none",) else "invalid"], "votes_reverse": None,
            "n_valid": int(verdict != "none"), "n_invalid": int(verdict == "none"), "n_refusal": 0, "n_error": 0,
            "n_truncated": 0, "error_reasons": [], "cost_usd": 0.001,
        })
    return rows


@pytest.fixture
def judged(project: Path) -> Path:
    """A project whose artifacts/judge holds synthetic verdicts of two judges on one dataset."""
    rows = verdict_rows("human-only", "alpha", ["g", "g", "g", "o", "tie", "none", "g", "g"])
    rows += verdict_rows("human-only", "beta", ["g", "o", "g", "g", "g", "g", "tie", "g"])
    write_table(project / "artifacts/judge/verdicts.parquet", pl.DataFrame(rows, schema=VERDICT_SCHEMA))
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["metrics"] = {**raw.get("metrics", {}), "bootstrap_resamples": 500}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return project


def test_the_stage_writes_every_table_and_publishes_one_headline_file_per_judge(judged):
    m = run_stage("metrics")
    assert {o.path for o in m.outputs} == OUTPUTS
    full = orjson.loads((judged / "artifacts/metrics/metrics.json").read_bytes())
    headline = orjson.loads((judged / "reports/metrics/human-only/alpha.json").read_bytes())
    assert headline["strict_accuracy"] == round(full["human-only"]["alpha"]["strict_accuracy"], 4) and headline["n"] == 8
    assert sorted(p.name for p in (judged / "reports/metrics/human-only").iterdir()) == ["alpha.json", "beta.json"]
    alpha = full["human-only"]["alpha"]
    assert alpha["n_pairs"] == 8
    assert alpha["strict_accuracy"] == pytest.approx(5 / 8)
    assert alpha["soft_accuracy"] == pytest.approx(5.5 / 8)
    assert alpha["verdict_rate"] == pytest.approx(7 / 8)  # the abstention (none) is no verdict
    assert alpha["coverage"] == 1.0 and alpha["accuracy_on_covered"] == pytest.approx(5 / 8)  # asked about every pair
    assert alpha["cost_usd"] == pytest.approx(0.008)
    assert (alpha["n_error"], alpha["n_error_by_reason"], alpha["n_truncated"]) == (0, {}, 0)
    assert not [k for k in alpha if "latency" in k]  # a run fact, never a metric
    comparisons = pl.read_parquet(judged / "artifacts/metrics/comparisons.parquet")
    assert comparisons.select("judge_a", "judge_b", "compared", "flips").rows() == [("alpha", "beta", 8, 5)]


def test_an_unchanged_rerun_is_reused_and_a_forced_one_is_byte_identical(judged):
    first = run_stage("metrics")
    before = {p.name: p.read_bytes() for p in (judged / "artifacts/metrics").iterdir()}
    again = run_stage("metrics")
    assert again.identity == first.identity
    facts = [json.loads(line) for line in (judged / ".novelty-audit/runlog.jsonl").read_text().splitlines()]
    assert [f["action"] for f in facts if f["stage"] == "metrics"] == ["computed", "reused"]
    run_stage("metrics", force=True)
    after = {p.name: p.read_bytes() for p in (judged / "artifacts/metrics").iterdir()}
    assert after == before


def test_a_new_seed_is_a_new_identity_that_moves_intervals_but_not_values(judged):
    first = run_stage("metrics")
    t1 = pl.read_parquet(judged / "artifacts/metrics/metrics.parquet")
    raw = yaml.safe_load((judged / "params.yaml").read_text())
    raw["metrics"]["seed"] = 1
    (judged / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    second = run_stage("metrics")
    t2 = pl.read_parquet(judged / "artifacts/metrics/metrics.parquet")
    assert second.identity != first.identity
    assert t1["value"].equals(t2["value"])
    assert not t1["ci_low"].equals(t2["ci_low"])


def test_failed_calls_are_published_by_reason_for_dvc_metrics(judged):
    rows = verdict_rows("human-only", "gamma", ["g", "none", "none"])
    rows[1].update(n_valid=0, n_invalid=0, n_error=2, error_reasons=["connection refused", "connection refused"],
                   votes_forward=["error", "error"])
    rows[2].update(n_valid=0, n_invalid=0, n_truncated=1, votes_forward=["truncated"])
    write_table(judged / "artifacts/judge/verdicts.parquet", pl.DataFrame(rows, schema=VERDICT_SCHEMA))
    run_stage("metrics")
    gamma = orjson.loads((judged / "artifacts/metrics/metrics.json").read_bytes())["human-only"]["gamma"]
    assert (gamma["n_error"], gamma["n_error_by_reason"], gamma["n_truncated"]) == (2, {"connection refused": 2}, 1)
    assert gamma["strict_accuracy"] == pytest.approx(1 / 3)  # failed pairs stay in the denominator
    reasons = pl.read_parquet(judged / "artifacts/metrics/error_reasons.parquet")
    assert reasons.rows() == [("human-only", "gamma", "pairwise", "connection refused", 2)]


def test_without_judge_outputs_the_stage_says_which_stage_to_run(project):
    with pytest.raises(ManifestMismatchError, match="verdicts.parquet: not found") as exc:
        run_stage("metrics")
    assert "judge" in exc.value.hint


def test_controls_through_pin_judge_and_metrics_give_their_known_values(tiny):
    """The real pin, judge and metrics stages on the small project (every split's first pairs, NovBench's first papers)."""
    from tiny_project import PAIRS

    raw = yaml.safe_load((tiny / "params.yaml").read_text())
    raw["judge"]["judges"] = {n: {"backend": n} for n in ("always-first", "always-second", "random", "abstain")}
    raw["judge"]["progress"] = False
    raw["metrics"]["bootstrap_resamples"] = 1000
    (tiny / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    for name in ("pin", "judge", "metrics"):
        run_stage(name)
    doc = orjson.loads((tiny / "artifacts/metrics/metrics.json").read_bytes())
    assert sorted(doc) == ["human-only", "human-plus-generated", "novbench-change"]  # NovBench: its generators
    for ds in ("human-only", "human-plus-generated"):
        first = doc[ds]["always-first"]
        # always-first names idea_0 forward and idea_1 reversed: a tie on every pair, fully order-driven
        assert (first["strict_accuracy"], first["tie_rate"], first["coverage"]) == (0.0, 1.0, 1.0)
        assert first["order_flip_rate"] == 1.0 and first["first_position_rate"] == 1.0
        assert doc[ds]["abstain"]["verdict_rate"] == 0.0 and doc[ds]["abstain"]["strict_accuracy"] == 0.0
        assert doc[ds]["abstain"]["n_pairs"] == PAIRS
    assert load_manifest(tiny / "artifacts/metrics").summary["human-only"]["judges"] == 4


# `dvc metrics show` reading the headline files under reports/metrics/: tests/test_pipeline_dvc.py,
# on the pipeline it reproduces.
