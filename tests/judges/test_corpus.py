"""The prior-work corpus loader: formats, HTML stripping, dates, and bad records reported, never dropped."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from novelty_audit.errors import BadInputError
from novelty_audit.judges.distance import CORPUS_SCHEMA, load_corpus, normalize_title, strip_html

REPO = Path(__file__).resolve().parents[2]


def _write_json(path: Path, records) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_html_is_stripped_with_entities_decoded_and_inline_tags_joined():
    assert strip_html("<p>Fast &amp; cheap <i>trans</i>formers</p><p>for &lt;text, audio&gt; pairs</p>") == (
        "Fast & cheap transformers for <text, audio> pairs"
    )
    # Text that only looks like markup is kept as data.
    assert strip_html("a < b and c & d") == "a < b and c & d"
    assert strip_html("line one<br>line\n\n two") == "line one line two"


def test_whitespace_is_normalized_exactly_as_idea_texts_are():
    from novelty_audit.datasets import normalize_text

    raw = "  Cafe\u0301 \t and\n\n  na\u00efve\u00a0text "
    assert strip_html(raw) == normalize_text(raw)


def test_titles_compare_casefolded_without_punctuation_or_html():
    assert normalize_title("  <b>BERT</b>: Pre-training of Deep   Transformers ") == normalize_title("bert pre training of deep transformers")


def test_a_json_list_becomes_the_canonical_table(tmp_path: Path):
    f = _write_json(tmp_path / "c.json", [
        {"key": "b2", "title": "Second <i>paper</i>", "abstract": "<p>About &amp; things.</p>", "year": "2021", "tags": ["x"]},
        {"key": "a1", "title": "First", "abstract": "Plain text.", "year": 2019},
    ])  # fmt: skip
    c = load_corpus(f)
    assert c.table.schema == pl.Schema(CORPUS_SCHEMA)
    assert c.table.to_dicts() == [
        {"doc_id": "a1", "title": "First", "abstract": "Plain text.", "year": 2019, "date": None},
        {"doc_id": "b2", "title": "Second paper", "abstract": "About & things.", "year": 2021, "date": None},
    ]
    assert c.exclusions.height == 0
    assert c.texts == ["First. Plain text.", "Second paper. About & things."]


def test_dates_give_the_year_and_are_kept_at_their_precision(tmp_path: Path):
    lines = [
        {"id": "x", "title": "T1", "abstract": "A1", "date": "2023-05-17"},
        {"id": "y", "title": "T2", "abstract": "A2", "date": "2024-02"},
        {"id": "z", "title": "T3", "abstract": "A3", "date": "2022", "year": 2022},
    ]
    f = tmp_path / "c.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    rows = {r["doc_id"]: (r["year"], r["date"]) for r in load_corpus(f).table.to_dicts()}
    assert rows == {"x": (2023, "2023-05-17"), "y": (2024, "2024-02"), "z": (2022, "2022")}


def test_every_bad_record_is_reported_with_file_record_and_field(tmp_path: Path):
    _write_json(tmp_path / "bad.json", [
        {"key": "ok", "title": "Good", "abstract": "Fine.", "year": 2020},
        {"key": "no-title", "abstract": "x", "year": 2020},
        {"key": "empty", "title": "T", "abstract": "<p>  </p>", "year": 2020},
        {"key": "bad-year", "title": "T", "abstract": "x", "year": "twenty"},
        {"key": "clash", "title": "T", "abstract": "x", "year": 2020, "date": "2019-01-01"},
        {"key": "bad-date", "title": "T", "abstract": "x", "date": "May 2020"},
        {"key": "undated", "title": "T", "abstract": "x"},
        {"title": "No id", "abstract": "x", "year": 2020},
        {"key": "ok", "title": "Again", "abstract": "x", "year": 2020},
        "not a record",
    ])  # fmt: skip
    j = tmp_path / "bad.jsonl"
    j.write_text('{"id": "fine", "title": "T", "abstract": "A", "year": 2020}\n{broken\n', encoding="utf-8")
    c = load_corpus(tmp_path, root=tmp_path)
    assert c.table["doc_id"].to_list() == ["fine", "ok"]
    got = {(e["file"], e["record"], e["field"]) for e in c.exclusions.to_dicts()}
    assert got == {
        ("bad.json", "record 1", "title"),
        ("bad.json", "record 2", "abstract"),
        ("bad.json", "record 3", "year"),
        ("bad.json", "record 4", "year"),
        ("bad.json", "record 5", "date"),
        ("bad.json", "record 6", "date"),
        ("bad.json", "record 7", "id"),
        ("bad.json", "record 8", "id"),
        ("bad.json", "record 9", "*"),
        ("bad.jsonl", "line 2", "*"),
    }
    dup = c.exclusions.filter(pl.col("record") == "record 8")["reason"][0]
    assert "duplicate id 'ok'" in dup and "bad.json record 0" in dup


def test_the_digest_depends_on_content_not_on_order_or_format(tmp_path: Path):
    recs = [{"id": f"d{i}", "title": f"T{i}", "abstract": f"A{i}", "year": 2000 + i} for i in range(5)]
    a = load_corpus(_write_json(tmp_path / "a.json", recs))
    pl.DataFrame(list(reversed(recs))).write_parquet(tmp_path / "b.parquet")
    b = load_corpus(tmp_path / "b.parquet")
    assert a.digest == b.digest
    recs[2]["abstract"] = "A2 edited"
    assert load_corpus(_write_json(tmp_path / "c.json", recs)).digest != a.digest


def test_a_mapping_of_id_to_record_is_accepted(tmp_path: Path):
    f = _write_json(tmp_path / "m.json", {"p1": {"title": "T", "abstract": "A", "year": 2020}})
    assert load_corpus(f).table["doc_id"].to_list() == ["p1"]


def test_a_directory_reads_only_corpus_files(tmp_path: Path):
    _write_json(tmp_path / "one.json", [{"key": "a", "title": "T", "abstract": "A", "year": 2020}])
    (tmp_path / "SOURCE.md").write_text("notes, not records")
    c = load_corpus(tmp_path, root=tmp_path)
    assert c.files == ("one.json",) and len(c) == 1


def test_unusable_inputs_fail_naming_the_path(tmp_path: Path):
    with pytest.raises(BadInputError, match="does not exist"):
        load_corpus(tmp_path / "missing.json")
    with pytest.raises(BadInputError, match="unsupported corpus format"):
        load_corpus(_write_json(tmp_path / "c.csv", []))
    with pytest.raises(BadInputError, match="no usable corpus record"):
        load_corpus(_write_json(tmp_path / "c.json", [{"key": "a"}]))


def test_the_shipped_corpus_loads_clean():
    c = load_corpus(REPO / "data" / "prior-work", root=REPO)
    assert len(c) == 3023 and c.exclusions.height == 0
    assert c.files == ("data/prior-work/llm-paper-abstracts.json",)
    assert not c.table.filter(pl.col("abstract").str.contains("<p>|</p>|&amp;|&lt;")).height
    assert c.table["year"].min() == 2009 and c.table["year"].max() == 2025


# -- degenerate corpora at the judge: a clear error naming corpus, judge and cutoff, never a numpy one --


def _dated(tmp_path: Path, years: list[int], name: str = "late.json") -> Path:
    return _write_json(tmp_path / name, [
        {"key": f"d{i}", "title": f"Paper {i} on graph networks", "abstract": f"Graph networks for molecules, study {i}.", "year": y}
        for i, y in enumerate(years)
    ])  # fmt: skip


@pytest.mark.parametrize("embedder", ["tfidf", "sentence-transformers"])
def test_a_corpus_entirely_after_the_cutoff_fails_naming_corpus_judge_and_cutoff(build, tmp_path: Path, embedder: str):
    corpus = _dated(tmp_path, [2026, 2026, 2027])
    with pytest.raises(BadInputError) as err:
        build("distance-yin", "yin-late", corpus=str(corpus), embedder=embedder, cutoff="2025-09-19")
    msg = str(err.value)
    assert "0 of 3 records are dated on or before 2025-09-19" in msg
    assert "judge yin-late" in msg and str(corpus) in msg
    assert "cutoff" in err.value.hint


def test_k_or_neighbours_beyond_the_admissible_corpus_is_a_config_error(build, tmp_path: Path):
    from novelty_audit.errors import ConfigError

    corpus = str(_dated(tmp_path, [2019, 2020, 2021, 2030]))
    with pytest.raises(ConfigError, match=r"args\.k: 4 is more than the 3 admissible record\(s\) \(dated on or before 2025-12-31\)"):
        build("distance-knn", corpus=corpus, embedder="tfidf", k=4, cutoff="2025")
    with pytest.raises(ConfigError, match=r"args\.neighbours: 9 is more than the 4 admissible"):
        build("distance-rnd", corpus=corpus, embedder="tfidf", k=2, neighbours=9)
    assert build("distance-knn", corpus=corpus, embedder="tfidf", k=3, cutoff="2025").config()["k"] == 3


def test_a_corpus_of_stop_words_fails_naming_the_judge_not_empty_vocabulary(build, tmp_path: Path):
    from novelty_audit.judges import Idea, PointItem

    corpus = _write_json(tmp_path / "stop.json", [{"key": f"s{i}", "title": "The", "abstract": "and of the", "year": 2020} for i in range(3)])
    judge = build("distance-yin", "yin-stop", corpus=str(corpus), embedder="tfidf")
    idea = Idea("i-1", "T", "Graph networks for molecules.", "0" * 64, "a")
    with pytest.raises(BadInputError, match="judge yin-stop: corpus .*stop.json: TF-IDF finds no usable term in its 3 admissible record"):
        judge.judge([], [PointItem("toy", idea, "POSITIVE")])


def test_a_corpus_with_no_usable_record_names_the_judge(build, tmp_path: Path):
    corpus = _write_json(tmp_path / "noabs.json", [{"key": "a", "title": "T", "year": 2020}, {"key": "b", "title": "U", "abstract": "", "year": 2020}])
    with pytest.raises(BadInputError, match=r"judge j: .*noabs.json: no usable corpus record \(2 excluded\)"):
        build("distance-yin", corpus=str(corpus), embedder="tfidf")


def test_records_without_abstract_are_recorded_exclusions_in_the_judges_facts(build, tmp_path: Path):
    from novelty_audit.judges import Idea, PointItem

    recs = [{"key": f"d{i}", "title": f"Graph paper {i}", "abstract": f"Graph networks study {i}.", "year": 2020} for i in range(3)]
    corpus = _write_json(tmp_path / "c.json", [*recs, {"key": "x", "title": "No abstract", "year": 2020}])
    judge = build("distance-yin", corpus=str(corpus), embedder="tfidf")
    out = judge.judge([], [PointItem("toy", Idea("i-1", "T", "Graph networks for molecules.", "0" * 64, "a"), "POSITIVE")])
    assert out.facts["corpus_docs"] == 3 and out.facts["corpus_excluded_records"] == 1
    got = [(Path(e["file"]).name, e["record"], e["field"], e["reason"]) for e in out.facts["corpus_exclusions"]]
    assert got == [("c.json", "record 3", "abstract", "missing")]


def test_a_damaged_parquet_corpus_fails_naming_the_file(tmp_path: Path):
    bad = tmp_path / "corpus.parquet"
    bad.write_bytes(b"PAR1 this is not parquet at all")
    with pytest.raises(BadInputError, match=r"corpus.parquet: not a readable Parquet file"):
        load_corpus(bad)
