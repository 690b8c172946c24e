"""compute_metrics: the metrics.json shape, which judges are compared, and prompt sensitivity."""

from __future__ import annotations

import orjson
import polars as pl
import pytest
from metrics_tables import pair_row, point_table, table

from novelty_audit.errors import BadInputError, ConfigError
from novelty_audit.metrics import MetricsParams, compute_metrics, prompt_groups

FAST = MetricsParams(bootstrap_resamples=200)


def three_judges(dataset: str = "ds") -> list[dict]:
    verdicts = {
        "first-v1": ["a", "a", "a", "b"],
        "first-v2": ["a", "b", "tie", "b"],
        "distance": ["a", "a", "none", "a"],
    }
    return [
        pair_row(f"p{i}", v, judge=j, dataset=dataset) for j, vs in verdicts.items() for i, v in enumerate(vs)
    ]


def judges_table() -> pl.DataFrame:
    cfg = {
        "first-v1": {"backend": "openai", "model": "m", "prompt": "v1", "prompt_digest": "d1"},
        "first-v2": {"backend": "openai", "model": "m", "prompt": "v2", "prompt_digest": "d2"},
        "distance": {"backend": "distance-yin", "model": "minilm"},
    }
    return pl.DataFrame(
        [{"judge": j, "backend": c["backend"], "config_digest": j, "config": orjson.dumps(c).decode()} for j, c in cfg.items()]
    )


def test_metrics_json_is_dataset_judge_metric_with_numbers_and_separate_ci_keys():
    out = compute_metrics(table(three_judges("one") + three_judges("two")), params=FAST).as_json()
    assert sorted(out) == ["one", "two"]
    assert sorted(out["one"]) == ["distance", "first-v1", "first-v2"]
    d = out["one"]["first-v1"]
    assert d["strict_accuracy"] == 0.75 and d["n_pairs"] == 4
    assert {"strict_accuracy_ci_low", "strict_accuracy_ci_high", "strict_accuracy_wilson_low", "strict_accuracy_wilson_high"} <= set(d)
    # numbers, and the failed calls by reason as {reason: count} (dvc flattens it to n_error_by_reason.<reason>);
    # a cost these rows do not record (no cost_usd column) is unknown: null, never 0 and never left out
    for judge in out["one"].values():
        for k, v in judge.items():
            if k == "cost_usd":
                assert v is None
                continue
            assert isinstance(v, (int, float)) or (k.endswith("_by_reason") and all(isinstance(n, int) for n in v.values())), k
    assert d["n_error_by_reason"] == {} and "mean_latency_s" not in d


def test_by_default_every_two_judges_of_a_dataset_are_compared():
    t = compute_metrics(table(three_judges()), params=FAST)
    assert t.comparisons.height == 3
    row = t.comparisons.filter((pl.col("judge_a") == "first-v1") & (pl.col("judge_b") == "first-v2")).row(0, named=True)
    assert (row["compared"], row["flips"]) == (4, 2)
    assert orjson.loads(row["directions"]) == {"correct->tie": 1, "correct->wrong": 1}
    # flip matrix: both orders plus the diagonal, for the heatmap
    assert t.flip_matrix.height == 3 * 3


def test_listed_comparisons_only_and_an_unknown_judge_is_a_config_error():
    p = MetricsParams(bootstrap_resamples=0, compare="listed", comparisons=[("first-v1", "distance")], prompt_sensitivity=False)
    t = compute_metrics(table(three_judges()), params=p)
    assert t.comparisons.select("judge_a", "judge_b", "source").rows() == [("first-v1", "distance", "listed")]
    with pytest.raises(ConfigError, match="judge 'first-v3'.*"):
        compute_metrics(table(three_judges()), params=p.model_copy(update={"comparisons": [("first-v3", "distance")]}))


def test_prompt_sensitivity_groups_judges_by_backend_and_model_with_different_prompts():
    assert prompt_groups(judges_table()) == {"openai/m": ["first-v1", "first-v2"]}
    t = compute_metrics(table(three_judges()), judges=judges_table(), params=FAST)
    row = t.prompt_sensitivity.row(0, named=True)
    assert row["backbone"] == "openai/m" and row["judges"] == ["first-v1", "first-v2"]
    assert row["strict_accuracy_spread"] == pytest.approx(0.75 - 0.25)
    assert row["mean_flip_rate"] == pytest.approx(0.5)


def test_judges_that_disagree_on_the_gold_idea_are_rejected():
    rows = three_judges()
    rows[0] = pair_row("p0", "a", gold="b", judge="first-v1")
    with pytest.raises(BadInputError, match="disagree on the gold idea"):
        compute_metrics(table(rows), params=FAST)


def test_a_judge_missing_pairs_is_compared_on_the_common_pairs_and_the_rest_is_listed():
    rows = [r for r in three_judges() if not (r["judge"] == "distance" and r["pair_id"] == "p3")]
    t = compute_metrics(table(rows), params=FAST)
    row = t.comparisons.filter((pl.col("judge_a") == "distance") & (pl.col("judge_b") == "first-v1")).row(0, named=True)
    assert row["compared"] == 3 and row["only_a"] == [] and row["only_b"] == ["p3"]
    assert t.as_json()["ds"]["distance"]["n_pairs"] == 3


def test_pointwise_metrics_join_the_same_judge_entry():
    points = point_table(
        [
            {"dataset": "ds", "judge": "distance", "idea_id": f"i{k}", "gold_label": g, "predicted": g, "score": s}
            for k, (g, s) in enumerate([("POSITIVE", 0.9), ("NEGATIVE", 0.1), ("POSITIVE", 0.7), ("NEGATIVE", 0.2)])
        ]
    )
    out = compute_metrics(table(three_judges()), points, params=FAST).as_json()
    assert out["ds"]["distance"]["pointwise_auroc"] == 1.0
    assert out["ds"]["distance"]["pointwise_macro_f1"] == 1.0
    assert "pointwise_accuracy" not in out["ds"]["first-v1"]
