"""The judge stage, run as a user runs it, against a faulty or dead OpenAI-compatible server."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM, free_port

KEY = "sk-test-SECRET123"


def cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCK_API_KEY": KEY}
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)


def set_api_judge(project: Path, base_url: str, **args) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    judge_args = {"model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "concurrency": 16, **args}
    raw["judge"] = {
        "datasets": ["human-only", "human-plus-generated"], "tasks": ["pairwise"], "progress": True,
        "judges": {"mock": {"backend": "openai", "args": judge_args}},
    }  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


@pytest.fixture
def pinned(project: Path) -> Path:
    done = cli("stage", "pin", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    return project


def test_a_third_of_the_prompts_meeting_malformed_answers_and_errors_still_judges_every_pair_exactly_once(pinned):
    ideas = pl.concat([pl.read_parquet(p) for p in sorted((pinned / "artifacts/pin").glob("*/ideas.parquet"))])
    rng = random.Random(10)
    faults = ["truncated", "html", "empty_choices", "no_message", "wrong_types", "bad_body", "500", "429", "drop"]
    with MockLLM() as mock:
        for text in ideas["text"].unique().sort().to_list():
            if rng.random() < 0.3:
                # each distinct request meets its fault once or twice, then is answered
                mock.add_rule(text[:80], rng.choice(faults), times=rng.choice([1, 2]), retry_after=0.01)
        set_api_judge(pinned, mock.base_url, backoff_s=0.01)  # a prompt may hold two faulty ideas: up to 4 faults
        done = cli("stage", "judge", cwd=pinned)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        sent = mock.count
    v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")
    assert v.height == 308 and v.select(["dataset", "judge", "pair_id"]).is_duplicated().sum() == 0
    assert v["n_error"].sum() == 0 and v["n_valid"].to_list() == [2] * 308
    asked = len(list((pinned / ".novelty-audit/cache/calls").glob("??/*.json")))
    assert asked <= 616 < sent  # every call answered once; the faults were retried
    assert "judge mock: " in done.stderr and "calls, 0 errors" in done.stderr  # progress lines without a terminal


def test_with_the_endpoint_down_the_stage_ends_within_a_minute_with_every_call_an_error_with_its_reason(pinned):
    set_api_judge(pinned, f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there; default retries and backoff
    started = time.perf_counter()
    done = cli("stage", "judge", cwd=pinned)
    elapsed = time.perf_counter() - started
    assert elapsed < 60, elapsed
    assert done.returncode == 3, done.stdout + done.stderr  # judge.on_error: fail (the default)
    assert "Traceback" not in done.stderr
    v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")
    assert v.height == 308 and v["n_error"].to_list() == [2] * 308
    reasons = {r for rs in v["error_reasons"].to_list() for r in rs}
    assert reasons <= {"circuit open", "connection refused"} and "circuit open" in reasons
    assert "calls failed: circuit open" in done.stderr
