"""Library parts the flows call: canary draws, drift params and paths, run summaries from run-log facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from novelty_audit.errors import ConfigError
from novelty_audit.orchestration import (
    NO_API_JUDGE,
    StageOutcome,
    canary_datasets,
    drift_judges,
    drift_params,
    drift_paths,
    select_canary,
    summarize_run,
)
from novelty_audit.params import load_params


def test_the_canary_draw_depends_on_seed_size_and_dataset_not_on_row_order():
    ids = [f"p-{i:04d}" for i in range(50)]
    a = select_canary(ids, 10, seed=3, dataset="human-only")
    assert a == select_canary(list(reversed(ids)), 10, seed=3, dataset="human-only")
    assert len(a) == 10 and set(a) <= set(ids) and a == sorted(a)
    assert a != select_canary(ids, 10, seed=4, dataset="human-only")
    assert a != select_canary(ids, 10, seed=3, dataset="human-plus-generated")
    assert select_canary(ids[:5], 10, seed=3, dataset="x") == ids[:5]  # fewer pairs than the size: all of them


def test_duplicate_pair_ids_are_refused():
    with pytest.raises(ConfigError, match="not unique"):
        select_canary(["p-1", "p-1"], 1, seed=0, dataset="d")


def _params(tmp_path: Path, judges: dict, canary: dict | None = None, pools: dict | None = None, judge: dict | None = None):
    import yaml

    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text())
    raw["judge"]["judges"] = judges
    raw["pools"].update(pools or {})
    raw["judge"].update(judge or {})
    raw["flows"] = {**(raw.get("flows") or {}), "canary": canary or {}}
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_params(p)


API = {"backend": "openai", "args": {"model": "m", "api_key_env": None}}


def test_the_drift_watch_picks_enabled_api_judges_or_the_listed_ones(tmp_path):
    p = _params(tmp_path, {"first": {"backend": "always-first"}, "on": API, "off": {**API, "enabled": False}})
    assert drift_judges(p) == ["on"]
    listed = _params(tmp_path, {"off": {**API, "enabled": False}}, {"judges": ["off"]})
    assert drift_judges(listed) == ["off"]
    with pytest.raises(ConfigError, match="unknown judge"):
        drift_judges(_params(tmp_path, {"off": API}, {"judges": ["of"]}))
    assert drift_judges(_params(tmp_path, {"first": {"backend": "always-first"}, "off": {**API, "enabled": False}})) == []
    assert "no enabled API judge" in NO_API_JUDGE


def test_drift_params_refresh_only_the_chosen_judges_inside_the_drift_store(tmp_path):
    p = _params(tmp_path, {"first": {"backend": "always-first"}, "off": {**API, "enabled": False}})
    d = drift_params(p, ["off"], ["human-only"])
    assert list(d.judge.judges) == ["off"] and d.judge.judges["off"].enabled and d.judge.refresh
    assert d.judge.tasks == ["pairwise"] and d.judge.datasets == ["human-only"]
    assert Path(d.store.root) == drift_paths(p).root == Path(p.store.root) / "drift"
    assert Path(d.store.artifacts) == drift_paths(p).artifacts
    assert d.judge.judges["off"].args == p.judge.judges["off"].args and d.judge.prices == p.judge.prices


def test_a_run_summary_counts_actions_calls_cache_hits_and_cost_from_run_facts():
    judge_facts = [{"stage": "judge", "action": "computed", "identity": "ab" * 32,
                    "gpt": {"calls": 3, "cache_hits": 5, "cost_usd": 0.25}, "claude": {"calls": 1, "cache_hits": 0, "cost_usd": 0.5}}]  # fmt: skip
    s = summarize_run([
        StageOutcome.from_facts("pin", [{"stage": "pin", "action": "reused", "identity": "cd" * 32}], 0.1),
        StageOutcome.from_facts("judge", judge_facts, 2.0),
        StageOutcome(stage="metrics", action="failed", error="boom"),
    ])  # fmt: skip
    assert s.totals() == {
        "stages": 3, "computed": 1, "restored": 0, "reused": 1, "failed": 1,
        "calls": 4, "cache_hits": 5, "cost_usd": 0.75, "seconds": 2.1,
    }  # fmt: skip
    assert s.stages[0].skipped and not s.stages[1].skipped
    md = s.markdown("t")
    assert "1 reused (identity unchanged)" in md and "**metrics failed**: boom" in md
    assert [r["stage"] for r in s.rows()] == ["pin", "judge", "metrics"]


def test_a_canary_of_a_pools_dataset_the_pools_stage_has_not_built_names_where_it_looked(tmp_path):
    from novelty_audit.artifacts import Store
    from novelty_audit.config import CanaryParams
    from novelty_audit.orchestration import build_canary

    (tmp_path / "pin").mkdir()
    with pytest.raises(ConfigError) as err:
        build_canary(tmp_path / "pin", tmp_path / "out", CanaryParams(), store=Store(tmp_path / "store"),
                     datasets=["my-ideas"], pools_dir=tmp_path / "pools", pools_datasets=["my-ideas", "my-ideas-vs-low"])  # fmt: skip
    assert f"my-ideas (looked in {tmp_path / 'pools' / 'datasets' / 'my-ideas'})" in str(err.value)
    assert "the pools stage" in err.value.hint
    assert not (tmp_path / "out").exists()


def test_the_canary_covers_every_dataset_a_watched_judge_is_asked_about_and_each_judge_keeps_its_own(tmp_path):
    own = {**API, "datasets": ["human-only-seed-1"]}  # a pools dataset (a re-pairing), this judge's only one
    p = _params(tmp_path, {"gpt": API, "gpt-seed": own}, {"judges": ["gpt", "gpt-seed"]}, pools={"repair": {"dataset": "human-only", "seeds": [1]}})
    datasets = canary_datasets(p, ["gpt", "gpt-seed"])
    assert datasets == [*p.judge.datasets, "human-only-seed-1"]
    d = drift_params(p, ["gpt", "gpt-seed"], datasets)
    assert d.judge.datasets_of("gpt") == p.judge.datasets  # not widened to the other judge's dataset
    assert d.judge.datasets_of("gpt-seed") == ["human-only-seed-1"]
    assert canary_datasets(p, ["gpt"]) == p.judge.datasets

    # An explicit canary asks every judge without datasets of its own about all of it; one asked about none is refused.
    listed = _params(tmp_path, {"gpt": API, "gpt-seed": own}, {"judges": ["gpt", "gpt-seed"], "datasets": ["human-only"]},
                     pools={"repair": {"dataset": "human-only", "seeds": [1]}})  # fmt: skip
    assert drift_params(listed, ["gpt"], ["human-only"]).judge.datasets_of("gpt") == ["human-only"]
    with pytest.raises(ConfigError, match="judge gpt-seed is asked about none of them"):
        drift_params(listed, ["gpt", "gpt-seed"], canary_datasets(listed, ["gpt", "gpt-seed"]))


def test_a_sweep_variant_watched_without_its_base_builds(tmp_path):
    from novelty_audit.judges import Budget, build_judges

    raw_judges = {"gpt": {**API, "enabled": False}}
    p = _params(tmp_path, raw_judges, {"judges": ["v/votes=3"]}, judge={"sweeps": {"v": {"base": "gpt", "vary": {"votes": [1, 3]}}}})
    d = drift_params(p, drift_judges(p), canary_datasets(p, ["v/votes=3"]))
    built = build_judges(d.judge, store_root=tmp_path / "store", budget=Budget(None))
    assert [j.name for j in built.judges] == ["v/votes=3"] and d.judge.judges["v/votes=3"].args["votes"] == 3
