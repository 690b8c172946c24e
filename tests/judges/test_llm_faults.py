"""The API call engine under faults: every call ends as exactly one outcome with a reason, the run always
completes, a dead endpoint is given up within seconds, and backoff never holds a concurrency slot."""

from __future__ import annotations

import random
import re
import threading
import time
from pathlib import Path

import pytest
from judge_items import make_pairs, make_points
from mock_llm import MALFORMED_200, MockLLM, free_port

from novelty_audit.judges import CallCache, JudgeParams, build_judges
from novelty_audit.llm import connection_fault

KEY = "sk-test-SECRET123"


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)


def api(build, base_url: str, backend: str = "openai", **kw):
    args = {"model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.001, "max_retries": 2}
    args.update(kw)
    return build(backend, **args)


def reasons(rows) -> list[str]:
    return sorted(r for row in rows for r in row["error_reasons"])


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", MALFORMED_200)
def test_a_malformed_http_200_is_retried_like_a_500_then_recorded_as_an_error(build, mock_llm, backend, fault):
    mock_llm.add_rule("Idea number 0 ", fault)  # pair 0 always malformed
    mock_llm.add_rule("Idea number 2 ", fault, times=1)  # pair 1 malformed once per distinct request
    base = mock_llm.base_url if backend == "openai" else mock_llm.root_url
    judge = api(build, base, backend, votes=1, tasks=("pairwise",))
    rows = judge.judge(make_pairs(3), []).pairwise
    assert [(r["n_valid"], r["n_error"]) for r in rows] == [(0, 2), (2, 0), (2, 0)]
    assert rows[0]["error_reasons"] == ["malformed response", "malformed response"]
    # pair 0: 2 calls × 3 attempts; pair 1: 2 calls × 2 attempts; pair 2: 2 calls
    assert mock_llm.count == 6 + 4 + 2
    facts = judge.facts()
    assert facts["errors"] == 2 and facts["errors_by_reason"] == {"malformed response": 2}
    assert "after 3 attempt(s)" in facts["error_details"]["malformed response"]


@pytest.mark.slow
def test_a_dropped_connection_and_a_hang_are_errors_with_their_reason(build, mock_llm):
    mock_llm.add_rule("Idea number 0 ", "drop")
    mock_llm.add_rule("Idea number 2 ", "timeout", hang_s=4.0)
    # The timeout is far above a normal answer's time, so on a loaded machine only the hang times out.
    rows = api(build, mock_llm.base_url, votes=1, orders="forward", max_retries=1, timeout_s=2.0, tasks=("pairwise",)).judge(
        make_pairs(3), []
    ).pairwise
    assert [r["error_reasons"] for r in rows] == [["connection dropped"], ["timeout"], []]
    assert rows[2]["n_valid"] == 1


def test_a_run_with_mixed_faults_ends_with_every_pair_exactly_once(build, mock_llm, capsys):
    rng = random.Random(7)
    faults = ["429", "500", "truncated", "html", "empty_choices", "no_message", "wrong_types", "bad_body", "drop", "malformed"]
    texts = {}
    for n in range(60):
        if rng.random() < 0.3:
            fault = rng.choice(faults)
            texts[n] = f"FAULT{n}X idea"
            # a third of the faulty ideas fail for good, the rest once per distinct request
            mock_llm.add_rule(f"FAULT{n}X", fault, times=None if n % 3 == 0 else 1, retry_after=0.01 if fault == "429" else None)
    pairs = make_pairs(30, texts=texts)
    out = api(build, mock_llm.base_url, concurrency=6, tasks=("pairwise", "pointwise")).judge(pairs, make_points(4))
    assert sorted(r["pair_id"] for r in out.pairwise) == sorted(p.pair_id for p in pairs)
    for r in out.pairwise:
        assert r["n_valid"] + r["n_invalid"] + r["n_refusal"] + r["n_error"] + r["n_truncated"] == 6
        assert len(r["error_reasons"]) == r["n_error"]
    assert any(r["n_error"] for r in out.pairwise) and any(r["n_valid"] == 6 for r in out.pairwise)
    assert out.facts["errors"] == sum(out.facts["errors_by_reason"].values()) > 0
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_an_unexpected_exception_in_one_call_ends_only_that_call(build, mock_llm, caplog):
    judge = api(build, mock_llm.base_url, votes=1, orders="forward", tasks=("pairwise",))
    send = judge.llm.provider.send

    async def buggy(client, request):
        if "Idea number 2 " in str(request.payload):
            raise KeyError("choices")
        return await send(client, request)

    judge.llm.provider.send = buggy
    rows = judge.judge(make_pairs(3), []).pairwise
    assert [r["error_reasons"] for r in rows] == [[], ["unexpected KeyError"], []]
    assert [r["n_valid"] for r in rows] == [1, 0, 1]
    assert judge.facts()["error_details"]["unexpected KeyError"] == "KeyError: 'choices'"
    assert "call failed unexpectedly: KeyError" in caplog.text


def test_why_calls_failed_is_counted_in_the_facts_and_summarised_on_stderr(build, mock_llm, capsys):
    mock_llm.add_rule("Idea number 0 ", "500")
    mock_llm.add_rule("Idea number 2 ", "429")
    mock_llm.add_rule("Idea number 4 ", "html")
    judge = api(build, mock_llm.base_url, votes=2, orders="forward", max_retries=0, tasks=("pairwise",))
    rows = judge.judge(make_pairs(4), []).pairwise
    assert [r["error_reasons"] for r in rows] == [["HTTP 500"] * 2, ["HTTP 429"] * 2, ["malformed response"] * 2, []]
    facts = judge.facts()
    assert facts["errors_by_reason"] == {"HTTP 429": 2, "HTTP 500": 2, "malformed response": 2}
    assert facts["errors"] == 6 and facts["calls"] == 2
    assert facts["error_details"]["HTTP 500"].startswith("after 1 attempt(s): InternalServerError")
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "calls failed" in ln]
    assert lines == ["judge j: 6 calls failed: HTTP 429 (2), HTTP 500 (2), malformed response (2)"]
    assert KEY not in err and all(KEY not in d for d in facts["error_details"].values())


