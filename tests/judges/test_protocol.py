"""The voting protocol: orders × votes mapped to idea ids; failed calls are counted, never a win."""

from __future__ import annotations

from judge_items import make_pairs, make_points

from novelty_audit.judges import NONE, TIE, CallResult, JudgeContext, VoteJudge


class Scripted(VoteJudge):
    """Answers from a script keyed by (order, vote index)."""

    backend = "scripted"

    def __init__(self, script, votes=3, orders="both"):
        super().__init__(JudgeContext(name="scripted"), votes=votes, orders=orders)
        self.script = script

    def config(self):
        return {"backend": self.backend}

    def answer(self, call):
        return self.script[(call.order, call.vote_index)]


def ok(slot):
    return CallResult("valid", slot)


def test_failed_calls_stay_in_the_denominator_and_never_make_a_winner():
    # forward: first shown idea once, second once, one error → equal shares → tie
    s = {("forward", 0): ok(0), ("forward", 1): ok(1), ("forward", 2): CallResult("error")}
    (row,) = Scripted(s, orders="forward").judge(make_pairs(1), []).pairwise
    assert row["verdict"] == TIE
    assert (row["n_valid"], row["n_error"]) == (2, 1)
    assert row["votes_forward"][2] == "error"


def test_no_valid_vote_gives_none():
    s = {(o, v): CallResult(kind) for o in ("forward", "reverse") for v, kind in enumerate(["invalid", "refusal", "error"])}
    (row,) = Scripted(s).judge(make_pairs(1), []).pairwise
    assert row["verdict"] == NONE
    assert (row["n_valid"], row["n_invalid"], row["n_refusal"], row["n_error"]) == (0, 2, 2, 2)


def test_votes_are_mapped_back_to_ideas_across_orders():
    # slot 1 in forward is idea_1; slot 0 in reverse is idea_1 too: a consistent judge
    s = {("forward", v): ok(1) for v in range(3)} | {("reverse", v): ok(0) for v in range(3)}
    (pair,) = make_pairs(1)
    (row,) = Scripted(s).judge([pair], []).pairwise
    assert row["verdict"] == pair.idea_1.idea_id
    assert row["votes_forward"] == row["votes_reverse"] == [pair.idea_1.idea_id] * 3
    assert (row["score_0"], row["score_1"]) == (0.0, 1.0)


def test_per_idea_mean_share_decides_a_split_judge():
    # forward 2 of 3 for idea_0; reverse 3 of 3 for idea_1 → idea_1 by mean share (1/3 vs 2/3 … 0.333 < 0.667)
    s = {("forward", 0): ok(0), ("forward", 1): ok(0), ("forward", 2): ok(1)} | {("reverse", v): ok(0) for v in range(3)}
    (pair,) = make_pairs(1)
    (row,) = Scripted(s).judge([pair], []).pairwise
    assert row["verdict_forward"] == pair.idea_0.idea_id
    assert row["verdict_reverse"] == pair.idea_1.idea_id
    assert row["verdict"] == pair.idea_1.idea_id


def test_pointwise_majority_of_valid_answers_and_none_on_a_split():
    maj = {(None, 0): CallResult("valid", "POSITIVE"), (None, 1): CallResult("invalid"), (None, 2): CallResult("valid", "POSITIVE")}
    split = {(None, 0): CallResult("valid", "POSITIVE"), (None, 1): CallResult("refusal"), (None, 2): CallResult("valid", "NEGATIVE")}
    (a,) = Scripted(maj).judge([], make_points(1)).pointwise
    (b,) = Scripted(split).judge([], make_points(1)).pointwise
    assert (a["predicted"], a["n_valid"], a["n_invalid"]) == ("POSITIVE", 2, 1)
    assert (b["predicted"], b["n_refusal"]) == (NONE, 1)
    assert a["score"] == 2 / 3


def test_every_pair_and_idea_gets_exactly_one_row_in_input_order():
    s = {(o, v): ok(0) for o in ("forward", "reverse") for v in range(3)} | {(None, v): CallResult("valid", "NEGATIVE") for v in range(3)}
    pairs, points = make_pairs(7), make_points(5)
    out = Scripted(s).judge(pairs, points)
    assert [r["pair_id"] for r in out.pairwise] == [p.pair_id for p in pairs]
    assert [r["idea_id"] for r in out.pointwise] == [p.idea.idea_id for p in points]


