"""A hung endpoint (connections accepted, nothing ever answered) is told from a slow one by a free probe: the
hung one is given up within `hung_after_s` + `connect_timeout_s`, its calls counted as timeouts; a slow one
keeps its long calls whole. The shipped defaults give up a hung endpoint within two minutes."""

from __future__ import annotations

import math
import time

import yaml
from judge_items import make_pairs
from mock_llm import MockLLM
from project_copy import REPO
from test_llm_fault_accounting import api, fake_key  # noqa: F401  (fake_key: an autouse fixture)

from novelty_audit.config import CallSettings


def test_a_hung_endpoint_is_given_up_after_the_probe_and_its_calls_count_as_timeouts(build, capsys):
    with MockLLM() as mock:
        mock.hold()  # accepts, reads the request, never answers (nor the probe)
        judge = api(build, mock.base_url, timeout_s=60, hung_after_s=0.3, connect_timeout_s=3, concurrency=4)
        started = time.monotonic()
        rows = judge.judge(make_pairs(20), []).pairwise
        elapsed = time.monotonic() - started
        sent, probes = mock.count, mock.probes
    assert elapsed < 30, elapsed  # far below timeout_s: the probe decided, not the request timeout
    assert 1 <= sent <= 4 and probes == 1  # the requests out (four slots), one probe, nothing after
    reasons = [r for row in rows for r in row["error_reasons"]]
    assert reasons.count("timeout") == sent and reasons.count("circuit open") == 20 - sent
    facts = judge.facts()
    assert facts["timeouts"] == sent and facts["errors_by_reason"] == {"timeout": sent, "circuit open": 20 - sent}
    assert "the endpoint answered neither the requests out nor a probe; last: timeout" in facts["error_details"]["circuit open"]
    err = capsys.readouterr().err
    assert f"20 calls failed: circuit open ({20 - sent}), timeout ({sent})" in err
    assert "answered nothing" in err and "not even a probe" in err


def test_a_slow_endpoint_that_answers_the_probe_keeps_its_long_calls_whole(build):
    with MockLLM(latency=1.5) as mock:  # every answer takes 1.5 s: five times the silence that sends a probe
        judge = api(build, mock.base_url, timeout_s=60, hung_after_s=0.3, connect_timeout_s=10, concurrency=2)
        rows = judge.judge(make_pairs(4), []).pairwise
        probes = mock.probes
    assert [row["n_valid"] for row in rows] == [1] * 4 and mock.count == 4
    assert probes >= 1, "the silence was probed (else this test proves nothing)"
    assert judge.facts()["timeouts"] == 0


def test_without_a_circuit_breaker_nothing_is_probed_and_requests_wait_their_own_timeout(build):
    with MockLLM() as mock:
        mock.hold()
        judge = api(build, mock.base_url, timeout_s=2, connect_timeout_s=2, hung_after_s=0.2, circuit_breaker=0, max_retries=0, concurrency=2)
        rows = judge.judge(make_pairs(2), []).pairwise
        assert mock.probes == 0
    assert [r for row in rows for r in row["error_reasons"]] == ["timeout", "timeout"]


def hung_bound_s(s: CallSettings) -> float:
    """The longest a run against a hung endpoint asks with these settings before the circuit opens: the
    probe's deadline after `hung_after_s` of silence, or, without a probe, the breaker's count of request
    timeouts (one wave of `concurrency` at a time, with the backoff between them)."""
    if not s.circuit_breaker:
        return math.inf
    by_timeouts = math.ceil(s.circuit_breaker / s.concurrency) * s.timeout_s + sum(
        min(s.max_backoff_s, s.backoff_s * 2**i) for i in range(min(s.max_retries, s.circuit_breaker))
    )
    if s.hung_after_s is None:
        return by_timeouts
    return min(by_timeouts, s.hung_after_s + min(s.connect_timeout_s, s.timeout_s))


def test_the_shipped_defaults_give_up_a_hung_endpoint_well_within_two_minutes():
    # 40 s of silence, then 10 s for the probe: 50 s, leaving the stage's own start and end well inside 120 s
    assert hung_bound_s(CallSettings()) == 50
    judges = yaml.safe_load((REPO / "params.yaml").read_text())["judge"]["judges"]
    for name, spec in judges.items():  # each shipped judge's own call knobs (e.g. a local server's concurrency)
        knobs = {k: v for k, v in (spec.get("args") or {}).items() if k in CallSettings.model_fields}
        assert hung_bound_s(CallSettings(**knobs)) <= 100, name


def test_long_reasoning_calls_are_not_cut_by_the_defaults():
    s = CallSettings()
    assert s.timeout_s >= 120 and s.hung_after_s is not None and s.hung_after_s < s.timeout_s