def test_an_endpoint_that_answers_errors_never_opens_the_circuit(build, mock_llm):
    mock_llm.add_rule("Idea", "500")
    rows = api(build, mock_llm.base_url, max_retries=1, circuit_breaker=2, tasks=("pairwise",)).judge(make_pairs(3), []).pairwise
    assert reasons(rows) == ["HTTP 500"] * 18
    assert mock_llm.count == 18 * 2


def test_a_dead_endpoint_ends_the_run_within_seconds_on_default_settings(build):
    # Nothing listens on the port: every connection is refused. Defaults: 5 retries from 1 s doubling
    # would take each call a minute; the circuit breaker gives up on the endpoint after 5 failures.
    dead = f"http://127.0.0.1:{free_port()}/v1"
    judge = build("openai", model="mock", base_url=dead, api_key_env="MOCK_API_KEY")
    pairs, points = make_pairs(20), make_points(10)
    started = time.perf_counter()
    out = judge.judge(pairs, points)
    assert time.perf_counter() - started < 120  # the bound; each of 150 calls retrying alone takes a minute
    assert len(out.pairwise) == 20 and len(out.pointwise) == 10
    assert all(r["n_error"] == 6 for r in out.pairwise) and all(r["n_error"] == 3 for r in out.pointwise)
    got = set(reasons(out.pairwise)) | {x for r in out.pointwise for x in r["error_reasons"]}
    assert got <= {"connection refused", "circuit open"} and "circuit open" in got
    facts = judge.facts()
    assert facts["errors"] == 150 and facts["calls"] == 0
    # Nothing is retried once the endpoint is given up: only calls that failed before the breaker opened
    # (at most one per request slot) scheduled a retry, and none of those is sent.
    assert facts["retries"] <= judge.args.concurrency + judge.args.circuit_breaker, facts
    assert "5 consecutive connection failures or timeouts; last: connection refused" in facts["error_details"]["circuit open"]


def test_a_server_that_stops_mid_run_opens_the_circuit_and_the_next_run_asks_only_the_failed_calls(build, tmp_path):
    mock = MockLLM(latency=0.02).start()
    try:
        pairs = make_pairs(12)
        judge = api(build, mock.base_url, votes=1, orders="forward", concurrency=2, max_retries=3, backoff_s=0.05, tasks=("pairwise",))
        seen = 0
        stopper = threading.Thread(target=mock.stop, daemon=True)

        def stop_after_four(body, nth):
            nonlocal seen
            seen += 1
            if seen == 4:
                stopper.start()  # from another thread: the server's own loop is answering this request
            return '{"answer": "A"}'

        mock.answer = stop_after_four
        first = judge.judge(pairs, []).pairwise
        failed = [r["pair_id"] for r in first if r["n_error"]]
        assert failed and set(reasons(first)) <= {"connection refused", "circuit open", "connection dropped", "connection reset"}
        mock.answer = lambda body, nth: '{"answer": "A"}'
        stopper.join(10)
        mock.requests.clear()
        mock.start()
        second = api(build, mock.base_url, votes=1, orders="forward", tasks=("pairwise",)).judge(pairs, []).pairwise
        assert mock.count == len(failed)
        assert all(r["n_valid"] == 1 for r in second)
    finally:
        mock.stop()


