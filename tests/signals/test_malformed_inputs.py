"""Malformed review inputs are clear errors naming file, record and field — never a traceback.

Covers OpenReview dumps whose replies carry wrongly typed fields, unreadable files of each signals input,
and the generated-pool JSONL of the pools stage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from novelty_audit.config import PinnedFile
from novelty_audit.errors import BadInputError
from novelty_audit.pools import generated_from_jsonl
from novelty_audit.signals import (
    SignalsParams,
    build_signals,
    check_file_pin,
    load_review_sentences,
    parse_markdown_reviews,
    parse_openreview_dump,
)

FIXTURE = Path(__file__).parent / "fixtures" / "openreview_v2_iclr2026.json"


def dump(tmp_path: Path, edit) -> Path:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    edit(data["notes"])
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def reply(notes, i: int = 0, j: int = 1) -> dict:
    return notes[i]["details"]["replies"][j]


@pytest.mark.parametrize(
    ("field", "value"),
    [("invitations", 7), ("invitations", [None]), ("signatures", True), ("signatures", [{"id": "x"}])],
)
def test_a_reply_with_a_wrongly_typed_field_is_a_named_problem(tmp_path: Path, field: str, value) -> None:
    def edit(notes):
        reply(notes)[field] = value

    papers, problems = parse_openreview_dump(dump(tmp_path, edit), label="dump.json")
    rid = reply(json.loads(FIXTURE.read_text())["notes"])["id"]
    (p,) = problems
    assert (p.file, p.record, p.field, p.action) == ("dump.json", rid, field, "review-excluded")
    assert len(papers) == 9  # the other papers are unaffected

    with pytest.raises(BadInputError) as err:  # and the stage stops on it by default
        build_signals(SignalsParams(benchmark_datasets=[]), files={"markdown": [], "openreview": [tmp_path / "dump.json"]},
                      benchmark={}, cache_root=tmp_path / "c", root=tmp_path)
    assert f"dump.json: record {rid}, field {field}" in str(err.value)


@pytest.mark.parametrize(
    ("content", "field"),
    [(b"\xff\xfe\x00garbage", "encoding"), (b'{"notes": [', "json"), (b"[" * 100_000 + b"]" * 100_000, "json"),
     (b'{"notes": 3}', "notes")],
    ids=["binary", "truncated", "too-deep", "notes-not-a-list"],
)
def test_an_unreadable_openreview_dump_excludes_it_naming_the_field(tmp_path: Path, content: bytes, field: str) -> None:
    path = tmp_path / "dump.json"
    path.write_bytes(content)
    papers, problems = parse_openreview_dump(path, label="dump.json")
    assert papers == []
    assert [(p.file, p.record, p.field, p.action) for p in problems] == [("dump.json", "file", field, "paper-excluded")]


@pytest.mark.parametrize(
    ("content", "field"),
    [(b"", "title"), (b"\x89PNG\r\n\x1a\n\x00\x00", "encoding"), (b"# Title only\n", "reviews")],
    ids=["empty", "binary", "no-reviews"],
)
def test_an_unusable_markdown_review_file_is_a_named_problem(tmp_path: Path, content: bytes, field: str) -> None:
    path = tmp_path / "paper.md"
    path.write_bytes(content)
    paper, problems = parse_markdown_reviews(path, label="paper.md")
    assert paper is None
    assert problems[-1].file == "paper.md" and problems[-1].field == field and problems[-1].drops_data


def test_a_pinned_path_that_is_a_directory_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "reviews.md").mkdir()
    with pytest.raises(BadInputError, match=r"signals.markdown\[0\]: reviews.md is a directory"):
        check_file_pin("signals.markdown[0]", PinnedFile(path="reviews.md", sha256="0" * 64), tmp_path)


@pytest.mark.parametrize(
    ("novelty", "message"),
    [(b"\xff\xfe", "novelty.json: not UTF-8"), (b"{", "novelty.json: not valid JSON"),
     (b'{"a": 1}', "novelty.json: expected a JSON list of records, found dict"),
     (b'[["a sentence", "OTHER"]]', "novelty.json: record 0")],
)
def test_bad_review_sentence_files_name_the_file(tmp_path: Path, novelty: bytes, message: str) -> None:
    (tmp_path / "novelty.json").write_bytes(novelty)
    (tmp_path / "other.json").write_text('[{"text": "fine", "labels": []}]')
    with pytest.raises(BadInputError) as err:
        load_review_sentences(tmp_path / "novelty.json", tmp_path / "other.json")
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\xff\xfe\x00", "gen.jsonl: not UTF-8"), (b'["area", "title"]\n', "gen.jsonl: line 1: expected a JSON object"),
     (b'{"area": "rl", "title": "T", "text": "x"}\n{"area"\n', "gen.jsonl: line 2: not valid JSON")],
)
def test_bad_generated_pool_files_name_file_and_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "gen.jsonl"
    path.write_bytes(content)
    with pytest.raises(BadInputError) as err:
        generated_from_jsonl(path, 200)
    assert message in str(err.value)
