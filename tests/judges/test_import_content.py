"""The import backend names pairs by content: shown texts (the Ai2 expert-annotation format), text digests,
titles, or the source file's item key; a row that matches no single pinned pair is never placed by position."""

from __future__ import annotations

import csv
import dataclasses
import unicodedata
from pathlib import Path

import pytest
from judge_items import make_pairs

from novelty_audit.errors import BadInputError, ConfigError
from novelty_audit.judges import NONE, TIE

AI2_COLUMNS = ["item_id", "problem_id", "source_file", "generation_model", "judge_model", "shown_A_idea",
               "shown_B_idea", "gold", "predicted", "annotation", "annotation_reasoning"]
AI2_ARGS = {"columns": {"text_a": "shown_A_idea", "text_b": "shown_B_idea", "vote": "annotation"}}


def write_csv(path: Path, header: list[str], rows: list[dict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    return path


def ai2_row(n: int, a: str, b: str, vote: str) -> dict:
    return {"item_id": n, "problem_id": n, "source_file": "x.yaml", "generation_model": "", "judge_model": "m",
            "shown_A_idea": a, "shown_B_idea": b, "gold": "", "predicted": vote, "annotation": vote,
            "annotation_reasoning": "because"}


def test_shown_order_decides_what_a_and_b_mean(build, tmp_path):
    pairs = make_pairs(2)
    p0, p1 = pairs
    f = write_csv(tmp_path / "expert.csv", AI2_COLUMNS, [
        ai2_row(1, p0.idea_0.text, p0.idea_1.text, "A"),   # shown in slot order: A = idea_0
        ai2_row(2, p1.idea_1.text, p1.idea_0.text, "A"),   # shown swapped: A = idea_1
    ])
    rows = build("import", tasks=("pairwise",), path=str(f), **AI2_ARGS).judge(pairs, []).pairwise
    assert [r["verdict"] for r in rows] == [p0.idea_0.idea_id, p1.idea_1.idea_id]
    assert (rows[0]["votes_forward"], rows[0]["votes_reverse"]) == ([p0.idea_0.idea_id], None)
    assert (rows[1]["votes_forward"], rows[1]["votes_reverse"]) == (None, [p1.idea_1.idea_id])


def test_texts_match_after_nfc_and_whitespace_normalization(build, tmp_path):
    pairs = make_pairs(1, texts={0: "Caf\u00e9 ideas   for\ngraphs.", 1: "Another idea."})
    shown_a = unicodedata.normalize("NFD", "  Café ideas for graphs.\n")  # decomposed é, other whitespace
    f = write_csv(tmp_path / "e.csv", AI2_COLUMNS, [ai2_row(1, "Another  idea.", shown_a, "b")])
    (row,) = build("import", tasks=("pairwise",), path=str(f), **AI2_ARGS).judge(pairs, []).pairwise
    assert row["verdict"] == pairs[0].idea_0.idea_id  # B was shown second = idea_0's text


def test_unmatched_rows_are_errors_naming_file_row_and_field(build, tmp_path):
    pairs = make_pairs(2)
    f = write_csv(tmp_path / "e.csv", AI2_COLUMNS, [
        ai2_row(1, pairs[0].idea_0.text, pairs[0].idea_1.text, "A"),
        ai2_row(2, "A text nobody pinned.", pairs[1].idea_1.text, "B"),
        ai2_row(3, pairs[0].idea_0.text, pairs[1].idea_1.text, "B"),  # two pinned ideas, never paired
    ])
    with pytest.raises(BadInputError) as exc:
        build("import", tasks=("pairwise",), path=str(f), **AI2_ARGS).judge(pairs, [])
    msg = exc.value.message
    assert "2 imported row(s)" in msg
    assert f"{f}: row 2: field 'shown_A_idea' matches no pinned idea" in msg
    assert f"{f}: row 3: field 'shown_A_idea'" in msg and "no pinned pair holds the two together" in msg


def test_exclude_records_unmatched_rows_and_leaves_their_pairs_uncovered(build, tmp_path):
    pairs = make_pairs(3)
    f = write_csv(tmp_path / "e.csv", AI2_COLUMNS, [
        ai2_row(1, pairs[0].idea_1.text, pairs[0].idea_0.text, "tie"),
        ai2_row(2, "A text nobody pinned.", "Neither this one.", "A"),
        ai2_row(3, pairs[2].idea_0.text, pairs[2].idea_1.text, ""),
    ])
    out = build("import", tasks=("pairwise",), path=str(f), on_unmatched="exclude", **AI2_ARGS).judge(pairs, [])
    assert [r["verdict"] for r in out.pairwise] == [TIE, NONE, NONE]
    assert [r["n_valid"] for r in out.pairwise] == [1, 0, 0]  # pairs 1 and 2: nobody was asked (not covered)
    assert [(e["row"], e["field"]) for e in out.exclusions] == [(2, "shown_A_idea"), (3, "annotation")]
    assert all(e["judge"] == "j" and e["file"] == f.as_posix() and e["reason"] for e in out.exclusions)


def test_a_row_matching_pairs_of_two_datasets_is_ambiguous_unless_it_names_its_dataset(build, tmp_path):
    one, other = make_pairs(1, dataset="one"), make_pairs(1, dataset="other")
    p = one[0]
    rows = [{"shown_A_idea": p.idea_0.text, "shown_B_idea": p.idea_1.text, "annotation": "A", "split": ""}]
    f = write_csv(tmp_path / "e.csv", ["shown_A_idea", "shown_B_idea", "annotation", "split"], rows)
    args = {"columns": {**AI2_ARGS["columns"], "dataset": "split"}}
    with pytest.raises(BadInputError, match=r"row 1: field 'shown_A_idea' \(with shown_B_idea\) matches 2 pinned pairs"):
        build("import", tasks=("pairwise",), path=str(f), **args).judge(one + other, [])
    rows[0]["split"] = "other"
    g = write_csv(tmp_path / "g.csv", ["shown_A_idea", "shown_B_idea", "annotation", "split"], rows)
    out = build("import", tasks=("pairwise",), path=str(g), **args).judge(one + other, []).pairwise
    assert [(r["dataset"], r["n_valid"]) for r in out] == [("one", 0), ("other", 1)]


def test_pairs_named_by_text_digests_or_titles(build, tmp_path):
    pairs = make_pairs(1)
    p = pairs[0]
    f = write_csv(tmp_path / "d.csv", ["digest_a", "digest_b", "vote"], [
        {"digest_a": p.idea_1.text_digest.upper(), "digest_b": p.idea_0.text_digest, "vote": "A"}])
    (row,) = build("import", tasks=("pairwise",), path=str(f)).judge(pairs, []).pairwise
    assert row["verdict"] == p.idea_1.idea_id
    g = write_csv(tmp_path / "t.csv", ["first", "second", "vote"], [
        {"first": p.idea_0.title.upper(), "second": p.idea_1.title, "vote": "B"}])
    args = {"columns": {"title_a": "first", "title_b": "second"}}
    (row,) = build("import", tasks=("pairwise",), path=str(g), **args).judge(pairs, []).pairwise
    assert row["verdict"] == p.idea_1.idea_id


def test_pairs_named_by_the_source_files_item_key_and_slot(build, tmp_path):
    pairs = [dataclasses.replace(p, source_key=str(70 + k)) for k, p in enumerate(make_pairs(2))]
    f = write_csv(tmp_path / "k.csv", ["problem_id", "vote"], [{"problem_id": "71", "vote": "0"}, {"problem_id": "99", "vote": "1"}])
    args = {"columns": {"item_key": "problem_id"}, "on_unmatched": "exclude"}
    out = build("import", tasks=("pairwise",), path=str(f), **args).judge(pairs, [])
    assert [r["verdict"] for r in out.pairwise] == [NONE, pairs[1].idea_0.idea_id]
    assert out.exclusions[0]["row"] == 2 and "'99' matches no pinned pair" in out.exclusions[0]["reason"]


def test_a_file_naming_pairs_by_nothing_known_is_a_clear_error(build, tmp_path):
    f = write_csv(tmp_path / "x.csv", ["left", "right", "vote"], [{"left": "a", "right": "b", "vote": "A"}])
    with pytest.raises(BadInputError, match="no column set names a pair"):
        build("import", tasks=("pairwise",), path=str(f))


def test_a_misspelled_column_key_fails_when_params_are_read(build, tmp_path):
    f = write_csv(tmp_path / "x.csv", ["pair_id", "vote"], [])
    with pytest.raises(ConfigError, match="columns.txt_a"):
        build("import", path=str(f), columns={"txt_a": "shown_A_idea"})


def test_content_rows_reject_slot_numbers_whose_meaning_would_depend_on_the_file(build, tmp_path):
    pairs = make_pairs(1)
    p = pairs[0]
    f = write_csv(tmp_path / "e.csv", AI2_COLUMNS, [ai2_row(1, p.idea_0.text, p.idea_1.text, "0")])
    with pytest.raises(BadInputError, match=r"row 1: field 'annotation': '0' names neither idea"):
        build("import", tasks=("pairwise",), path=str(f), **AI2_ARGS).judge(pairs, [])


def test_the_file_bytes_and_matching_settings_are_in_the_judges_identity(build, tmp_path):
    pairs = make_pairs(1)
    p = pairs[0]
    f = write_csv(tmp_path / "e.csv", AI2_COLUMNS, [ai2_row(1, p.idea_0.text, p.idea_1.text, "A")])
    j = build("import", tasks=("pairwise",), path=str(f), **AI2_ARGS)
    assert j.input_files() == [f]
    before = j.config_digest
    assert build("import", tasks=("pairwise",), path=str(f), on_unmatched="exclude", **AI2_ARGS).config_digest != before
    f.write_text(f.read_text().replace("because", "since"))
    assert build("import", tasks=("pairwise",), path=str(f), **AI2_ARGS).config_digest != before