def test_a_truncated_answer_is_counted_on_its_own_and_stays_in_the_denominator():
    s = {("forward", 0): ok(0), ("forward", 1): CallResult("truncated"), ("forward", 2): CallResult("truncated")}
    (pair,) = make_pairs(1)
    (row,) = Scripted(s, orders="forward").judge([pair], []).pairwise
    assert (row["n_valid"], row["n_invalid"], row["n_truncated"]) == (1, 0, 2)
    assert row["votes_forward"] == [pair.idea_0.idea_id, "truncated", "truncated"]
    assert (row["score_0"], row["score_1"]) == (1 / 3, 0.0)
    pts = {(None, 0): CallResult("truncated"), (None, 1): CallResult("valid", "NEGATIVE"), (None, 2): CallResult("truncated")}
    (point,) = Scripted(pts).judge([], make_points(1)).pointwise
    assert (point["predicted"], point["n_truncated"], point["n_valid"]) == ("NEGATIVE", 2, 1)


def test_each_failed_call_leaves_its_reason_in_the_row_sorted_and_never_a_run_fact():
    s = {(o, v): CallResult("valid", 0, latency_s=1.5 + v) for o in ("forward", "reverse") for v in range(3)}
    s[("forward", 1)] = CallResult("error", error_reason="timeout", detail="ReadTimeout: after 30 s", latency_s=30.0)
    s[("reverse", 2)] = CallResult("error", error_reason="HTTP 500", detail="InternalServerError: boom")
    s[("reverse", 0)] = CallResult("error")  # a backend that gives no reason
    (row,) = Scripted(s).judge(make_pairs(1), []).pairwise
    assert row["n_error"] == 3
    assert row["error_reasons"] == ["HTTP 500", "timeout", "unspecified"]
    assert "latency_s" not in row and not any("ReadTimeout" in str(v) for v in row.values())
    pts = {(None, 0): CallResult("error", error_reason="connection refused"), (None, 1): CallResult("invalid"),
           (None, 2): CallResult("valid", "POSITIVE")}
    (point,) = Scripted(pts).judge([], make_points(1)).pointwise
    assert (point["n_error"], point["error_reasons"]) == (1, ["connection refused"])


def test_rows_without_failed_calls_have_no_reasons_and_the_same_bytes_whatever_the_latency():
    fast = {(o, v): CallResult("valid", v % 2, latency_s=0.01) for o in ("forward", "reverse") for v in range(3)}
    slow = {k: CallResult("valid", r.choice, latency_s=9.0) for k, r in fast.items()}
    (a,) = Scripted(fast).judge(make_pairs(1), []).pairwise
    (b,) = Scripted(slow).judge(make_pairs(1), []).pairwise
    assert a == b and a["error_reasons"] == []


def test_an_unknown_outcome_is_a_bug_not_a_silently_lost_call():
    import pytest

    s = {(o, v): CallResult("timeout") for o in ("forward", "reverse") for v in range(3)}  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="'timeout'"):
        Scripted(s).judge(make_pairs(1), [])


def test_the_code_digest_is_computed_once_however_many_threads_ask(monkeypatch):
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    from novelty_audit.judges import _base

    calls = []
    started = threading.Event()

    def slow_digest(*mods):
        calls.append(mods)
        started.set()
        time.sleep(0.2)  # long enough for every other thread to arrive while the first computes
        return SimpleNamespace(digest=f"digest-{len(calls)}")

    monkeypatch.setattr(_base, "code_digest", slow_digest)
    monkeypatch.setattr(_base, "_CODE_DIGESTS", {})
    judge = Scripted({})
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(lambda: judge.code_digest)
        assert started.wait(120)  # generous: a busy machine may be slow to start a pool thread
        rest = [pool.submit(lambda: judge.code_digest) for _ in range(7)]
        got = {first.result()} | {f.result() for f in rest}
    assert got == {"digest-1"} and len(calls) == 1
