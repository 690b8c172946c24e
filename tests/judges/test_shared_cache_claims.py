"""Claims in the team-shared call cache: checkouts sharing `store.shared_cache`, started together, pay each
call once; a claim whose holder died or outlived its bound is taken over, never waited on forever."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest
from mock_llm import MockLLM
from racers import outputs, started

from novelty_audit.config import CallSettings
from novelty_audit.llm import SharedCallCache
from novelty_audit.llm._engine import claim_hold_s

KEY = "sk-test-SHARED-CLAIMS"
TESTS = str(Path(__file__).parent)

CHECKOUT = textwrap.dedent(
    """
    import sys
    import orjson
    sys.path.insert(0, sys.argv[4])
    from judge_items import make_pairs
    from novelty_audit.judges import JudgeParams, build_judges

    store, base_url, shared, _, options = sys.argv[1:6]
    args = {"model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "concurrency": 4}
    jp = JudgeParams.model_validate({"tasks": ["pairwise"], "progress": False, "judges": {"j": {"backend": "openai", "args": args}}})
    judge = build_judges(jp, store_root=store, shared_cache=shared, shared_cache_options=orjson.loads(options)).judges[0]
    print("ready", flush=True)
    sys.stdin.readline()  # the barrier: the test releases every checkout at once
    rows = judge.judge(make_pairs(15), []).pairwise
    print(orjson.dumps({"verdicts": [r["verdict"] for r in rows], "facts": judge.facts()}).decode(), flush=True)
    """
)


def race(tmp_path: Path, shared: str, options: dict | None = None, checkouts: int = 2) -> tuple[int, list[dict]]:
    """`checkouts` processes, each with its own store root and the same shared cache, released together on
    15 pairs × 2 orders = 30 distinct calls, the provider answering nothing until each has its 4 slots'
    requests out; returns (requests the provider received, each run's output)."""
    env = {**os.environ, "MOCK_API_KEY": KEY}
    with MockLLM(latency=0.2) as mock:
        mock.hold()  # until every checkout has all its slots' requests out: the runs surely overlap
        cmds = [[sys.executable, "-c", CHECKOUT, str(tmp_path / f"store-{i}"), mock.base_url, shared, TESTS, orjson.dumps(options or {}).decode()]
                for i in range(checkouts)]  # fmt: skip
        with started(cmds, env, stdin=True) as procs:
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
            assert until(lambda: mock.held == 4 * checkouts), f"{mock.held} requests held"
            mock.release()
            outs = outputs(procs)
        return mock.count, outs


def until(condition, timeout: float = 120.0) -> bool:
    """Wait for `condition` (checked every 20 ms), at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_two_checkouts_sharing_a_directory_started_together_pay_each_of_30_calls_once(tmp_path):
    team = tmp_path / "team"
    paid, outs = race(tmp_path, str(team))
    assert paid == 30, f"{paid} requests for 30 distinct calls"
    assert outs[0]["verdicts"] == outs[1]["verdicts"]
    assert sum(o["facts"]["calls"] for o in outs) == 30
    assert sum(o["facts"]["claim_waits"] for o in outs) > 0, "the two runs overlapped (else this test proves nothing)"
    assert not list(team.glob("claims/??/*")), "every claim was released"


# -- the claim itself ---------------------------------------------------------------------------------------

K = "ab" + "1" * 62

HOLDER = textwrap.dedent(
    """
    import sys
    from novelty_audit.llm import SharedCallCache
    token = SharedCallCache(sys.argv[1]).try_claim(sys.argv[2], 3600.0)
    print("held" if token else "refused", flush=True)
    sys.stdin.readline()
    """
)


def test_a_claim_is_exclusive_across_caches_and_free_again_once_released(tmp_path):
    a, b = SharedCallCache(str(tmp_path / "team")), SharedCallCache(str(tmp_path / "team"))
    token = a.try_claim(K, 60.0)
    assert token and b.try_claim(K, 60.0) is None
    a.release(K, token)
    assert b.try_claim(K, 60.0)


def test_a_claim_whose_holder_was_killed_is_taken_over_at_once(tmp_path):
    team = str(tmp_path / "team")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, team, K], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert SharedCallCache(team).try_claim(K, 60.0) is None  # alive: its claim holds
    finally:
        holder.kill()
        holder.wait(timeout=60)
    assert SharedCallCache(team).try_claim(K, 60.0), "a dead holder on this host blocks nothing"


def test_a_claim_past_its_expiry_is_taken_over_once_and_a_live_one_from_another_host_is_honoured(tmp_path):
    team = tmp_path / "team"
    claim = team / "claims" / K[:2] / f"{K}.json"
    claim.parent.mkdir(parents=True)
    claim.write_bytes(orjson.dumps({"token": "a" * 32, "host": "elsewhere", "pid": 1, "expires": time.time() + 3600}))
    assert SharedCallCache(str(team)).try_claim(K, 60.0) is None  # another host's live claim
    claim.write_bytes(orjson.dumps({"token": "a" * 32, "host": "elsewhere", "pid": 1, "expires": time.time() - 1}))
    first, second = SharedCallCache(str(team)), SharedCallCache(str(team))
    token = first.try_claim(K, 60.0)
    assert token and second.try_claim(K, 60.0) is None, "the stale claim was taken over by one cache only"
    assert orjson.loads(claim.read_bytes())["token"] == token
    assert not list(claim.parent.glob("*.takeover"))


def test_a_release_never_removes_a_claim_that_was_taken_over(tmp_path):
    team = tmp_path / "team"
    old = SharedCallCache(str(team))
    token = old.try_claim(K, 60.0)
    claim = team / "claims" / K[:2] / f"{K}.json"
    claim.write_bytes(orjson.dumps({"token": "b" * 32, "host": "elsewhere", "pid": 1, "expires": time.time() + 3600}))
    old.release(K, token)  # its holder outlived its bound; the newer claim stays
    assert orjson.loads(claim.read_bytes())["token"] == "b" * 32


def test_a_claim_holds_for_the_longest_a_call_can_take_with_its_settings():
    s = CallSettings(timeout_s=120, max_retries=5, max_backoff_s=60)
    assert claim_hold_s(s) >= 6 * 120 + 5 * 60
    slower = CallSettings(timeout_s=120, max_retries=5, max_backoff_s=60, requests_per_minute=6, concurrency=4)
    assert claim_hold_s(slower) - claim_hold_s(s) == 6 * 4 * 10  # each attempt may wait its turn at the rate limiter


# -- end to end: two project checkouts, `stage judge` in each, released together ------------------------------

STAGE = "import sys; sys.stdin.readline(); from novelty_audit.cli import main; main(['stage', 'judge'])"


@pytest.mark.slow
def test_two_project_checkouts_running_stage_judge_together_on_30_calls_pay_30(tmp_path):
    import polars as pl
    import yaml
    from project_copy import make_project

    team = tmp_path / "team-cache"
    env = {**os.environ, "MOCK_API_KEY": KEY}
    with MockLLM(latency=0.2) as mock:
        mock.hold()  # released once both stages have all their slots' requests out: the runs surely overlap
        checkouts = []
        for name in ("alice", "bob"):
            root = make_project(tmp_path / name)
            raw = yaml.safe_load((root / "params.yaml").read_text())
            raw["store"] = {"root": ".novelty-audit", "artifacts": "artifacts", "shared_cache": str(team)}
            raw["pin"]["datasets"] = {"human-only": raw["pin"]["datasets"]["human-only"]}
            raw["judge"] = {
                "datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "limit": 15,  # 15 pairs × 2 orders
                "judges": {"mock": {"backend": "openai", "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "concurrency": 4}}},
            }  # fmt: skip
            (root / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
            pinned = subprocess.run([sys.executable, "-m", "novelty_audit.cli", "stage", "pin"], cwd=root, capture_output=True, text=True, env=env, timeout=600)
            assert pinned.returncode == 0, pinned.stderr
            checkouts.append(root)
        procs = [subprocess.Popen([sys.executable, "-c", STAGE], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) for root in checkouts]  # fmt: skip
        try:
            for p in procs:  # both are started and waiting: release them at once
                p.stdin.write("go\n")
                p.stdin.flush()
            assert until(lambda: mock.held == 8), f"{mock.held} requests held"
            mock.release()
            for p in procs:
                out, err = p.communicate(timeout=600)
                assert p.returncode == 0, out + err
        finally:
            for p in procs:
                p.kill()
                p.wait(timeout=60)
        paid = mock.count
    assert paid == 30, f"{paid} requests for 30 distinct calls"
    alice, bob = (pl.read_parquet(root / "artifacts/judge/verdicts.parquet") for root in checkouts)
    assert alice.height == 15 and bob.equals(alice)
