"""A sweep's size is checked from its value counts before anything is expanded (`judge.max_variants`), and the dry
run of a large plan shows its progress on stderr while its --json output stays clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from novelty_audit.errors import ConfigError
from novelty_audit.params import load_params
from novelty_audit.pipeline import run_stage

REPO = Path(__file__).resolve().parents[2]


def params_with(tmp_path: Path, sweeps: dict, **judge) -> Path:
    doc = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    doc["judge"]["sweeps"] = sweeps
    doc["judge"].update(judge)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_a_million_variant_grid_is_refused_naming_the_sweep_and_its_size(tmp_path):
    grid = {"votes": list(range(1, 1001)), "temperature": [round(0.001 * i, 3) for i in range(1000)]}
    path = params_with(tmp_path, {"huge": {"base": "gpt-4o-mini-reference", "mode": "grid", "vary": grid}})
    with pytest.raises(ConfigError) as exc:
        load_params(path)
    text = str(exc.value)
    assert "judge.sweeps.huge: 1,000,000 variants (grid: 1000 × 1000 values) exceed judge.max_variants 500" in text


def test_the_size_counts_one_at_a_time_values_and_every_base(tmp_path):
    bases = ["always-first", "always-second", "random"]
    sweep = {"bases": bases, "vary": {"votes": list(range(1, 101)), "orders": ["forward", "reverse"]}}
    with pytest.raises(ConfigError) as exc:
        load_params(params_with(tmp_path, {"wide": sweep}, max_variants=300))
    assert "judge.sweeps.wide: 306 variants (one-at-a-time: 100 + 2 values, × 3 bases) exceed judge.max_variants 300" in str(exc.value)
    assert len(load_params(params_with(tmp_path, {"wide": sweep}, max_variants=306)).judge.sweep_variants()) == 306


def test_sweeps_under_the_limit_one_by_one_are_refused_together_when_their_sum_exceeds_it(tmp_path):
    sweeps = {f"s{i}": {"base": "always-first", "vary": {"votes": list(range(1, 5))}} for i in range(3)}
    with pytest.raises(ConfigError) as exc:
        load_params(params_with(tmp_path, sweeps, max_variants=10))
    assert "judge.sweeps: 12 variants in all (3 sweeps) exceed judge.max_variants 10" in str(exc.value)


def test_the_default_limit_leaves_the_judge_sections_digest_as_it_was(tmp_path):
    plain = load_params(params_with(tmp_path, {"s": {"base": "always-first", "vary": {"votes": [1]}}})).judge
    assert "max_variants" not in plain.model_dump()
    raised = load_params(params_with(tmp_path, {"s": {"base": "always-first", "vary": {"votes": [1]}}}, max_variants=900)).judge
    assert raised.model_dump()["max_variants"] == 900


@pytest.mark.parametrize("value", [0, -3, 1.5, True])
def test_a_limit_that_is_not_a_positive_whole_number_is_refused_naming_it(tmp_path, value):
    with pytest.raises(ConfigError) as exc:
        load_params(params_with(tmp_path, {"s": {"base": "always-first", "vary": {"votes": [1]}}}, max_variants=value))
    assert "judge.max_variants" in str(exc.value)


def test_the_dry_run_of_a_large_plan_reports_progress_on_stderr_and_keeps_its_json_clean(tiny: Path, run_main):
    raw = yaml.safe_load((tiny / "params.yaml").read_text())
    raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "limit": 2, "progress": True,
                    "judges": {"first": {"backend": "always-first"}},
                    "sweeps": {"many": {"base": "first", "vary": {"votes": list(range(1, 21))}}}}  # fmt: skip
    (tiny / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    run_stage("pin")
    code, out, err = run_main("stage", "judge", "--dry-run", "--json")
    assert code == 0, err
    assert len(json.loads(out)) == 21  # stdout is the JSON alone
    lines = [ln for ln in err.splitlines() if ln.startswith("dry run: keying the calls of 21 judges")]
    assert lines[-1].endswith("21/21 done") and len(lines) >= 10
