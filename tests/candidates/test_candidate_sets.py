"""A candidate set end to end on the small project: `candidates add`, named in judge.datasets, is judged by every
offline judge on (candidate, same-area D+ human idea) pairs; its win rates equal a direct count from the verdicts;
editing one candidate's text moves exactly the evidence of the pairs holding it, and the audit says so."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from novelty_audit.artifacts import read_json
from novelty_audit.audit import audit_project
from novelty_audit.pipeline import load_checked_params, record_run, run_stage

pytestmark = pytest.mark.slow  # runs the pin → metrics stages of the small project

SET = "gen"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _candidates() -> list[dict]:
    """Generated ideas of the pinned split whose area has a D+ human idea in human-only (the small project's cut)."""
    humans = pl.read_parquet("artifacts/pin/human-only/ideas.parquet")
    plus = set(humans.filter(pl.col("label") == "POSITIVE")["area"].to_list())
    gen = pl.read_parquet("artifacts/pin/human-plus-generated/ideas.parquet").filter(pl.col("source") == "generated")
    rows = [{"area": r["area"], "title": r["title"], "text": r["text"], "system": "benchmark-generator"}
            for r in gen.sort("idea_id").iter_rows(named=True) if r["area"] in plus]  # fmt: skip
    assert len(rows) >= 3, "the small project's splits share areas"
    return rows[:8]


def _judge_sets() -> None:
    raw = yaml.safe_load(Path("params.yaml").read_text())
    raw["judge"]["datasets"] = [SET, f"{SET}-vs-low"]
    raw["judge"]["probe_datasets"] = []
    raw["judge"]["tasks"] = ["pairwise"]
    Path("params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))


def _run() -> None:
    for name in ("signals", "pools", "judge", "metrics"):
        run_stage(name)
    record_run(load_checked_params("params.yaml"))


def test_a_candidate_set_is_judged_against_same_area_d_plus_ideas_and_its_win_rate_is_a_count(tiny: Path, run_main) -> None:
    run_stage("pin")
    rows = _candidates()
    src = _write(tiny / "ideas.jsonl", rows)
    code, _, err = run_main("candidates", "add", str(src), "--name", SET)
    assert code == 0, err
    _judge_sets()
    _run()

    ideas = pl.read_parquet(f"artifacts/pools/datasets/{SET}/ideas.parquet")
    area, label = dict(zip(ideas["idea_id"], ideas["area"])), dict(zip(ideas["idea_id"], ideas["label"]))
    verdicts = pl.read_parquet("artifacts/judge/verdicts.parquet")
    judges = pl.read_parquet("artifacts/judge/judges.parquet")["judge"].to_list()
    mine = verdicts.filter(pl.col("dataset") == SET)
    assert sorted(mine["judge"].unique().to_list()) == sorted(judges) and mine.height == len(rows) * len(judges)
    for r in mine.iter_rows(named=True):
        other = r["idea_1"] if r["gold_idea_id"] == r["idea_0"] else r["idea_0"]
        assert label[r["gold_idea_id"]] is None and label[other] == "POSITIVE"  # the candidate meets a D+ human idea
        assert area[r["gold_idea_id"]] == area[other]

    figures = read_json("artifacts/metrics/candidates.json")[SET]["judges"]
    metrics = read_json("artifacts/metrics/metrics.json")
    for judge in judges:
        g = mine.filter(pl.col("judge") == judge)
        wins, ties = (g["verdict"] == g["gold_idea_id"]).sum(), (g["verdict"] == "tie").sum()
        f = figures[judge]
        assert (f["n_pairs"], f["wins"], f["ties"]) == (g.height, wins, ties)
        assert f["candidate_win_rate"] == pytest.approx(wins / g.height) and f["tie_rate"] == pytest.approx(ties / g.height)
        assert f["candidate_win_rate_wilson_low"] <= f["candidate_win_rate"] <= f["candidate_win_rate_wilson_high"]
        low = verdicts.filter((pl.col("dataset") == f"{SET}-vs-low") & (pl.col("judge") == judge))
        assert f["candidate_win_rate_low"] == pytest.approx((low["verdict"] == low["gold_idea_id"]).sum() / low.height)
        assert metrics[SET][judge]["candidate_win_rate"] == f["candidate_win_rate"]
        assert "accuracy" not in metrics[SET][judge]  # no correct answer: no accuracy on a candidate set

    # Edit one candidate's text (it becomes its opponent's text: a distance judge then sees two equal ideas).
    target = rows[0]
    tid = ideas.filter(pl.col("title") == target["title"])["idea_id"].item()
    holds = (pl.col("idea_0") == tid) | (pl.col("idea_1") == tid)
    holding = set(verdicts.filter(holds)["pair_id"].to_list())  # in the set and in its floor (SET-vs-low)
    pair = mine.filter(holds).row(0, named=True)
    opponent = pair["idea_1"] if pair["idea_0"] == tid else pair["idea_0"]
    rows[0] = {**target, "text": ideas.filter(pl.col("idea_id") == opponent)["text"].item()}
    assert run_main("candidates", "add", str(_write(src, rows)), "--name", SET)[0] == 0
    before = pl.read_parquet("artifacts/judge/verdicts.parquet")
    _run()
    after = pl.read_parquet("artifacts/judge/verdicts.parquet")
    joined = before.join(after, on=["dataset", "judge", "pair_id"], suffix="_after")
    assert joined.height == before.height == after.height  # no pair came or went: ids come from titles
    moved = joined.filter(pl.col("evidence_digest") != pl.col("evidence_digest_after"))
    assert set(moved["pair_id"].to_list()) == holding
    still = joined.filter(~pl.col("pair_id").is_in(list(holding)))
    assert (still["verdict"] == still["verdict_after"]).all()

    result, markdown = audit_project("params.yaml")
    changes = result.to_json()["changes"]
    assert changes, "equal texts must move a distance judge's verdict on the edited pair"
    assert {c["cause"] for c in changes} == {"evidence"} and {c["pair"] for c in changes} <= holding
    assert target["title"] in markdown


def _by_prompt_hash(body: dict, nth: int) -> str:
    """A or B from the digest of the exact prompt: another wording answers differently on some pairs."""
    import hashlib

    text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    return f'{{"answer": "{"AB"[hashlib.sha256(f"{text}{nth}".encode()).digest()[0] % 2]}"}}'


def test_a_sweep_over_a_candidate_set_reports_its_spread_and_the_disagreement_between_variants(
    tiny: Path, run_main, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mock_llm import MockLLM

    monkeypatch.setenv("MOCK_API_KEY", "sk-test-candidates")
    run_stage("pin")
    src = _write(tiny / "ideas.jsonl", _candidates())
    assert run_main("candidates", "add", str(src), "--name", SET)[0] == 0
    with MockLLM(answer=_by_prompt_hash) as mock:
        raw = yaml.safe_load(Path("params.yaml").read_text())
        raw["judge"] = {
            "datasets": [SET], "tasks": ["pairwise"], "progress": False,
            "judges": {"base": {"backend": "openai", "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY",
                                                              "prompt": "reference-v1", "votes": 1, "concurrency": 8}}},
            "sweeps": {"wording": {"base": "base", "vary": {"prompt": ["p3-v1", "p5-v1"]}}},
        }  # fmt: skip
        Path("params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
        for name in ("signals", "pools", "judge", "metrics"):
            run_stage(name)
    got = read_json("artifacts/metrics/candidates.json")[SET]
    sweep = got["sweeps"]["wording"]
    assert sweep["configurations"] == ["base", "wording/prompt=p3-v1", "wording/prompt=p5-v1"]
    rates = [got["judges"][j]["candidate_win_rate"] for j in sweep["configurations"]]
    assert (sweep["candidate_win_rate_min"], sweep["candidate_win_rate_max"]) == (min(rates), max(rates))
    v = pl.read_parquet("artifacts/judge/verdicts.parquet").filter(pl.col("dataset") == SET)
    a, b = (dict(v.filter(pl.col("judge") == j).select("pair_id", "verdict").rows()) for j in sweep["configurations"][:2])
    assert sweep["compared_pairs_of_configurations"] == 3 and sweep["disagreement_max"] >= sum(a[p] != b[p] for p in a) / len(a)
