"""The judge stage, run as a user runs it, against a faulty or dead OpenAI-compatible server."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml
from mock_llm import MockLLM, free_port

pytestmark = pytest.mark.slow  # every test here runs stages: seconds each

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
    assert "judge mock: " in done.stderr and "calls done, 0 failed" in done.stderr  # progress lines without a terminal


def test_with_the_endpoint_down_the_stage_ends_within_two_minutes_with_every_call_an_error_with_its_reason(pinned):
    set_api_judge(pinned, f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there; default retries and backoff
    started = time.perf_counter()
    done = cli("stage", "judge", cwd=pinned)
    elapsed = time.perf_counter() - started
    assert elapsed < 120, elapsed  # the bound (2 minutes); the run takes seconds when idle
    assert done.returncode == 3, done.stdout + done.stderr  # judge.on_error: fail (the default)
    assert "Traceback" not in done.stderr
    v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")
    assert v.height == 308 and v["n_error"].to_list() == [2] * 308
    reasons = {r for rs in v["error_reasons"].to_list() for r in rs}
    assert reasons <= {"circuit open", "connection refused"} and "circuit open" in reasons
    assert "calls failed: circuit open" in done.stderr


PROGRESS = re.compile(r"judge mock: (\d+)/(\d+) calls done, (\d+) failed, (\d+) retrying")


def test_against_an_endpoint_that_accepts_and_never_answers_the_stage_ends_within_two_minutes_with_progress_while_it_runs(pinned):
    with MockLLM() as mock:
        mock.hold()  # connections are accepted and requests read; no answer ever comes
        set_api_judge(pinned, mock.base_url, timeout_s=3.0)  # default retries, backoff and circuit_breaker (5)
        # Progress lines every 0.5 s instead of 30 s: this run is over in seconds, and the lines must show while it runs.
        code = "import novelty_audit.llm._engine as m; m.PROGRESS_EVERY_S = 0.5; from novelty_audit.cli import main; main(['stage', 'judge'])"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], cwd=pinned, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "MOCK_API_KEY": KEY})  # fmt: skip
        elapsed = time.perf_counter() - started
        sent = mock.count
    assert elapsed < 120, elapsed
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "never retrieved" not in done.stderr
    v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")
    assert v.height == 308 and v["n_error"].to_list() == [2] * 308
    reasons = {r for rs in v["error_reasons"].to_list() for r in rs}
    assert reasons <= {"timeout", "circuit open"} and "circuit open" in reasons
    assert sent < 100, f"{sent} requests: after {5} timeouts in a row nothing more is sent"  # 616 calls, 16 at a time
    lines = done.stderr.splitlines()
    progress = [(i, tuple(map(int, m.groups()))) for i, ln in enumerate(lines) if (m := PROGRESS.search(ln))]
    summary = next(i for i, ln in enumerate(lines) if "calls failed: circuit open" in ln)
    assert any(d == 0 for _, (d, _, _, _) in progress), "a progress line while every call was still waiting"
    assert progress[0][0] < summary and progress[-1][1][0] == progress[-1][1][1]
    assert any("circuit open after 5 consecutive calls without an answer (last: timeout)" in ln for ln in lines)


@pytest.mark.parametrize(("signame", "exit_code", "said"), [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "aborted")])
def test_a_signal_during_calls_sends_nothing_more_keeps_every_answer_and_the_next_run_pays_only_the_rest(pinned, signame, exit_code, said):
    with MockLLM() as mock:
        mock.hold(after=40)  # 40 calls answered at once; the next 8 (all the slots) wait until released
        set_api_judge(pinned, mock.base_url, concurrency=8, price={"input_per_mtok": 1.0, "output_per_mtok": 1.0})
        raw = yaml.safe_load((pinned / "params.yaml").read_text())
        raw["judge"].update(datasets=["human-only"], budget_usd=100.0)
        (pinned / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        proc = subprocess.Popen([sys.executable, "-m", "novelty_audit.cli", "stage", "judge"], cwd=pinned, text=True,
                                env={**os.environ, "MOCK_API_KEY": KEY}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
        reader.start()
        try:
            # Every slot holds a request the server keeps: the client can send nothing until an answer comes.
            assert _wait(lambda: mock.held == 8), f"{mock.held} requests held; stderr: {''.join(lines)}"
            signalled = time.monotonic()
            proc.send_signal(getattr(signal, signame))
            assert _wait(lambda: any("sending nothing more" in ln for ln in lines)), "".join(lines)
            mock.release()  # the 8 requests in flight are answered after the signal
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        reader.join(10)
        stderr = "".join(lines)
        first = list(mock.requests)
    assert proc.returncode == exit_code, stderr
    assert "Traceback" not in stderr and "never retrieved" not in stderr, stderr
    assert [r for r in first if r.at > signalled] == [], "a request went out after the signal"
    assert len(first) == 48 and all(r.answered_at is not None for r in first)
    cached = sorted((pinned / ".novelty-audit/cache/calls").glob("??/*.json"))
    assert len(cached) == 48, "every answered call is in the call cache"
    assert f"judge mock: stopped by {signame}: 48 answered call(s) kept in the call cache; the next run asks the other 260" in stderr
    assert stderr.rstrip().endswith(said)
    (state,) = (pinned / ".novelty-audit/budget").glob("*.json")
    budget = orjson.loads(state.read_bytes())
    assert budget["reserved"] == 0.0 and budget["spent"] > 0, budget  # no reservation left behind
    assert not list((pinned / "artifacts").glob(".judge.*")) and not (pinned / "artifacts/judge").exists()

    with MockLLM(port=mock.port) as again:
        resumed = subprocess.run([sys.executable, "-m", "novelty_audit.cli", "stage", "judge"], cwd=pinned, capture_output=True, text=True,
                                 env={**os.environ, "MOCK_API_KEY": KEY}, timeout=600)  # fmt: skip
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        bodies = [orjson.dumps(r.body, option=orjson.OPT_SORT_KEYS) for r in again.requests]
    assert len(bodies) == 260 and len(set(bodies)) == 260, "only the unanswered calls are asked"
    assert not set(bodies) & {orjson.dumps(r.body, option=orjson.OPT_SORT_KEYS) for r in first}, "no answered call paid twice"


def _wait(condition, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()
