"""Search-agent metrics: grounded "not novel" decisions and effort per decision, only for judges that searched.

The tables are hand-built with the agent columns of the issue-28 contract (docs/design/tables.md): n_undecided,
n_rounds, n_queries, n_tokens, citations (canonical JSON) and, pointwise, cost_usd.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl
import pytest
from metrics_tables import PAIR_COLUMNS, pair_row

from novelty_audit.errors import BadInputError
from novelty_audit.metrics import METRICS, MetricsParams, compute_metrics

FAST = MetricsParams(bootstrap_resamples=0)
AGENT = {"n_undecided": pl.Int64, "n_rounds": pl.Int64, "n_queries": pl.Int64, "n_tokens": pl.Int64,
         "citations": pl.String, "cost_usd": pl.Float64}
POINT = {"dataset": pl.String, "judge": pl.String, "idea_id": pl.String, "gold_label": pl.String,
         "predicted": pl.String, "score": pl.Float64, "n_valid": pl.Int64, "n_invalid": pl.Int64,
         "n_refusal": pl.Int64, "n_error": pl.Int64, "n_truncated": pl.Int64, "error_reasons": pl.List(pl.String),
         **AGENT}
AGENT_METRICS = ("grounded_rate", "cost_per_decision_usd", "queries_per_decision", "rounds_per_decision",
                 "tokens_per_decision", "n_undecided")


def cite(retrieved: bool, title: str | None = "Prior", vote: int = 0) -> dict[str, Any]:
    return {"order": None, "vote": vote, "title": title, "doc_id": "s2:p" if title else None, "retrieved": retrieved}


def point(idea: str, predicted: str, *, gold: str = "NEGATIVE", judge: str = "agent", agent: bool = True,
          cites: list[dict] | None = None, **counts: Any) -> dict[str, Any]:
    row = {"dataset": "ds", "judge": judge, "idea_id": idea, "gold_label": gold, "predicted": predicted, "score": None,
           "error_reasons": [], **{c: counts.pop(c, 0) for c in ("n_valid", "n_invalid", "n_refusal", "n_error",
                                                                    "n_truncated", "n_undecided")}}
    if agent:
        row |= {"n_rounds": counts.pop("rounds"), "n_queries": counts.pop("queries"), "n_tokens": counts.pop("tokens"),
                "cost_usd": counts.pop("cost"),
                "citations": orjson.dumps(cites or [], option=orjson.OPT_SORT_KEYS).decode()}
    else:
        row |= {"n_rounds": None, "n_queries": None, "n_tokens": None, "citations": None, "cost_usd": counts.pop("cost", 0.0)}
    assert not counts, counts
    return row


def points(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=POINT)


def pairs_with_a_dummy_judge() -> pl.DataFrame:
    # compute_metrics needs a verdict table; a plain judge on one pair, without agent columns.
    return pl.DataFrame([pair_row("p1", "a")], schema=PAIR_COLUMNS)


def agent_rows() -> list[dict]:
    """Four ideas, five decisions (one idea asked twice): 3 NEGATIVE decisions citing (2 retrieved), 1 undecided."""
    return [
        point("i1", "NEGATIVE", n_valid=1, rounds=3, queries=2, tokens=1200, cost=0.012, cites=[cite(True)]),
        point("i2", "NEGATIVE", gold="POSITIVE", n_valid=2, rounds=7, queries=5, tokens=3000, cost=0.03,
              cites=[cite(True, vote=0), cite(False, title=None, vote=1)]),
        point("i3", "POSITIVE", gold="POSITIVE", n_valid=1, rounds=2, queries=1, tokens=800, cost=0.008),
        point("i4", "none", n_undecided=1, rounds=10, queries=9, tokens=6000, cost=0.05),
    ]


def agent_json(rows: list[dict], params: MetricsParams = FAST) -> dict[str, Any]:
    return compute_metrics(pairs_with_a_dummy_judge(), points(rows), params=params).as_json()["ds"]


def test_grounded_rate_is_retrieved_citations_over_negative_decisions_and_an_uncited_negative_counts_against_it():
    d = agent_json(agent_rows())["agent"]
    assert d["grounded_rate"] == pytest.approx(2 / 3)
    # i2 holds two decisions: decisions within an idea are not independent, so no Wilson interval
    assert "grounded_rate_wilson_low" not in d
    one_vote = agent_json(agent_rows()[:1] + agent_rows()[2:])["agent"]
    assert one_vote["grounded_rate"] == 1.0 and one_vote["grounded_rate_wilson_low"] < 1.0


def test_effort_per_decision_divides_by_every_call_made_including_undecided_and_failed_ones():
    rows = agent_rows() + [point("i5", "none", n_error=1, rounds=1, queries=1, tokens=0, cost=0.0)]
    d = agent_json(rows)["agent"]
    decisions = 1 + 2 + 1 + 1 + 1
    assert d["cost_per_decision_usd"] == pytest.approx((0.012 + 0.03 + 0.008 + 0.05 + 0.0) / decisions)
    assert d["queries_per_decision"] == pytest.approx((2 + 5 + 1 + 9 + 1) / decisions)
    assert d["rounds_per_decision"] == pytest.approx((3 + 7 + 2 + 10 + 1) / decisions)
    assert d["tokens_per_decision"] == pytest.approx((1200 + 3000 + 800 + 6000) / decisions)
    assert d["n_undecided"] == 1
    assert d["pointwise_n_error"] == 1


def test_an_idea_whose_only_decision_was_undecided_is_covered_and_counted_wrong():
    d = agent_json([point("i4", "none", n_undecided=1, rounds=10, queries=9, tokens=6000, cost=0.05),
                    point("i3", "POSITIVE", gold="POSITIVE", n_valid=1, rounds=2, queries=1, tokens=800, cost=0.008)])
    assert "agent" in d, "an undecided decision is a question that was asked: the judge covers that idea"
    assert (d["agent"]["n_ideas"], d["agent"]["pointwise_accuracy"], d["agent"]["n_undecided"]) == (2, 0.5, 1)


def test_judges_without_agent_columns_get_no_agent_metric_entry():
    prompted = point("i1", "NEGATIVE", judge="prompted", agent=False, n_valid=1, cost=0.001)
    d = agent_json(agent_rows() + [prompted])
    assert set(AGENT_METRICS) <= set(d["agent"])
    assert not set(AGENT_METRICS) & set(d["prompted"]), d["prompted"]
    assert "pointwise_macro_f1" in d["prompted"]
    assert not any(k.startswith("pairwise_") for k in d["j"]), "the plain pairwise judge has no agent metric either"


def test_grounded_rate_is_undefined_without_a_negative_decision_and_the_rest_still_reported():
    d = agent_json([point("i3", "POSITIVE", gold="POSITIVE", n_valid=1, rounds=2, queries=1, tokens=800, cost=0.008)])
    assert "grounded_rate" not in d["agent"]
    assert (d["agent"]["queries_per_decision"], d["agent"]["n_undecided"]) == (1.0, 0)


def test_an_unknown_cost_makes_cost_per_decision_null_rather_than_free():
    rows = agent_rows()
    rows[0]["cost_usd"] = None
    d = agent_json(rows)["agent"]
    assert "cost_per_decision_usd" in d and d["cost_per_decision_usd"] is None  # unknown, shown as such
    assert "cost_per_decision_usd_ci_low" not in d
    assert "queries_per_decision" in d


def test_per_decision_metrics_carry_a_bootstrap_interval_over_ideas():
    d = agent_json(agent_rows(), MetricsParams(bootstrap_resamples=200, seed=3))["agent"]
    for m in ("cost_per_decision_usd", "queries_per_decision", "grounded_rate"):
        assert d[f"{m}_ci_low"] <= d[m] <= d[f"{m}_ci_high"], m


def test_a_pairwise_agent_gets_the_same_metrics_prefixed_pairwise():
    cols = {**PAIR_COLUMNS, **AGENT}

    def row(pair: str, verdict: str, cites: list[dict], **kw: Any) -> dict:
        return pair_row(pair, verdict, judge="search-agent") | {
            "n_undecided": kw.get("undecided", 0), "n_rounds": kw["rounds"], "n_queries": kw["queries"],
            "n_tokens": kw["tokens"], "cost_usd": kw["cost"],
            "citations": orjson.dumps(cites, option=orjson.OPT_SORT_KEYS).decode()}

    rows = [row("p1", "a", [cite(True) | {"order": "forward"}], rounds=4, queries=3, tokens=900, cost=0.01),
            row("p2", "none", [], rounds=10, queries=10, tokens=5000, cost=0.04, undecided=1)]
    for r in rows[1:]:
        r["n_valid"] = 0
    d = compute_metrics(pl.DataFrame(rows, schema=cols), params=FAST).as_json()["ds"]["search-agent"]
    assert d["pairwise_grounded_rate"] == 1.0
    assert d["pairwise_queries_per_decision"] == pytest.approx(13 / 2)
    assert d["pairwise_cost_per_decision_usd"] == pytest.approx(0.05 / 2)
    assert (d["pairwise_n_undecided"], d["n_pairs"], d["covered"]) == (1, 2, 2)
    assert not set(AGENT_METRICS) & set(d), "pointwise names stay pointwise"


def test_a_citations_cell_that_is_not_a_list_of_checked_entries_names_dataset_judge_idea_and_field():
    rows = agent_rows()
    rows[1]["citations"] = '[{"title": "Prior"}]'
    with pytest.raises(BadInputError, match=r"dataset ds, judge agent, idea i2, field citations"):
        agent_json(rows)


def test_the_agent_metrics_are_registered_with_their_direction_and_definition():
    specs = {s.name: s for s in METRICS}
    assert (specs["grounded_rate"].table, specs["grounded_rate"].direction) == ("pointwise", "higher")
    assert specs["cost_per_decision_usd"].direction == "lower"
    assert specs["pairwise_cost_per_decision_usd"].table == "pairwise"
    assert all(specs[m].description for m in AGENT_METRICS)
