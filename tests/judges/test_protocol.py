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
