"""A `judge.limit` run asks an import judge about a subset: rows naming pinned items left out of it are
"outside the subset" (counted on one line and recorded), never rows that match no pinned pair."""

from __future__ import annotations

import pytest
from judge_items import make_pairs, make_points

from novelty_audit.errors import BadInputError


def files(tmp_path, pairs, points, extra_pair_row: str = ""):
    f = tmp_path / "v.csv"
    f.write_text("dataset,pair_id,vote\n" + "".join(f"toy,{p.pair_id},A\n" for p in pairs) + extra_pair_row)
    g = tmp_path / "p.csv"
    g.write_text("dataset,idea_id,vote\n" + "".join(f"toy,{p.idea.idea_id},POSITIVE\n" for p in points))
    return f, g


def test_rows_of_items_left_out_of_the_subset_are_counted_and_recorded_not_unmatched(build, tmp_path, capsys):
    pairs, points = make_pairs(4), make_points(3)
    f, g = files(tmp_path, pairs, points)
    judge = build("import", path=str(f), pointwise_path=str(g))
    judge.set_left_out(pairs[1:], points[1:])
    out = judge.judge(pairs[:1], points[:1])
    assert [r["pair_id"] for r in out.pairwise] == [pairs[0].pair_id] and out.pairwise[0]["n_valid"] == 1
    assert [r["idea_id"] for r in out.pointwise] == [points[0].idea.idea_id] and out.pointwise[0]["n_valid"] == 1
    assert out.facts["outside_subset"] == 3 + 2
    assert (out.facts["imported_votes"], out.facts["imported_pointwise_votes"]) == (1, 1)
    reasons = [(e["file"], e["row"], e["field"], e["reason"].split(":")[0]) for e in out.exclusions]
    assert reasons == [(f.as_posix(), n, "pair_id", "outside the subset") for n in (2, 3, 4)] + [
        (g.as_posix(), n, "idea_id", "outside the subset") for n in (2, 3)]
    assert "judge j: 5 imported row(s) outside the subset (judge.limit)" in capsys.readouterr().err


def test_a_full_run_prints_no_subset_line(build, tmp_path, capsys):
    pairs, points = make_pairs(2), make_points(2)
    f, g = files(tmp_path, pairs, points)
    judge = build("import", path=str(f), pointwise_path=str(g))
    judge.set_left_out([], [])
    out = judge.judge(pairs, points)
    assert out.facts["outside_subset"] == 0 and not out.exclusions
    assert "outside the subset" not in capsys.readouterr().err


def test_a_limited_run_refuses_what_the_full_run_refuses(build, tmp_path):
    pairs = make_pairs(3)
    f, _ = files(tmp_path, pairs, [], extra_pair_row="toy,p-unknown,A\n")
    judge = build("import", tasks=("pairwise",), path=str(f))
    judge.set_left_out(pairs[1:])
    with pytest.raises(BadInputError, match=r"1 imported row\(s\) match no single pinned pair \(2 other row\(s\) name pinned pairs outside"):
        judge.judge(pairs[:1], [])
    bad = tmp_path / "bad.csv"
    bad.write_text(f"dataset,pair_id,vote\ntoy,{pairs[0].pair_id},A\ntoy,{pairs[2].pair_id},C\n")
    judge = build("import", tasks=("pairwise",), path=str(bad))
    judge.set_left_out(pairs[1:])
    with pytest.raises(BadInputError, match="row 2: field 'vote'"):  # a bad vote outside the subset is still bad
        judge.judge(pairs[:1], [])
