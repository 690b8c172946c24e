"""How the call engine accounts for faults: a hung endpoint trips the breaker, a failed call counts once,
a key echoed by a server never survives in an error text, and a refused connection is named as such."""

from __future__ import annotations

import asyncio
import random

import orjson
import pytest
from judge_items import make_pairs
from mock_llm import MockLLM, free_port

from novelty_audit.judges import failed_calls, failure_line
from novelty_audit.llm import connection_fault
from novelty_audit.llm._engine import _Slots, _Stopped

KEY = "sk-test-0123456789abcdefghijklmnopqrstuvwxyzABCD"


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)


def api(build, base_url: str, **kw):
    args = {"model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.01, "votes": 1, "orders": "forward"}
    return build("openai", tasks=("pairwise",), **{**args, **kw})


def test_consecutive_timeouts_open_the_circuit_like_refused_connections(build):
    with MockLLM() as mock:
        mock.hold()  # accepts every connection, reads the request, never answers
        judge = api(build, mock.base_url, timeout_s=0.5, connect_timeout_s=0.5, max_retries=5, circuit_breaker=3, concurrency=4)
        rows = judge.judge(make_pairs(40), []).pairwise
        sent = mock.count
    reasons = [r for row in rows for r in row["error_reasons"]]
    assert len(reasons) == 40 and set(reasons) <= {"timeout", "circuit open"} and "circuit open" in reasons
    # 40 calls × 6 attempts would be 240 requests; the breaker gives up after 3 timeouts in a row, so fewer
    # requests are sent than there are calls (at most one per slot after the third timeout).
    assert sent < 40, sent
    assert "3 consecutive connection failures or timeouts; last: timeout" in judge.facts()["error_details"]["circuit open"]


def test_a_retrying_call_is_given_the_next_free_slot_before_any_first_attempt():
    async def scenario() -> list[str]:
        slots = _Slots(1)
        order: list[str] = []

        async def call(name: str, retry: bool) -> None:
            async with slots.slot(retry=retry):
                order.append(name)
                await asyncio.sleep(0)

        await slots._acquire(False)  # one call in flight holds the only slot
        waiting = [asyncio.create_task(call(f"first-{i}", False)) for i in range(3)]
        await asyncio.sleep(0)
        waiting.append(asyncio.create_task(call("retry", True)))  # queued last
        await asyncio.sleep(0)
        slots._release()
        await asyncio.gather(*waiting)
        return order

    assert asyncio.run(scenario()) == ["retry", "first-0", "first-1", "first-2"]


def test_closed_slots_end_every_waiting_call_unsent():
    async def scenario() -> list[object]:
        slots = _Slots(1)
        await slots._acquire(False)
        waiting = [asyncio.create_task(slots._acquire(i % 2 == 0)) for i in range(4)]
        await asyncio.sleep(0)
        slots.close()
        later = asyncio.create_task(slots._acquire(False))
        return await asyncio.gather(*waiting, later, return_exceptions=True)

    assert all(isinstance(r, _Stopped) for r in asyncio.run(scenario()))


def test_a_call_that_fails_in_two_datasets_after_retries_counts_as_one_failed_call(build):
    with MockLLM() as mock:
        mock.add_rule("Idea number 0 ", "500")  # pair 0 fails for good, every attempt
        judge = api(build, mock.base_url, max_retries=2, orders="both")
        # The same pair pinned in two datasets: one call answers (here: fails) both rows.
        pairs = make_pairs(3, dataset="a") + make_pairs(3, dataset="b")
        out = judge.judge(pairs, [])
        attempts = sum("Idea number 0 " in r.body["messages"][-1]["content"] for r in mock.requests)
    assert attempts == 2 * 3, "two calls (both orders), three attempts each"
    assert sum(r["n_error"] for r in out.pairwise) == 4, "each dataset's row counts its own failed votes"
    failed = failed_calls(judge, out)
    assert failed == {"HTTP 500": 2}, "two distinct calls failed: not four rows' votes, not six attempts"
    assert failure_line(failed) == "2 calls failed: HTTP 500"
    assert judge.facts()["errors"] == 2


def test_a_judge_without_per_call_failures_still_counts_its_rows(build):
    from novelty_audit.judges import JudgeOutput

    judge = api(build, "http://127.0.0.1:9/v1")
    rows = [{"n_error": 2, "error_reasons": ["timeout", "timeout"]}, {"n_error": 1, "error_reasons": []}]
    assert failed_calls(judge, JudgeOutput(pairwise=rows)) == {"timeout": 2, "unknown reason": 1}


@pytest.mark.parametrize("filler", range(236, 300, 7))
def test_a_key_a_server_echoes_across_the_cut_of_the_error_text_is_redacted_whole(build, capsys, filler):
    # "Error code: 500 - {'error': {'message': '" precedes the message: with these fillers the 300-character
    # cut falls before, inside and after the key.
    with MockLLM() as mock:
        mock.add_rule("Idea number 0 ", "500", message="x" * filler + f" bad key {KEY} rejected")
        judge = api(build, mock.base_url, max_retries=0)
        rows = judge.judge(make_pairs(1), []).pairwise
    assert rows[0]["error_reasons"] == ["HTTP 500"]
    detail = judge.facts()["error_details"]["HTTP 500"]
    assert "xxxxxxxx" in detail
    texts = detail + capsys.readouterr().err
    leaks = [KEY[i : i + 6] for i in range(len(KEY) - 5) if KEY[i : i + 6] in texts]
    assert leaks == [], f"part of the key survived: {leaks} in {detail!r}"


def test_a_batch_error_line_is_redacted_before_it_is_cut(build):
    judge = api(build, "http://127.0.0.1:9/v1")
    for filler in range(270, 300, 3):
        line = orjson.dumps({"custom_id": "k1", "error": {"code": "invalid", "message": "y" * filler + KEY}})
        key, fault = judge.llm.provider._batch_line(line)
        assert key == "k1" and fault.reason == "batch: invalid"
        assert not any(KEY[i : i + 6] in fault.detail for i in range(len(KEY) - 5)), fault.detail


def _chain(*excs: BaseException) -> BaseException:
    for outer, inner in zip(excs, excs[1:]):
        outer.__cause__ = inner
    return excs[0]


def test_a_refused_connection_is_named_by_the_refusal_not_by_what_was_being_handled_when_it_was_raised():
    refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    refused.__context__ = RuntimeError("no running event loop")  # unrelated: merely being handled at the time
    fault = connection_fault(_chain(RuntimeError("Connection error."), OSError("All connection attempts failed"), refused), 3.0)
    assert fault.reason == "connection refused" and fault.connection
    assert "ConnectionRefusedError: [Errno 111] Connect call failed" in fault.detail
    assert "no running event loop" not in fault.detail


def test_a_refused_connection_to_a_real_port_names_the_refusal_in_the_error_detail(build):
    judge = api(build, f"http://127.0.0.1:{free_port()}/v1", max_retries=0, circuit_breaker=0)
    rows = judge.judge(make_pairs(1), []).pairwise
    assert rows[0]["error_reasons"] == ["connection refused"]
    detail = judge.facts()["error_details"]["connection refused"]
    assert "ConnectionRefusedError" in detail and "RuntimeError" not in detail, detail


def test_settling_every_reservation_leaves_nothing_reserved(tmp_path):
    from novelty_audit.judges import Budget

    budget = Budget(100.0, state=tmp_path / "budget.json")
    rng = random.Random(1)
    # worst cases as the engine makes them: (prompt bytes × input price + max_tokens × output price) / 1e6
    amounts = [(rng.randint(800, 3000) + 512) / 1e6 for _ in range(48)]
    for a in amounts:
        budget.reserve(a, "a call")
    for a in amounts[::2] + amounts[1::2]:  # settled in another order than reserved, as concurrent calls are
        budget.settle(a, a / 2)
    assert budget.reserved == 0.0, "float residue of the sums must not stay reserved after every call settled"


def test_a_failed_call_in_two_chunks_of_a_fan_out_counts_once(build):
    from novelty_audit.orchestration import JudgeChunk, merge_outputs

    with MockLLM() as mock:
        mock.add_rule("Idea number 0 ", "500")
        judge = api(build, mock.base_url, max_retries=0)
        a, b = make_pairs(2, dataset="a"), make_pairs(2, dataset="b")
        outs = [judge.judge(a, []), judge.judge(b, [])]  # the same pair in two chunks (two datasets)
    chunks = [JudgeChunk(judge.name, judge.backend, i, items, []) for i, items in enumerate((a, b))]
    (merged,) = merge_outputs([judge], a + b, [], chunks, outs)
    assert failed_calls(judge, merged) == {"HTTP 500": 1}
