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

from novelty_audit.cli import main


def write(path: Path, rows: list[tuple[str, str]]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(orjson.dumps({"id": i, "verdict": v}).decode() + "\n" for i, v in rows))
    else:
        path.write_text("id,verdict\n" + "".join(f"{i},{v}\n" for i, v in rows))
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], capture_output=True, text=True)


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    cap = capsys.readouterr()
    return code, cap.out, cap.err


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


def test_flips_prints_a_readable_summary(golden, capsys):
    code, out, _ = run_main(capsys, "flips", str(golden["before"]), str(golden["after"]), "--gold", str(golden["gold"]))
    assert code == 0
    assert "accuracy 0.75 → 0.75" in out
    assert "2 flip(s) of 4 compared" in out


def test_mismatched_ids_are_an_error_without_traceback(tmp_path, golden):
    short = write(tmp_path / "short.csv", [("p1", "A"), ("p2", "B"), ("p3", "A")])
    r = cli("flips", str(short), str(golden["after"]))
    assert r.returncode != 0
    assert "only in AFTER" in r.stderr and "p4" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_report_mismatches_compares_the_common_ids_and_lists_the_rest(tmp_path, golden, capsys):
    short = write(tmp_path / "short.csv", [("p1", "A"), ("p2", "B"), ("p3", "A"), ("p9", "B")])
    code, out, err = run_main(capsys, "flips", str(short), str(golden["after"]), "--report-mismatches", "--json")
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
def test_bad_files_are_clear_errors(tmp_path, golden, capsys, rows, message):
    bad = write(tmp_path / "bad.csv", rows)
    code, out, err = run_main(capsys, "flips", str(bad), str(golden["after"]), "--gold", str(golden["gold"]))
    assert code != 0
    assert message in err
    assert "Traceback" not in err


def test_an_explicit_allowed_set_admits_other_verdicts(tmp_path, golden, capsys):
    other = write(tmp_path / "other.csv", [("p1", "A"), ("p2", "C"), ("p3", "A"), ("p4", "B")])
    code, out, err = run_main(capsys, "flips", str(other), str(golden["after"]), "--gold", str(golden["gold"]),
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


def test_golden_quality_case_reference_matching(tmp_path, capsys):
    ref = write(tmp_path / "ref.csv", REFERENCE)
    code, out, err = run_main(capsys, "quality", str(ref), "--reference", str(ref), "--repeat", str(ref), "--json")
    assert code == 0, err
    data = orjson.loads(out)
    assert (data["reference_accuracy"], data["answered_fraction"], data["stability"]) == (1.0, 1.0, 1.0)
    assert data["accuracy_on_answered"] == 1.0


def test_quality_counts_answers_where_the_reference_abstains_as_unsupported(tmp_path, capsys):
    ref = write(tmp_path / "ref.csv", REFERENCE)
    pred = write(tmp_path / "pred.csv", [("q1", "novel"), ("q2", "duplicate"), ("q3", "unknown"), ("q4", "novel")])
    code, out, err = run_main(capsys, "quality", str(pred), "--reference", str(ref), "--json")
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
