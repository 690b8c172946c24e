"""The probe detects a judge that obeys instructions written into an idea, and shows the delimiting mitigation."""

from __future__ import annotations

import contextlib
import json

import polars as pl
import pytest
from mock_llm import MockLLM
from project_copy import make_project
from probe_world import CONTROLS, add_catalogue, gullible, mock_judge, run, set_params


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Built once for the module (pin → metrics with three mock judges): the tests below only read it."""
    project = make_project(tmp_path_factory.mktemp("probe") / "project")
    add_catalogue(project)
    with MockLLM(answer=gullible) as mock, contextlib.chdir(project):
        set_params(project, {**CONTROLS, "gullible": mock_judge(mock.base_url),
                             "gullible-delimited": mock_judge(mock.base_url, guard={"delimit": True}),
                             "gullible-data-notice": mock_judge(mock.base_url, guard={"data_notice": True})})
        run("pin", "probe", "judge", "metrics")
    return project, json.loads((project / "artifacts/metrics/metrics.json").read_text())["human-only:injection"]


def test_a_gullible_judge_follows_direct_instructions_and_ignores_neutral_padding(world):
    _, m = world
    g = m["gullible"]
    assert g["attack_success_rate_instruction"] >= 0.95
    assert g["length_control_rate"] <= 0.05
    assert g["n_probes"] == 12 * 5
    assert 0 <= g["attack_success_rate_instruction_wilson_low"] <= g["attack_success_rate_instruction"] <= g["attack_success_rate_instruction_wilson_high"]
    # It obeys instructions only: fake authority and bare claims do not move it.
    assert g["attack_success_rate_authority"] == g["attack_success_rate_claim"] == 0.0


def test_delimiting_each_idea_stops_the_instructions_of_the_same_judge(world):
    _, m = world
    assert m["gullible-delimited"]["attack_success_rate_instruction"] <= 0.05
    # A notice alone does not stop a judge that does not read it: the probe shows the difference.
    assert m["gullible-data-notice"]["attack_success_rate_instruction"] >= 0.95


def test_controls_get_probe_figures_and_never_an_accuracy_on_the_probe(world):
    project, m = world
    assert set(CONTROLS) <= set(m)
    assert m["always-first"]["attack_success_rate"] == 0.0 and m["always-first"]["length_control_rate"] == 0.0
    # abstain was asked every probe and gave no verdict: counted, but no rate over probes it never answered.
    assert m["abstain"]["n_probes"] == m["abstain"]["n_no_verdict"] > 0 and m["abstain"]["n_eligible"] == 0
    assert m["abstain"].get("attack_success_rate") is None
    assert "strict_accuracy" not in m["gullible"]
    pairs = pl.read_parquet(project / "artifacts/metrics/probe_pairs.parquet")
    assert pairs.filter(pl.col("judge") == "gullible").height == 60
    full = json.loads((project / "artifacts/metrics/metrics.json").read_text())
    assert "strict_accuracy" in full["human-only"]["gullible"]


def test_the_guard_is_part_of_the_judge_config(world):
    project, _ = world
    judges = {r["judge"]: json.loads(r["config"]) for r in pl.read_parquet(project / "artifacts/judge/judges.parquet").iter_rows(named=True)}
    assert "guard" not in judges["gullible"]
    assert judges["gullible-delimited"]["guard"]["delimit"] is True
