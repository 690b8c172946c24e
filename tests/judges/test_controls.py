"""Control judges: position-only answers, a seeded coin, abstention, and imported verdicts."""

from __future__ import annotations

import pytest
from judge_items import make_pairs, make_points

from novelty_audit.errors import BadInputError
from novelty_audit.judges import NONE, TIE


def test_always_first_ties_every_pair_when_both_orders_are_asked(build):
    pairs = make_pairs(20)
    rows = build("always-first").judge(pairs, []).pairwise
    assert [r["verdict"] for r in rows] == [TIE] * 20
    for p, r in zip(pairs, rows):
        # each vote is mapped back to the idea shown first in that order
        assert r["votes_forward"] == [p.idea_0.idea_id] * 3
        assert r["votes_reverse"] == [p.idea_1.idea_id] * 3
        assert (r["verdict_forward"], r["verdict_reverse"]) == (p.idea_0.idea_id, p.idea_1.idea_id)
        assert (r["n_valid"], r["n_invalid"], r["n_refusal"], r["n_error"]) == (6, 0, 0, 0)
        assert r["score_0"] == r["score_1"] == 0.5


def test_forward_only_exposes_the_position_bias(build):
    pairs = make_pairs(6)
    first = build("always-first", orders="forward").judge(pairs, []).pairwise
    second = build("always-second", orders="forward").judge(pairs, []).pairwise
    assert [r["verdict"] for r in first] == [p.idea_0.idea_id for p in pairs]
    assert [r["verdict"] for r in second] == [p.idea_1.idea_id for p in pairs]
    assert all(r["verdict_reverse"] is None and r["votes_reverse"] is None for r in first)


def test_random_is_reproducible_per_seed_and_varies_across_pairs(build):
    pairs = make_pairs(40)
    a = [r["verdict"] for r in build("random", seed=1).judge(pairs, []).pairwise]
    b = [r["verdict"] for r in build("random", seed=1).judge(pairs, []).pairwise]
    c = [r["verdict"] for r in build("random", seed=2).judge(pairs, []).pairwise]
    assert a == b
    assert a != c
    assert len(set(a)) > 3


def test_random_verdict_of_a_pair_does_not_depend_on_the_other_pairs(build):
    pairs = make_pairs(10)
    whole = build("random", seed=7).judge(pairs, []).pairwise
    alone = build("random", seed=7).judge(pairs[3:4], []).pairwise
    assert alone[0]["verdict"] == whole[3]["verdict"]


def test_abstain_never_wins_and_counts_every_refusal(build):
    out = build("abstain", votes=2).judge(make_pairs(5), make_points(4))
    assert {r["verdict"] for r in out.pairwise} == {NONE}
    assert all(r["n_refusal"] == 4 and r["n_valid"] == 0 for r in out.pairwise)
    assert {r["predicted"] for r in out.pointwise} == {NONE}


def test_pointwise_controls_pick_the_first_or_second_label(build):
    points = make_points(4)
    assert {r["predicted"] for r in build("always-first").judge([], points).pointwise} == {"POSITIVE"}
    assert {r["predicted"] for r in build("always-second").judge([], points).pointwise} == {"NEGATIVE"}


# -- import --------------------------------------------------------------------------------------------


def test_import_maps_slots_and_ids_and_keeps_failed_votes(build, tmp_path):
    pairs = make_pairs(3)
    f = tmp_path / "votes.csv"
    f.write_text(
        "dataset,pair_id,vote,order\n"
        f"toy,{pairs[0].pair_id},0,forward\n"
        f"toy,{pairs[0].pair_id},{pairs[0].idea_0.idea_id},reverse\n"
        f"toy,{pairs[1].pair_id},1,\n"
        f"toy,{pairs[1].pair_id},error,\n"
        f"toy,{pairs[2].pair_id},tie,\n"
    )
    rows = build("import", tasks=("pairwise",), path=str(f)).judge(pairs, []).pairwise
    assert [r["verdict"] for r in rows] == [pairs[0].idea_0.idea_id, pairs[1].idea_1.idea_id, TIE]
    assert rows[0]["votes_reverse"] == [pairs[0].idea_0.idea_id]
    assert (rows[1]["n_valid"], rows[1]["n_error"]) == (1, 1)


def test_import_reads_jsonl_and_pointwise(build, tmp_path):
    pairs, points = make_pairs(1), make_points(2)
    f = tmp_path / "v.jsonl"
    f.write_text(f'{{"dataset": "toy", "pair_id": "{pairs[0].pair_id}", "vote": "{pairs[0].idea_1.idea_id}"}}\n')
    g = tmp_path / "p.jsonl"
    g.write_text("".join(f'{{"dataset": "toy", "idea_id": "{p.idea.idea_id}", "vote": "NEGATIVE"}}\n' for p in points))
    out = build("import", path=str(f), pointwise_path=str(g)).judge(pairs, points)
    assert out.pairwise[0]["verdict"] == pairs[0].idea_1.idea_id
    assert [r["predicted"] for r in out.pointwise] == ["NEGATIVE", "NEGATIVE"]


@pytest.mark.parametrize(
    "line, message",
    [
        ("toy,p-unknown,0", "row 1: field 'pair_id'"),
        ("toy,{pid},C", "row 1: field 'vote'"),
        ("toy,{pid},", "row 1: field 'vote' is missing"),
        ("toy,{pid},0,sideways", "row 1: field 'order'"),
    ],
)
def test_bad_import_rows_are_clear_errors(build, tmp_path, line, message):
    pairs = make_pairs(1)
    f = tmp_path / "bad.csv"
    f.write_text("dataset,pair_id,vote,order\n" + line.format(pid=pairs[0].pair_id) + "\n")
    with pytest.raises(BadInputError) as exc:
        build("import", tasks=("pairwise",), path=str(f)).judge(pairs, [])
    assert str(f) in exc.value.message and message in exc.value.message


def test_a_pair_without_imported_votes_is_an_error_unless_asked_to_record_none(build, tmp_path):
    pairs = make_pairs(2)
    f = tmp_path / "v.csv"
    f.write_text(f"dataset,pair_id,vote\ntoy,{pairs[0].pair_id},0\n")
    with pytest.raises(BadInputError, match="no vote for pair"):
        build("import", tasks=("pairwise",), path=str(f)).judge(pairs, [])
    rows = build("import", tasks=("pairwise",), path=str(f), on_missing="none").judge(pairs, []).pairwise
    assert [r["verdict"] for r in rows] == [pairs[0].idea_0.idea_id, NONE]


def test_imported_failed_votes_keep_their_outcome_and_error_reason(build, tmp_path):
    pairs = make_pairs(1)
    pid = pairs[0].pair_id
    f = tmp_path / "votes.csv"
    f.write_text(
        "dataset,pair_id,vote,error_reason\n"
        f"toy,{pid},0,\ntoy,{pid},truncated,\ntoy,{pid},error,HTTP 503\ntoy,{pid},error,\n"
    )
    (row,) = build("import", tasks=("pairwise",), path=str(f)).judge(pairs, []).pairwise
    assert (row["n_valid"], row["n_truncated"], row["n_error"]) == (1, 1, 2)
    assert row["error_reasons"] == ["HTTP 503", "unspecified"]