def test_backoff_waits_do_not_hold_a_concurrency_slot(build, mock_llm):
    mock_llm.add_rule("Idea number 0 ", "500")
    judge = api(build, mock_llm.base_url, votes=1, orders="forward", concurrency=1, max_retries=1, backoff_s=1.0, tasks=("pairwise",))
    judge.judge(make_pairs(6), [])
    failing = [i for i, r in enumerate(mock_llm.requests) if "Idea number 0 " in r.body["messages"][-1]["content"]]
    # With one slot, the other five calls are sent while the failing call waits to retry.
    assert failing == [0, 6]


def test_progress_lines_are_logged_when_stderr_is_not_a_terminal(mock_llm, tmp_path: Path, capsys):
    mock_llm.add_rule("Idea number 0 ", "500")
    jp = JudgeParams.model_validate(
        {
            "tasks": ["pairwise"], "progress": True,
            "judges": {"j": {"backend": "openai", "args": {
                "model": "mock", "base_url": mock_llm.base_url, "api_key_env": "MOCK_API_KEY", "max_retries": 0,
            }}},
        }
    )  # fmt: skip
    (judge,) = build_judges(jp, store_root=tmp_path / "store").judges
    judge.judge(make_pairs(10), [])
    lines = re.findall(r"judge j: (\d+)/60 calls done, (\d+) failed, \d+ retrying", capsys.readouterr().err)
    done = [int(d) for d, _ in lines]
    assert len(lines) >= 10 and done == sorted(done) and done[-1] == 60
    assert int(lines[-1][1]) == 6


def test_a_call_another_process_is_asking_is_waited_for_and_never_sent_twice(build, mock_llm, tmp_path: Path):
    judge = api(build, mock_llm.base_url, votes=1, orders="forward", tasks=("pairwise",))
    pairs = make_pairs(2)
    _, key = judge._prepare(judge.plan(pairs, [])[0])
    other = CallCache(tmp_path / "store" / "cache" / "calls")  # stands in for a second process on the same store
    claim = other.try_claim(key)
    assert claim is not None
    out: dict = {}
    worker = threading.Thread(target=lambda: out.setdefault("rows", judge.judge(pairs, []).pairwise))
    worker.start()
    deadline = time.monotonic() + 30
    while mock_llm.count < 1 and time.monotonic() < deadline:  # the unclaimed call went out: the claimed one is waiting
        time.sleep(0.01)
    assert mock_llm.count == 1
    other.put(key, {"outcome": "valid", "choice": 1, "note": None, "provider_model": "other-process", "cost_usd": 0.0})
    claim.release()
    worker.join(30)
    rows = out["rows"]
    assert mock_llm.count == 1
    assert rows[0]["verdict"] == pairs[0].idea_1.idea_id and rows[0]["provider_model"] == "other-process"
    assert judge.facts()["claim_waits"] == 1


def _chain(*excs: BaseException) -> BaseException:
    for outer, inner in zip(excs, excs[1:]):
        outer.__cause__ = inner
    return excs[0]


@pytest.mark.parametrize(
    ("chain", "reason", "counts_toward_breaker"),
    [
        (lambda: _chain(RuntimeError("Connection error."), OSError("all attempts failed"), ConnectionRefusedError(111, "refused")), "connection refused", True),
        (lambda: _chain(RuntimeError("Connection error."), ConnectionResetError(104, "reset by peer")), "connection reset", True),
        (lambda: _chain(RuntimeError("Request timed out."), type("ConnectTimeout", (Exception,), {})("connect")), "connect timeout", True),
        (lambda: _chain(RuntimeError("Request timed out."), type("ReadTimeout", (Exception,), {})("read")), "timeout", True),
        (lambda: _chain(RuntimeError("Connection error."), type("RemoteProtocolError", (Exception,), {})("closed")), "connection dropped", False),
    ],
)
def test_connection_faults_are_named_by_their_cause_and_only_endpoints_that_do_not_answer_trip_the_breaker(chain, reason, counts_toward_breaker):
    fault = connection_fault(chain(), timeout_s=3.0)
    assert (fault.reason, fault.connection) == (reason, counts_toward_breaker)
    assert not re.search(r"\d", fault.reason)  # a category: no port, pid or time in it
