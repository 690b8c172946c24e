"""A candidate file is checked row by row: a bad row stops `candidates add` (exit 2) naming file, line and field,
or, with --exclude-bad, is recorded with its reason; a good file is copied under data/candidates/ and pinned."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from novelty_audit.config import CandidateSet
from novelty_audit.params import load_params
from novelty_audit.pools import read_candidates

AREAS = ["reinforcement learning", "optimization"]


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _idea(title: str, area: str = "optimization", text: str = "A new step size rule for Adam.", **extra) -> dict:
    return {"area": area, "title": title, "text": text, **extra}


BAD_ROWS = [
    (_idea("B", area="quantum gardening"), "area", "unknown area"),
    (_idea("B", text="   "), "text", "missing or empty"),
    (_idea("A"), "title", "duplicate title (first at line 1)"),
    (_idea("B", text="word " * 401), "text", "over the limit of 400"),
    ({"area": "optimization", "title": "B"}, "text", "missing or empty"),
    ("{not json", "-", "not valid JSON"),
]


@pytest.mark.parametrize(("row", "field", "reason"), BAD_ROWS)
def test_a_bad_row_is_refused_naming_line_and_field(tmp_path: Path, row, field: str, reason: str) -> None:
    f = _jsonl(tmp_path / "c.jsonl", [_idea("A"), row])
    with pytest.raises(Exception) as err:
        read_candidates(f, areas=AREAS, max_words=400)
    assert getattr(err.value, "exit_code", None) == 2
    assert f"{f.as_posix()}: line 2, field {field}: " in str(err.value) and reason in str(err.value)


def test_with_exclusion_on_bad_rows_are_recorded_with_their_reason_and_the_rest_kept(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "c.jsonl", [_idea("A"), _idea("B", area="nowhere"), _idea("a"), _idea("C", area="Reinforcement  Learning")])
    got = read_candidates(f, areas=AREAS, max_words=400, on_bad_row="exclude")
    assert sorted(got.ideas["title"].to_list()) == ["A", "C"]
    assert got.ideas.filter(got.ideas["title"] == "C")["area"].item() == "reinforcement learning"  # matched to the human area's spelling
    assert [(r["item"], r["field"]) for r in got.exclusions.iter_rows(named=True)] == [("2", "area"), ("3", "title")]


def test_a_csv_file_reads_like_jsonl_and_a_title_of_a_human_idea_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "c.csv"
    f.write_text('area,title,text,system\noptimization,A,"A rule, with a comma.",sys-a\noptimization,Human,Text.,sys-a\n', encoding="utf-8")
    got = read_candidates(f, areas=AREAS, max_words=400, human_titles={"human"}, on_bad_row="exclude")
    assert got.ideas["text"].to_list() == ["A rule, with a comma."] and set(got.systems.values()) == {"sys-a"}
    assert got.exclusions.select("item", "field").rows() == [("3", "title")]


def test_idea_ids_come_from_the_title_so_an_edited_text_keeps_its_id_and_moves_its_digest(tmp_path: Path) -> None:
    a = read_candidates(_jsonl(tmp_path / "a.jsonl", [_idea("A", text="one")]), areas=AREAS, max_words=400)
    b = read_candidates(_jsonl(tmp_path / "b.jsonl", [_idea("A", text="two")]), areas=AREAS, max_words=400)
    assert a.ideas["idea_id"].to_list() == b.ideas["idea_id"].to_list()
    assert a.ideas["text_digest"].to_list() != b.ideas["text_digest"].to_list()


def test_add_copies_and_pins_the_file_and_keeps_params_comments(project: Path, run_main) -> None:
    src = _jsonl(project / "mine.jsonl", [_idea("A", area="optimization")])
    code, out, err = run_main("candidates", "add", str(src), "--name", "sys-a")
    assert code == 0, err
    dest = Path("data/candidates/sys-a.jsonl")
    assert dest.read_bytes() == src.read_bytes()
    entry = load_params().pools.candidates["sys-a"]
    assert entry == CandidateSet(path=dest.as_posix(), sha256=hashlib.sha256(dest.read_bytes()).hexdigest())
    assert "# Prefect flows" in Path("params.yaml").read_text()  # a round trip: comments elsewhere kept
    assert "sys-a" in out and "sys-a-vs-low" in out


def test_add_refuses_a_bad_row_with_exit_2_and_with_exclude_bad_counts_it(project: Path, run_main) -> None:
    src = _jsonl(project / "mine.jsonl", [_idea("A"), _idea("B", area="nowhere")])
    before = Path("params.yaml").read_bytes()
    code, out, err = run_main("candidates", "add", str(src), "--name", "sys-a")
    assert code == 2 and "line 2, field area: unknown area 'nowhere'" in err and "Traceback" not in err
    assert Path("params.yaml").read_bytes() == before and not Path("data/candidates/sys-a.jsonl").exists()
    code, out, err = run_main("candidates", "add", str(src), "--name", "sys-a", "--exclude-bad")
    assert code == 0 and "excluded 1 bad row(s)" in out and "line 2, field area" in out
    assert load_params().pools.candidates["sys-a"].on_bad_row == "exclude"


@pytest.mark.parametrize("name", ["Bad", "a b", "x\x07y", "-x", "a/b", "name-vs-low", "human-only-seed-3", "human-only"])
def test_a_set_name_that_is_not_a_safe_dataset_name_is_refused(project: Path, run_main, name: str) -> None:
    src = _jsonl(project / "mine.jsonl", [_idea("A")])
    code, _, err = run_main("candidates", "add", str(src), "--name", name)
    assert code == 2 and any(w in err for w in ("candidate set name", "names a pinned split", "control character"))


def test_params_name_the_candidate_datasets_and_refuse_an_unknown_head_to_head_set(project: Path) -> None:
    doc = yaml.safe_load(Path("params.yaml").read_text())
    doc["pools"]["candidates"] = {"a": {"path": "data/candidates/a.jsonl", "sha256": "0" * 64}}
    doc["pools"]["repair"] = {"dataset": "human-only", "seeds": [1, 2]}
    Path("params.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    names = load_params().pools.dataset_names()
    assert names[-4:] == ["a", "a-vs-low", "human-only-seed-1", "human-only-seed-2"]
    doc["pools"]["head_to_head"] = [["a", "b"]]
    Path("params.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(Exception, match="head_to_head: 'b' is not a candidate set"):
        load_params()
