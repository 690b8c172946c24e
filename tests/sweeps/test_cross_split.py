"""Cross-split rows of reports/sweeps.json, as the instability study reads them: the plan-format variant of a judge
is the same judge on the same two papers in another form, so it is compared pair by pair with the base's verdicts on
the original split (its flip rate is a direct count); a regenerated-low-side variant holds other ideas, so it is
compared as a second sample (no disagreement, no McNemar: null). Pointwise variants get macro-F1 and a label-free
pointwise disagreement that equal direct counts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from mock_llm import MockLLM
from scipy.stats import binomtest
from sklearn.metrics import f1_score

from novelty_audit.pipeline import run_stage

BASE = "mock-reference"


def answer_by_text(body: dict, nth: int) -> str:
    """A judge whose answer depends on the exact prompt text: the same pair in another wording may flip."""
    text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    bit = hashlib.sha256(text.encode()).digest()[0] % 2
    if '"answer": "yes"' in text or "<yes or no>" in text:
        return '{"answer": "%s"}' % ("yes", "no")[bit]
    return '{"answer": "%s"}' % "AB"[bit]


def write_judge(project: Path, base_url: str, vary: dict, *, datasets: list[str], tasks: list[str], limit: int | None) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {
        "datasets": datasets, "tasks": tasks, "progress": False, "limit": limit, "probe_datasets": [],
        "judges": {BASE: {"backend": "openai", "args": {
            "model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "concurrency": 8,
            "pointwise_prompt": "reference-v1"}}},
        "sweeps": {"study": {"base": BASE, "vary": vary}},
    }  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def test_the_plan_format_variant_is_paired_with_the_base_on_all_154_human_only_pairs_and_its_flips_are_a_direct_count(
    project: Path, monkeypatch
) -> None:
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-cross-split")
    run_stage("pin")
    with MockLLM(answer=answer_by_text) as mock:
        write_judge(project, mock.base_url, {"dataset": ["human-only-plan"]}, datasets=["human-only"], tasks=["pairwise"], limit=None)
        run_stage("judge")
        run_stage("metrics")
        assert mock.count == 2 * 2 * 154  # the base on human-only, the variant on the plan split; both orders, one vote
    row = json.loads((project / "reports/sweeps.json").read_text())["human-only-plan"]["study"]["study/dataset=human-only-plan"]
    v = pl.read_parquet(project / "artifacts/judge/verdicts.parquet")
    abstract = v.filter((pl.col("dataset") == "human-only") & (pl.col("judge") == BASE))
    plan = v.filter((pl.col("dataset") == "human-only-plan") & (pl.col("judge") == "study/dataset=human-only-plan"))
    both = abstract.join(plan, on="pair_id", suffix="_plan")
    assert both.height == 154
    flips = both.filter(pl.col("verdict") != pl.col("verdict_plan")).height
    assert 0 < flips < 154

    assert row["compared_on"] == {"variant": "human-only-plan", "base": "human-only"} and row["paired"] is True
    assert row["n_items"] == row["n_items_base"] == 154
    assert row["disagreement_rate"] == pytest.approx(flips / 154)
    assert row["disagreement_rate_ci_low"] <= row["disagreement_rate"] <= row["disagreement_rate_ci_high"]
    right = lambda df, s="": df[f"verdict{s}"] == df[f"gold_idea_id{s}"]
    only_base, only_plan = int((right(both) & ~right(both, "_plan")).sum()), int((~right(both) & right(both, "_plan")).sum())
    assert row["mcnemar_p"] == pytest.approx(binomtest(only_base, only_base + only_plan, 0.5).pvalue)
    assert row["delta_strict_accuracy"] == pytest.approx((only_plan - only_base) / 154)
    assert row["delta_strict_accuracy_ci_low"] <= row["delta_strict_accuracy"] <= row["delta_strict_accuracy_ci_high"]


@pytest.fixture
def swept(tiny: Path, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-cross-split")
    run_stage("pin")
    vary = {"pointwise_prompt": ["p1-v1"], "dataset": ["human-plus-generated-gpt-5.4", "human-only-plan"]}
    with MockLLM(answer=answer_by_text) as mock:
        write_judge(tiny, mock.base_url, vary, datasets=["human-only", "human-plus-generated"], tasks=["pairwise", "pointwise"], limit=None)
        run_stage("judge")
        run_stage("metrics")
    return (json.loads((tiny / "reports/sweeps.json").read_text()), pl.read_parquet(tiny / "artifacts/judge/verdicts.parquet"),
            pl.read_parquet(tiny / "artifacts/judge/pointwise.parquet"))


def rows_of(df: pl.DataFrame, ds: str, judge: str) -> pl.DataFrame:
    return df.filter((pl.col("dataset") == ds) & (pl.col("judge") == judge))


def test_a_regenerated_low_side_variant_is_unpaired_with_no_disagreement_and_an_unpaired_interval(swept) -> None:
    report, v, p = swept
    row = report["human-plus-generated-gpt-5.4"]["study"]["study/dataset=human-plus-generated-gpt-5.4"]
    assert row["compared_on"] == {"variant": "human-plus-generated-gpt-5.4", "base": "human-plus-generated"}
    assert row["paired"] is False
    for field in ("disagreement_rate", "mcnemar_p", "mcnemar_p_holm", "pointwise_disagreement_rate"):
        assert field in row and row[field] is None, field
    ours, base = rows_of(v, "human-plus-generated-gpt-5.4", "study/dataset=human-plus-generated-gpt-5.4"), rows_of(v, "human-plus-generated", BASE)
    acc = lambda df: float((df["verdict"] == df["gold_idea_id"]).mean())
    assert (row["n_items"], row["n_items_base"]) == (ours.height, base.height)
    assert row["delta_strict_accuracy"] == pytest.approx(acc(ours) - acc(base))
    assert row["delta_strict_accuracy_ci_low"] <= row["delta_strict_accuracy"] <= row["delta_strict_accuracy_ci_high"]
    assert row["pointwise_n_items"] == rows_of(p, "human-plus-generated-gpt-5.4", "study/dataset=human-plus-generated-gpt-5.4").height


def direct_macro_f1(df: pl.DataFrame) -> float:
    code = {"POSITIVE": 0, "NEGATIVE": 1}
    return float(f1_score([code.get(x, -1) for x in df["gold_label"]], [code.get(x, -1) for x in df["predicted"]],
                          labels=[0, 1], average="macro", zero_division=0))


def test_pointwise_variants_have_delta_macro_f1_and_a_pointwise_disagreement_equal_to_a_direct_count(swept) -> None:
    report, _, p = swept
    for ds, vid, base_ds in (
        ("human-only", "study/pointwise_prompt=p1-v1", "human-only"),
        ("human-plus-generated", "study/pointwise_prompt=p1-v1", "human-plus-generated"),
        ("human-only-plan", "study/dataset=human-only-plan", "human-only"),  # the same ideas as plans: paired by idea
    ):
        row = report[ds]["study"][vid]
        assert row["paired"] is True and row["compared_on"] == {"variant": ds, "base": base_ds}
        ours, base = rows_of(p, ds, vid), rows_of(p, base_ds, BASE)
        both = base.join(ours, on="idea_id", suffix="_v")
        assert both.height == ours.height == row["pointwise_n_items"] == row["pointwise_n_items_base"]
        assert row["pointwise_disagreement_rate"] == pytest.approx(float((both["predicted"] != both["predicted_v"]).mean()))
        assert row["macro_f1"] == pytest.approx(direct_macro_f1(ours))
        assert row["macro_f1_base"] == pytest.approx(direct_macro_f1(base))
        assert row["delta_macro_f1"] == pytest.approx(row["macro_f1"] - row["macro_f1_base"])
        assert row["delta_macro_f1_ci_low"] <= row["delta_macro_f1"] <= row["delta_macro_f1_ci_high"]
        # both tasks: soft accuracy and ties (pairwise notions) move with their own intervals
        for field in ("delta_soft_accuracy", "delta_tie_rate"):
            assert row[f"{field}_ci_low"] <= row[field] <= row[f"{field}_ci_high"]
    assert report["human-only-plan"]["study"]["study/dataset=human-only-plan"]["pointwise_disagreement_rate"] > 0


def test_a_prompt_variant_that_leaves_pairwise_calls_alone_agrees_with_its_base_pairwise(swept) -> None:
    report, v, _ = swept
    row = report["human-only"]["study"]["study/pointwise_prompt=p1-v1"]
    assert row["disagreement_rate"] == 0 and row["delta_strict_accuracy"] == 0 and row["mcnemar_p"] == 1.0
    assert row["n_items"] == rows_of(v, "human-only", BASE).height
    assert np.isclose(row["soft_accuracy"], row["soft_accuracy_base"])
