"""The judge stage end to end on the pinned benchmark: coverage, controls, replay, secrets, kill and resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.judges import TIE
from novelty_audit.params import load_params

KEY = "sk-test-SECRET123"
CONTROLS = {name: {"backend": name} for name in ("always-first", "always-second", "random", "abstain")}


def set_judges(project: Path, judges: dict, **section) -> None:
    """Replace the judge section of the project's params.yaml (the repository's may list judges whose data is not copied)."""
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {"datasets": ["human-only", "human-plus-generated"], "progress": False, "judges": judges, **section}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def run(name: str, force: bool = False):
    from novelty_audit.pipeline import run_stage

    return run_stage(name, force=force)


def mock_judge(mock: MockLLM, **args) -> dict:
    return {
        "backend": "openai",
        "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "concurrency": 16, **args},
    }


@pytest.fixture
def pinned(project: Path) -> Path:
    run("pin")
    return project


def test_controls_judge_every_pair_of_both_splits_and_always_first_ties_all(pinned):
    set_judges(pinned, CONTROLS)
    m = run("judge")
    v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")
    per = v.group_by("dataset", "judge").len()
    assert per.height == 8 and set(per["len"]) == {154}
    assert v.filter(pl.col("judge") == "always-first")["verdict"].to_list() == [TIE] * 308
    assert v.filter(pl.col("judge") == "abstain")["verdict"].unique().to_list() == ["none"]
    assert v.select(["dataset", "judge", "pair_id"]).is_duplicated().sum() == 0
    p = pl.read_parquet(pinned / "artifacts/judge/pointwise.parquet")
    assert p.group_by("dataset").len().sort("dataset")["len"].to_list() == [299 * 4, 308 * 4]
    judges = pl.read_parquet(pinned / "artifacts/judge/judges.parquet")
    assert judges["judge"].to_list() == sorted(CONTROLS)
    assert m.summary["always-first"]["human-only"]["ties"] == 154


def test_the_api_judge_replays_from_its_cache_byte_for_byte_and_never_writes_the_key(pinned, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)
    with MockLLM() as mock:
        set_judges(pinned, {"always-first": {"backend": "always-first"}, "mock": mock_judge(mock)}, tasks=["pairwise"])
        run("judge")
        first_calls = mock.count
        before = (pinned / "artifacts/judge/verdicts.parquet").read_bytes()
        run("judge", force=True)
        assert mock.count == first_calls  # zero calls on rerun
        assert (pinned / "artifacts/judge/verdicts.parquet").read_bytes() == before
    v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet").filter(pl.col("judge") == "mock")
    assert v.height == 308 and v["n_valid"].to_list() == [2] * 308
    calls = list((pinned / ".novelty-audit/cache/calls").rglob("*.json"))
    assert first_calls == len(calls) <= 616  # pairs shared by both splits are asked once
    for p in pinned.rglob("*"):
        if p.is_file() and p.suffix in {".json", ".jsonl", ".parquet", ".yaml", ".log", ".txt", ""}:
            assert KEY.encode() not in p.read_bytes(), p


def test_a_killed_run_repeats_no_completed_call(pinned, monkeypatch):
    env = {**os.environ, "MOCK_API_KEY": KEY}
    with MockLLM(latency=0.05) as mock:
        set_judges(pinned, {"mock": mock_judge(mock, concurrency=4)}, tasks=["pairwise"])
        proc = subprocess.Popen([sys.executable, "-m", "novelty_audit.cli", "stage", "judge"], cwd=pinned, env=env)
        cache = pinned / ".novelty-audit/cache/calls"
        deadline = time.time() + 60
        while time.time() < deadline and len(list(cache.rglob("*.json"))) < 40:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done = len(list(cache.rglob("*.json")))
        assert 40 <= done < 600, "the run should have been killed midway"
        mock.reset()
        monkeypatch.setenv("MOCK_API_KEY", KEY)
        # concurrency is not part of a call's key: the resumed run may go faster and still reuse every answer
        set_judges(pinned, {"mock": mock_judge(mock, concurrency=32)}, tasks=["pairwise"])
        run("judge")
        total = len(list(cache.rglob("*.json")))
        assert mock.count == total - done
    assert pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet").height == 308


def test_an_unknown_dataset_is_a_clear_error(pinned):
    from novelty_audit.errors import BadInputError

    set_judges(pinned, CONTROLS)
    raw = yaml.safe_load((pinned / "params.yaml").read_text())
    raw["judge"]["datasets"] = ["human-only", "human-plus-generatd"]
    (pinned / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(BadInputError, match="human-plus-generatd"):
        run("judge")


def test_the_shipped_params_run_offline_judges_only():
    spec = load_params(Path(__file__).resolve().parents[2] / "params.yaml").judge
    enabled = {n: s.backend for n, s in spec.judges.items() if s.enabled}
    assert {"always-first", "always-second", "random", "abstain"} <= set(enabled)
    assert not {"openai", "anthropic"} & set(enabled.values())
