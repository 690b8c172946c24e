"""judge.limit: a deterministic, seeded subset of N pairs per dataset for smoke runs."""

from __future__ import annotations

import orjson
import polars as pl
import pytest
import yaml
from judge_items import make_pairs, make_points

from novelty_audit.judges import PointItem
from novelty_audit.judges._run import limit_items

def benchmark_only(raw: dict) -> dict:
    """Pin only the benchmark splits the `project` fixture copies (other sources need their own data)."""
    raw["pin"]["datasets"] = {k: v for k, v in raw["pin"]["datasets"].items() if str(v.get("path", "")).startswith("data/novelty-judge-bench/")}
    return raw


def items():
    pairs = make_pairs(40, dataset="a") + make_pairs(30, dataset="b")
    points = [PointItem(p.dataset, i, "POSITIVE") for p in pairs for i in p.ideas]
    return pairs, points


def chosen(pairs):
    return sorted((p.dataset, p.pair_id) for p in pairs)


def test_limit_takes_n_pairs_per_dataset_and_the_pointwise_items_of_their_ideas():
    pairs, points = items()
    sub, pts = limit_items(pairs, points, 10, seed=7)
    assert [sum(p.dataset == ds for p in sub) for ds in ("a", "b")] == [10, 10]
    assert {(pt.dataset, pt.idea.idea_id) for pt in pts} == {(p.dataset, i.idea_id) for p in sub for i in p.ideas}
    assert [p.pair_id for p in sub] == [p.pair_id for p in pairs if p in sub]  # input order kept


def test_the_same_seed_gives_the_same_subset_and_another_seed_another():
    pairs, points = items()
    first = chosen(limit_items(pairs, points, 10, seed=7)[0])
    assert chosen(limit_items(list(reversed(pairs)), points, 10, seed=7)[0]) == first  # row order does not matter
    assert chosen(limit_items(pairs, points, 10, seed=8)[0]) != first


def test_a_limit_above_the_dataset_size_or_none_keeps_every_pair():
    pairs, points = items()
    assert chosen(limit_items(pairs, points, 1000, seed=7)[0]) == chosen(pairs)
    assert limit_items(pairs, points, None, seed=7) == (pairs, points)


def test_a_dataset_with_pointwise_items_but_no_pairs_gets_n_seeded_ideas():
    pairs, points = items()
    solo = make_points(20, dataset="solo")
    _, pts = limit_items(pairs, [*points, *solo], 4, seed=7)
    picked = [pt.idea.idea_id for pt in pts if pt.dataset == "solo"]
    assert len(picked) == 4 and picked == [pt.idea.idea_id for pt in limit_items(pairs, [*points, *solo], 4, seed=7)[1] if pt.dataset == "solo"]
    assert picked != [pt.idea.idea_id for pt in limit_items(pairs, [*points, *solo], 4, seed=9)[1] if pt.dataset == "solo"]


def test_adding_a_pair_displaces_at_most_one_member_of_the_subset():
    pairs, points = items()
    before = set(chosen(limit_items(pairs, points, 10, seed=3)[0]))
    extra = make_pairs(41, dataset="a")[-1]
    after = set(chosen(limit_items([*pairs, extra], points, 10, seed=3)[0]))
    assert len(before - after) <= 1


# -- the stage --------------------------------------------------------------------------------------


def set_judge(project, **judge):
    raw = benchmark_only(yaml.safe_load((project / "params.yaml").read_text()))
    raw["judge"] = {"datasets": ["human-only", "human-plus-generated"], "tasks": ["pairwise", "pointwise"], "progress": False,
                    "judges": {"random": {"backend": "random"}, "always-first": {"backend": "always-first"}}, **judge}  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


@pytest.fixture
def pinned(project, run_main):
    set_judge(project)
    code, out, err = run_main("stage", "pin")
    assert code == 0, out + err
    return project


def outputs(project):
    v = pl.read_parquet(project / "artifacts/judge/verdicts.parquet")
    p = pl.read_parquet(project / "artifacts/judge/pointwise.parquet")
    m = orjson.loads((project / "artifacts/judge/manifest.json").read_bytes())
    return v, p, m


@pytest.mark.slow
def test_judge_limit_10_judges_10_pairs_per_dataset_and_says_so_in_the_manifest(pinned, run_main):
    set_judge(pinned, limit=10, seed=5)
    code, out, err = run_main("stage", "judge")
    assert code == 0, out + err
    v, p, m = outputs(pinned)
    assert v.group_by(["dataset", "judge"]).len()["len"].to_list() == [10] * 4
    for ds in ("human-only", "human-plus-generated"):
        ideas = set(v.filter(pl.col("dataset") == ds)[["idea_0", "idea_1"]].to_numpy().ravel())
        assert set(p.filter(pl.col("dataset") == ds)["idea_id"]) == ideas  # pointwise: the ideas of those pairs
    assert m["params"]["judge"]["limit"] == 10
    sub = m["summary"]["subset"]
    assert sub["limit"] == 10 and sub["seed"] == 5 and sub["datasets"]["human-only"]["pairs"] == 10
    assert sub["datasets"]["human-only"]["of_pairs"] == 154
    assert "subset: judge.limit 10 (seed 5): human-only 10/154 pairs" in out
    first = sorted(v["pair_id"].unique())

    code, out, err = run_main("stage", "judge", "--force")
    assert code == 0, out + err
    assert sorted(outputs(pinned)[0]["pair_id"].unique()) == first  # deterministic

    set_judge(pinned, limit=10, seed=6)
    code, out, err = run_main("stage", "judge")
    assert code == 0, out + err
    assert sorted(outputs(pinned)[0]["pair_id"].unique()) != first


@pytest.mark.slow
def test_the_cli_limit_is_a_run_with_its_own_identity_and_a_full_run_restores_the_full_outputs(pinned, run_main):
    set_judge(pinned)
    assert run_main("stage", "judge")[0] == 0
    full_v, _, full_m = outputs(pinned)
    code, out, err = run_main("stage", "judge", "--limit", "3")
    assert code == 0, out + err
    v, _, m = outputs(pinned)
    assert v.height == 3 * 2 * 2 and m["params"]["judge"]["limit"] == 3 and m["identity"] != full_m["identity"]
    assert run_main("stage", "judge")[0] == 0  # params.yaml has no limit: the full identity again
    v, _, m = outputs(pinned)
    assert m["identity"] == full_m["identity"] and v.equals(full_v)
    code, out, err = run_main("stage", "metrics", "--limit", "3")
    assert code == 2 and "--limit applies to the judge stage only" in out + err


@pytest.mark.slow
def test_a_limit_below_one_is_refused(pinned, run_main):
    set_judge(pinned, limit=0)
    code, out, err = run_main("stage", "judge")
    assert code == 2 and "judge.limit" in out + err
