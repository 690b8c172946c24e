"""A price nobody set is an unknown cost, never a free one: an API judge without a price records null cost in its
rows, metrics.json (`cost_usd: null`), sweeps.json (`cost_per_decision_usd: null`) and the report ("unknown"), and
the dry run names it; its priced twin, asked the same calls, shows what they cost."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.config import MetricsParams, SweepVariant
from novelty_audit.metrics import sweeps_json
from novelty_audit.pipeline import run_stage

PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


def judge_section(base_url: str) -> dict:
    args = {"model": "mock-unlisted", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "concurrency": 8,
            "pointwise_prompt": "reference-v1"}
    return {
        "datasets": ["human-only"], "tasks": ["pairwise", "pointwise"], "progress": False, "limit": 3, "probe_datasets": [],
        "judges": {"unpriced": {"backend": "openai", "args": args},
                   "priced": {"backend": "openai", "args": {**args, "price": PRICE}},
                   "first": {"backend": "always-first"}},
        "sweeps": {"u": {"base": "unpriced", "vary": {"votes": [2]}}, "p": {"base": "priced", "vary": {"votes": [2]}}},
    }  # fmt: skip


@pytest.fixture
def priced_and_not(tiny: Path, monkeypatch, run_main):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-unknown-price")
    run_stage("pin")
    raw = yaml.safe_load((tiny / "params.yaml").read_text())
    with MockLLM() as mock:
        raw["judge"] = judge_section(mock.base_url)  # no budget_usd: an unpriced judge is allowed, its cost unknown
        (tiny / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        dry = run_main("stage", "judge", "--dry-run", "--json"), run_main("stage", "judge", "--dry-run")
        run_stage("judge")
        run_stage("metrics")
    return tiny, dry


def test_a_judge_without_a_price_has_null_cost_everywhere_and_its_priced_twin_a_number(priced_and_not) -> None:
    project, _ = priced_and_not
    for table in ("verdicts", "pointwise"):
        df = pl.read_parquet(project / f"artifacts/judge/{table}.parquet")
        unpriced, priced = (df.filter(pl.col("judge").is_in([j, f"{j[0]}/votes=2"])) for j in ("unpriced", "priced"))
        assert unpriced.height == priced.height > 0 and unpriced["cost_usd"].is_null().all(), table
        assert (priced["cost_usd"] > 0).all(), table
        assert (df.filter(pl.col("judge") == "first")["cost_usd"] == 0).all(), table  # no API call: free indeed
    metrics = json.loads((project / "artifacts/metrics/metrics.json").read_text())["human-only"]
    assert "cost_usd" in metrics["unpriced"] and metrics["unpriced"]["cost_usd"] is None
    assert metrics["priced"]["cost_usd"] > 0
    sweeps = json.loads((project / "reports/sweeps.json").read_text())["human-only"]
    unpriced, priced = sweeps["u"]["u/votes=2"], sweeps["p"]["p/votes=2"]
    for field in ("cost_per_decision_usd", "cost_per_decision_usd_base", "pointwise_cost_per_decision_usd",
                  "pointwise_cost_per_decision_usd_base"):
        assert field in unpriced and unpriced[field] is None, field
        assert priced[field] > 0, field
    verdicts = pl.read_parquet(project / "artifacts/judge/verdicts.parquet").filter(pl.col("judge") == "p/votes=2")
    calls = int(verdicts.select(pl.sum_horizontal("n_valid", "n_invalid", "n_refusal", "n_error", "n_truncated")).sum().item())
    assert priced["cost_per_decision_usd"] == pytest.approx(float(verdicts["cost_usd"].sum()) / calls)


def test_the_dry_run_names_the_judges_without_a_price_and_leaves_their_cost_unknown(priced_and_not) -> None:
    _, ((code, out, err), (code_text, text, _)) = priced_and_not
    assert code == 0 and code_text == 0, err
    planned = json.loads(out)
    for judge in ("unpriced", "u/votes=2"):
        assert planned[judge]["usd_estimate"] is None and planned[judge]["priced"] is False and planned[judge]["calls"] > 0
    assert planned["priced"]["usd_estimate"] > 0 and planned["priced"]["priced"] is True
    assert "priced" not in planned["first"]
    assert "unpriced: " in text and "cost unknown (no price for its model)" in text
    named = next(ln for ln in text.splitlines() if ln.startswith("no price (cost unknown, not in the total"))
    assert sorted(named.split(": ", 1)[1].split(", ")) == ["u/votes=2", "unpriced"]


def test_the_report_shows_an_unknown_cost_as_unknown(priced_and_not) -> None:
    project, _ = priced_and_not
    run_stage("report")
    lines = [ln for ln in (project / "reports/report.md").read_text().splitlines() if ln.startswith("| unpriced ")]
    assert any("unknown" in ln for ln in lines), lines
    assert not any("free" in ln or "$0.0000" in ln for ln in lines), lines


def test_sweeps_json_keeps_an_unknown_cost_null_and_a_known_one_per_call() -> None:
    rows = []
    for judge, cost in (("base", None), ("s/votes=1", 0.004)):
        for i in range(4):
            rows.append({"dataset": "d", "judge": judge, "pair_id": f"p{i}", "idea_0": f"a{i}", "idea_1": f"b{i}",
                         "gold_idea_id": f"a{i}", "verdict": f"a{i}", "n_valid": 2, "n_invalid": 0, "n_refusal": 0,
                         "n_error": 0, "n_truncated": 0, "cost_usd": cost})  # fmt: skip
    out = sweeps_json(pl.DataFrame(rows), {"s/votes=1": SweepVariant(sweep="s", base="base", knobs={"votes": 1})},
                      MetricsParams(bootstrap_resamples=50))["d"]["s"]["s/votes=1"]
    assert out["cost_per_decision_usd_base"] is None
    assert out["cost_per_decision_usd"] == pytest.approx(0.004 / 2)
