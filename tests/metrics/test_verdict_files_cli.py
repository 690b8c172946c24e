"""Bring-your-own verdicts through the CLI: `novelty-audit flips` and `novelty-audit quality`.

The golden cases run the installed entry point in a subprocess; user errors must exit non-zero
with a message and no traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest



def write(path: Path, rows: list[tuple[str, str]]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(orjson.dumps({"id": i, "verdict": v}).decode() + "\n" for i, v in rows))
    else:
        path.write_text("id,verdict\n" + "".join(f"{i},{v}\n" for i, v in rows))
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], capture_output=True, text=True)




@pytest.fixture
def golden(tmp_path: Path) -> dict[str, Path]:
    return {
        "gold": write(tmp_path / "gold.csv", [("p1", "A"), ("p2", "A"), ("p3", "A"), ("p4", "A")]),
        "before": write(tmp_path / "before.csv", [("p1", "A"), ("p2", "A"), ("p3", "A"), ("p4", "B")]),
        # the same ids in another order, as JSONL
        "after": write(tmp_path / "after.jsonl", [("p4", "A"), ("p3", "A"), ("p2", "B"), ("p1", "A")]),
    }


def test_golden_flips_case_through_the_cli(golden):
    r = cli("flips", str(golden["before"]), str(golden["after"]), "--gold", str(golden["gold"]), "--json")
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout)
    assert (out["accuracy_before"], out["accuracy_after"]) == (0.75, 0.75)
    assert (out["flips"], out["compared"], out["flip_rate"]) == (2, 4, 0.5)
    assert out["only_before"] == [] and out["only_after"] == []


def test_flips_prints_a_readable_summary(golden, run_main):
    code, out, _ = run_main("flips", str(golden["before"]), str(golden["after"]), "--gold", str(golden["gold"]))
    assert code == 0
    assert "accuracy 0.75 → 0.75" in out
    assert "2 flip(s) of 4 compared" in out


def test_mismatched_ids_are_an_error_without_traceback(tmp_path, golden):
    short = write(tmp_path / "short.csv", [("p1", "A"), ("p2", "B"), ("p3", "A")])
    r = cli("flips", str(short), str(golden["after"]))
    assert r.returncode != 0
    assert "only in AFTER" in r.stderr and "p4" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_report_mismatches_compares_the_common_ids_and_lists_the_rest(tmp_path, golden, run_main):
    short = write(tmp_path / "short.csv", [("p1", "A"), ("p2", "B"), ("p3", "A"), ("p9", "B")])
    code, out, err = run_main("flips", str(short), str(golden["after"]), "--report-mismatches", "--json")
    assert code == 0, err
    data = orjson.loads(out)
    assert data["compared"] == 3 and data["flips"] == 0
    assert data["only_before"] == ["p9"] and data["only_after"] == ["p4"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([("p1", "A"), ("p1", "B")], "appears more than once"),
        ([], "no rows"),
        ([("p1", "A"), ("p2", "Aa"), ("p3", "A"), ("p4", "B")], "outside the allowed set"),
    ],
    ids=["duplicate-id", "empty", "unknown-verdict"],
)
def test_bad_files_are_clear_errors(tmp_path, golden, run_main, rows, message):
    bad = write(tmp_path / "bad.csv", rows)
    code, out, err = run_main("flips", str(bad), str(golden["after"]), "--gold", str(golden["gold"]))
    assert code != 0
    assert message in err
    assert "Traceback" not in err


def test_an_explicit_allowed_set_admits_other_verdicts(tmp_path, golden, run_main):
    other = write(tmp_path / "other.csv", [("p1", "A"), ("p2", "C"), ("p3", "A"), ("p4", "B")])
    code, out, err = run_main("flips", str(other), str(golden["after"]), "--gold", str(golden["gold"]),
                              "--allowed", "A,B,C,tie", "--json")
    assert code == 0, err
    assert orjson.loads(out)["accuracy_before"] == 0.5


REFERENCE = [("q1", "unknown"), ("q2", "duplicate"), ("q3", "neighborhood"), ("q4", "novel")]


def test_golden_quality_case_always_unknown_repeated(tmp_path):
    ref = write(tmp_path / "ref.csv", REFERENCE)
    pred = write(tmp_path / "pred.csv", [(i, "unknown") for i, _ in REFERENCE])
    rep = write(tmp_path / "repeat.jsonl", [(i, "unknown") for i, _ in reversed(REFERENCE)])
    r = cli("quality", str(pred), "--reference", str(ref), "--repeat", str(rep), "--abstain-label", "unknown", "--json")
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout)
    assert out["stability"] == 1.0
    assert out["reference_accuracy"] == 0.25
    assert out["answered_fraction"] == 0.0
    assert out["correct_abstention"] == 1.0 and out["unsupported_confident"] == 0.0
    assert out["accuracy_on_answered"] is None  # nothing answered


def test_golden_quality_case_reference_matching(tmp_path, run_main):
    ref = write(tmp_path / "ref.csv", REFERENCE)
    code, out, err = run_main("quality", str(ref), "--reference", str(ref), "--repeat", str(ref), "--json")
    assert code == 0, err
    data = orjson.loads(out)
    assert (data["reference_accuracy"], data["answered_fraction"], data["stability"]) == (1.0, 1.0, 1.0)
    assert data["accuracy_on_answered"] == 1.0


def test_quality_counts_answers_where_the_reference_abstains_as_unsupported(tmp_path, run_main):
    ref = write(tmp_path / "ref.csv", REFERENCE)
    pred = write(tmp_path / "pred.csv", [("q1", "novel"), ("q2", "duplicate"), ("q3", "unknown"), ("q4", "novel")])
    code, out, err = run_main("quality", str(pred), "--reference", str(ref), "--json")
    data = orjson.loads(out)
    assert data["unsupported_confident"] == 1.0 and data["correct_abstention"] == 0.0
    assert data["answered_fraction"] == pytest.approx(2 / 3)
    assert data["accuracy_on_answered"] == pytest.approx(2 / 3)
    assert data["stability"] is None


def test_quality_rejects_a_label_the_reference_does_not_use(tmp_path):
    ref = write(tmp_path / "ref.csv", REFERENCE)
    pred = write(tmp_path / "pred.csv", [("q1", "unknown"), ("q2", "dup"), ("q3", "unknown"), ("q4", "novel")])
    r = cli("quality", str(pred), "--reference", str(ref))
    assert r.returncode != 0
    assert "outside the allowed set" in r.stderr and "Traceback" not in r.stderr


# --- unusable files: one message naming the file (and line/field), exit 2, never a traceback -------------


def parquet_file(path: Path) -> Path:
    import polars as pl

    pl.DataFrame({"id": ["p1", "p2"], "verdict": ["A", "B"]}).write_parquet(path)
    return path


BAD_FILES = {
    # name: (file name, how to make it, words the message must hold)
    "parquet": ("verdicts.parquet", parquet_file, ["Parquet"]),
    "parquet-named-csv": ("verdicts.csv", lambda p: p.write_bytes(parquet_file(p.with_suffix(".pq")).read_bytes()) and p,
                          ["Parquet"]),
    "random-bytes-csv": ("noise.csv", lambda p: p.write_bytes(bytes(range(128, 256)) * 8) and p, ["not UTF-8"]),
    "nul-bytes-csv": ("nul.csv", lambda p: p.write_bytes(b"id,verdict\np1,A\x00\n") and p, ["line 2", "NUL"]),
    "directory": ("folder.csv", lambda p: p.mkdir() or p, ["directory"]),
    "directory-without-suffix": ("folder", lambda p: p.mkdir() or p, ["directory"]),
    "missing": ("absent.csv", lambda p: p, ["no such file"]),
    "empty": ("empty.csv", lambda p: p.write_bytes(b"") and p or p, ["empty"]),
    "blank-lines-only": ("blank.jsonl", lambda p: p.write_text("\n\n") and p, ["empty"]),
    "header-only": ("header.csv", lambda p: p.write_text("id,verdict\n") and p, ["no rows"]),
    "unbalanced-quote-at-end": ("quote.csv", lambda p: p.write_text('id,verdict\np1,A\np2,"B\np3,A\np4,A\n') and p,
                                ["line 3", "unbalanced quote"]),
    "unbalanced-quote-closed-later": ("quote2.csv",
                                      lambda p: p.write_text('id,verdict\np1,A\np2,"B\np3,A"\np4,A\n') and p,
                                      ["line 3", "field 'verdict'", "spans lines"]),
    "text-after-closing-quote": ("quote3.csv", lambda p: p.write_text('id,verdict\np1,"A"x\n') and p, ["line 2"]),
    "wrong-columns": ("cols.csv", lambda p: p.write_text("pair,label\np1,A\n") and p, ["line 1", "'id'", "'verdict'"]),
    "missing-verdict-column": ("cols2.csv", lambda p: p.write_text("id\np1\n") and p, ["'verdict'"]),
    "too-many-fields": ("wide.csv", lambda p: p.write_text("id,verdict\np1,A\np2,B,C\n") and p, ["line 3", "3 field(s)"]),
    "too-few-fields": ("narrow.csv", lambda p: p.write_text("id,verdict\np1,A\np2\n") and p, ["line 3", "1 field(s)"]),
    "duplicate-header": ("dup.csv", lambda p: p.write_text("id,verdict,id\np1,A,p1\n") and p, ["more than once"]),
    "duplicate-ids": ("dupid.csv", lambda p: p.write_text("id,verdict\np1,A\np2,B\n p1 ,A\n") and p,
                      ["line 4", "'p1'", "first at line 2"]),
    "empty-value": ("hole.csv", lambda p: p.write_text("id,verdict\np1,A\np2,\n") and p, ["line 3", "field 'verdict'"]),
    "jsonl-missing-field": ("miss.jsonl", lambda p: p.write_text('{"id": "p1", "verdict": "A"}\n{"id": "p2"}\n') and p,
                            ["line 2", "'verdict'"]),
    "jsonl-nested-value": ("nest.jsonl", lambda p: p.write_text('{"id": ["p1"], "verdict": "A"}\n') and p,
                           ["line 1", "field 'id'", "list"]),
    "jsonl-not-json": ("garbage.jsonl", lambda p: p.write_text('{"id": "p1", "verdict": "A"}\n{oops\n') and p,
                       ["line 2", "not valid JSON"]),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
@pytest.mark.parametrize("command", ["flips", "quality"])
def test_an_unusable_verdict_file_exits_2_naming_the_file(tmp_path, golden, run_main, case, command):
    name, make, words = BAD_FILES[case]
    bad = make(tmp_path / name)
    if command == "flips":
        args = ["flips", str(bad), str(golden["after"])]
    else:
        args = ["quality", str(golden["before"]), "--reference", str(bad)]
    code, out, err = run_main(*args)
    assert code == 2, (out, err)
    text = " ".join(err.split())  # rich wraps long lines
    assert name in text
    for word in words:
        assert word in text
    assert "Traceback" not in err + out


def test_a_row_after_an_unbalanced_quote_is_never_swallowed(tmp_path):
    """The old reader made `p2,"B` swallow p3 and p4 into p2's verdict; now the read stops with the line."""
    from novelty_audit.errors import BadInputError
    from novelty_audit.metrics import read_verdict_file

    path = tmp_path / "v.csv"
    path.write_text('id,verdict\np1,A\np2,"B\np3,A\np4,A\n')
    with pytest.raises(BadInputError, match="line 3"):
        read_verdict_file(path)


def test_quoted_values_and_a_byte_order_mark_are_read(tmp_path):
    from novelty_audit.metrics import read_verdict_file

    path = tmp_path / "v.csv"
    path.write_bytes('\ufeffid,verdict,note\n"p,1",A,"a, b"\np2,"B",\n\n'.encode())
    assert read_verdict_file(path) == {"p,1": "A", "p2": "B"}


def test_a_user_error_in_a_subprocess_prints_no_traceback(tmp_path, golden):
    noise = tmp_path / "noise.csv"
    noise.write_bytes(bytes(range(256)))
    r = cli("flips", str(noise), str(golden["after"]))
    assert r.returncode == 2
    assert "noise.csv" in r.stderr and "Traceback" not in r.stderr + r.stdout
