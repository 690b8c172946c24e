"""`novelty-audit adjudicate`: decisions are validated against the audited runs, bound to the change's evidence,
can cover a whole group, and refresh reports/audit.* at once. The file: every field bounded and checked, one lock
for every writer, formula-leading values stored inert, a damaged row named. Decisions counted per judge and exported
as a reference set for `quality`."""

from __future__ import annotations

import csv
import re
import threading
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pytest
from worlds import DocLedger, DocWorld, doc, write_params

from novelty_audit.artifacts import declared_stages, digest_file, published_records
from novelty_audit.audit import append_adjudication, audit_project, decisions_per_judge, load_adjudications
from novelty_audit.errors import BadInputError
from novelty_audit.metrics import read_verdict_file

ADJ = "data/adjudications.csv"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch):
    ledger = DocLedger(tmp_path)
    write_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    return ledger


def _arrival(world: DocWorld, title: str, doc_id: str) -> DocWorld:
    neighbours = {**world.neighbours, "i-a": [doc(doc_id, title, similarity=0.93, year=2024)]}
    return world.edit(neighbours=neighbours).with_verdict("judge-x", "p-ab", "i-b").with_verdict("judge-x", "p-ac", "i-c")


def _audit(run_main, *args: str) -> dict:
    code, out, err = run_main("audit", "--json", *args)
    assert code == 0, err
    return orjson.loads(out)


def _decide(run_main, *args: str):
    return run_main("adjudicate", *args, "--decision", "incorrect", "--who", "ana", "--reason", "a paraphrase is not prior work")


def test_a_decision_applies_only_to_the_evidence_it_was_made_on(project, run_main):
    before = DocWorld()
    first = project.record(before)
    project.record(_arrival(before, "Weather sonification", "n1"))
    code, out, err = _decide(run_main, "human-only", "judge-x", "p-ab", "--from", "i-a", "--to", "i-b")
    assert code == 0, err
    (row,) = load_adjudications(project.root / ADJ)
    assert row.bound and row.decision == "incorrect"
    change = next(c for c in _audit(run_main)["changes"] if c["pair"] == "p-ab")
    assert change["status"] == "incorrect"
    assert (row.evidence_before, row.evidence_after) == (change["evidence_digests"]["before"], change["evidence_digests"]["after"])
    # Another paper with another title causes the same flip on the same pair: undecided again.
    project.record(_arrival(before, "Radar songs", "n2"))
    again = next(c for c in _audit(run_main, "--from", first)["changes"] if c["pair"] == "p-ab")
    assert (again["before"], again["after"], again["status"]) == ("i-a", "i-b", "unadjudicated")
    assert again["evidence"]["decisive"][0]["title"] == "Radar songs"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("no-such-set", "judge-x", "p-ab", "--from", "i-a", "--to", "i-b"), "dataset 'no-such-set' is not in the audited runs"),
        (("human-only", "judge-z", "p-ab", "--from", "i-a", "--to", "i-b"), "judge 'judge-z' is not in the audited runs"),
        (("human-only", "judge-x", "p-zz", "--from", "i-a", "--to", "i-b"), "pair 'p-zz'"),
        (("human-only", "judge-x", "p-ab", "--from", "i-a", "--to", "i-a"), "is i-a → i-b, not i-a → i-a"),
        (("human-only", "judge-x", "p-cd", "--from", "i-c", "--to", "i-d"), "cause config; only evidence changes"),
    ],
)
def test_adjudicate_refuses_what_the_audit_does_not_show_exit_2_nothing_appended(project, run_main, args, message):
    before = DocWorld()
    project.record(before)
    after = _arrival(before, "Weather sonification", "n1")
    cfg = {**before.configs["judge-x"], "votes": 5}
    project.record(after.edit(configs={"judge-x": cfg}).with_verdict("judge-x", "p-cd", "i-d"))
    code, _, err = _decide(run_main, *args)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not (project.root / ADJ).exists()


def test_adjudicate_refuses_a_bad_decision_or_a_missing_name(project, run_main):
    before = DocWorld()
    project.record(before)
    project.record(_arrival(before, "Weather sonification", "n1"))
    key = ("human-only", "judge-x", "p-ab", "--from", "i-a", "--to", "i-b")
    code, _, err = run_main("adjudicate", *key, "--decision", "maybe", "--who", "ana")
    assert code == 2 and "not one of correct, incorrect, unclear" in err
    code, _, err = run_main("adjudicate", *key, "--decision", "correct")
    assert code == 2 and "--who is empty" in err
    assert not (project.root / ADJ).exists()


def test_a_group_is_decided_in_one_go_one_row_per_change_sharing_group_and_reason(project, run_main):
    before = DocWorld()
    project.record(before)
    project.record(_arrival(before, "Weather sonification", "n1"))
    (group,) = _audit(run_main)["groups"]
    assert len(group["changes"]) == 2
    code, out, err = run_main("adjudicate", "--group", group["id"], "--decision", "unclear", "--who", "bo", "--reason", "same paper")
    assert code == 0, err
    assert "appended 2 decision(s)" in out
    rows = load_adjudications(project.root / ADJ)
    assert [(r.pair, r.group, r.reason) for r in rows] == [("p-ab", group["id"], "same paper"), ("p-ac", group["id"], "same paper")]
    statuses = {c["pair"]: c["status"] for c in _audit(run_main)["changes"]}
    assert statuses == {"p-ab": "unclear", "p-ac": "unclear"}
    assert _audit(run_main, "--status", "unclear", "--group", group["id"])["hidden"] == 0
    code, _, err = run_main("adjudicate", "--group", "g-000000000000", "--decision", "unclear", "--who", "bo")
    assert code == 2 and "no such group" in err


def test_adjudicate_refreshes_the_published_audit_and_its_recorded_digest(project, run_main):
    before = DocWorld()
    project.record(before)
    project.record(_arrival(before, "Weather sonification", "n1"))
    reports = project.root / "reports"
    reports.mkdir()
    (reports / "audit.md").write_text("stale\n")
    (reports / "audit.json").write_text("{}\n")
    code, _, err = _decide(run_main, "human-only", "judge-x", "p-ab", "--from", "i-a", "--to", "i-b")
    assert code == 0, err
    md = (reports / "audit.md").read_text()
    assert "adjudicated **incorrect** by ana" in md
    doc_json = orjson.loads((reports / "audit.json").read_bytes())
    assert {c["pair"]: c["status"] for c in doc_json["changes"]} == {"p-ab": "incorrect", "p-ac": "unadjudicated"}
    recorded = published_records(project.root / "artifacts")["report"]
    assert recorded["reports/audit.md"]["sha256"] == digest_file(reports / "audit.md")
    # The decisions per judge, near the top of audit.md and in audit.json.
    assert md.index("## Decisions per judge") < md.index("## Changes")
    assert "| judge-x | 0 | 1 | 0 | 1 |" in md
    assert doc_json["decisions_per_judge"] == {"judge-x": {"correct": 0, "incorrect": 1, "unclear": 0, "open": 1}}


def _tree(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".novelty-audit" not in p.parts}


def test_a_decision_writes_no_file_dvc_tracks_so_dvc_status_stays_clean(project, run_main):
    """DVC compares the md5 of every dep and out in dvc.lock: a decision must change none of them. It writes the
    adjudication file, reports/audit.* and their publish records, none declared in the project's dvc.yaml."""
    before = DocWorld()
    project.record(before)
    project.record(_arrival(before, "Weather sonification", "n1"))
    reports = project.root / "reports"
    reports.mkdir()
    (reports / "audit.md").write_text("stale\n")
    (reports / "audit.json").write_text("{}\n")
    old = _tree(project.root)
    code, _, err = _decide(run_main, "human-only", "judge-x", "p-ab", "--from", "i-a", "--to", "i-b")
    assert code == 0, err
    new = _tree(project.root)
    written = sorted(p for p in new if old.get(p) != new[p])
    assert "data/adjudications.csv" in written and "reports/audit.md" in written
    declared = [p for stage in declared_stages(REPO / "dvc.yaml").values() for p in (*stage.deps, *stage.outs)]
    tracked = [(w, d) for w in written for d in declared if w == d.rstrip("/") or w.startswith(d.rstrip("/") + "/")]
    assert tracked == [], f"a decision rewrote files DVC tracks: {tracked}"


# ---- every field bounded and checked; the file stays readable ----------------------------------------------------

ROW = {"dataset": "human-only", "judge": "judge-x", "pair": "p-ab", "from": "i-a", "to": "i-b", "decision": "incorrect",
       "reason": "a paraphrase is not prior work", "who": "ana", "when": "2026-11-29T14:05:00+00:00",
       "evidence_before": "e" * 64, "evidence_after": "f" * 64, "group": ""}


def test_twenty_threads_appending_to_a_new_file_leave_one_header_and_every_row(tmp_path):
    for trial in range(10):
        path = tmp_path / f"trial-{trial}.csv"
        start = threading.Barrier(20)

        def append(i: int) -> None:
            start.wait(timeout=60)
            append_adjudication(path, {**ROW, "pair": f"p-{i:02d}"})

        threads = [threading.Thread(target=append, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        text = path.read_text()
        assert text.count("dataset,judge,pair") == 1, text
        assert sorted(r.pair for r in load_adjudications(path)) == [f"p-{i:02d}" for i in range(20)]


def test_a_reason_keeps_its_newlines_and_a_formula_lead_is_stored_inert_and_read_back_as_given(tmp_path):
    path = tmp_path / "adj.csv"
    given = {"reason": "=HYPERLINK(\"http://evil.example\")\nsecond line\n  indented", "who": "@ana"}
    append_adjudication(path, {**ROW, **given})
    append_adjudication(path, {**ROW, "reason": "-1 point: 'quoted' text", "who": "+bo"})
    append_adjudication(path, {**ROW, "reason": "'already quoted", "who": "cy", "pair": "p-cd"})
    append_adjudication(path, {**ROW, "reason": "windows\r\nline end", "who": "di", "pair": "p-ac"})
    cells = list(csv.reader(path.open(newline="")))[1:]
    # In the file no cell starts with a character a spreadsheet would run as a formula.
    assert [(c[6][:2], c[7][:2]) for c in cells] == [("'=", "'@"), ("'-", "'+"), ("''", "cy"), ("wi", "di")]
    rows = load_adjudications(path)
    assert [(r.reason, r.who) for r in rows] == [
        (given["reason"], "@ana"), ("-1 point: 'quoted' text", "+bo"), ("'already quoted", "cy"), ("windows\nline end", "di")]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("reason", "x" * 1_000_000, "field 'reason': 1000000 characters; at most 4000"),
        ("reason", "bad\x00byte", "U+0000"),
        ("reason", "pay \u202eevil", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("reason", "isolate \u2066x\u2069", "U+2066"),
        ("who", "ana\nbo", "U+000A"),
        ("who", "a" * 101, "field 'who': 101 characters; at most 100"),
        ("pair", "p-ab\x1b[31m", "U+001B"),
    ],
)
def test_an_oversized_field_or_a_control_character_is_refused_before_anything_is_written(tmp_path, field, value, message):
    path = tmp_path / "adj.csv"
    with pytest.raises(BadInputError, match=re.escape(message)):
        append_adjudication(path, {**ROW, field: value})
    assert not path.exists()


def test_a_damaged_file_is_an_error_naming_its_row_and_audit_exits_2_without_a_traceback(project, run_main):
    before = DocWorld()
    project.record(before)
    project.record(_arrival(before, "Weather sonification", "n1"))
    adj = project.root / ADJ
    adj.parent.mkdir(parents=True, exist_ok=True)
    header = ",".join(ROW)
    good = ",".join(ROW.values())
    # What an unbounded writer left behind: a 1 MB reason (over the CSV reader's field limit) in row 2.
    adj.write_text(f"{header}\n{good}\n" + good.replace(ROW["reason"], "y" * 1_000_000) + f"\n{good}\n")
    with pytest.raises(BadInputError, match=r"adj\w*\.csv: row 2 \(line 3\) cannot be read: field larger than field limit"):
        load_adjudications(adj)
    code, _, err = run_main("audit")
    assert code == 2 and "row 2 (line 3)" in err and "Traceback" not in err
    # A row that reads but breaks a rule names its row, field and the line it starts on.
    adj.write_text(f"{header}\n{good}\n" + good.replace("ana", "an\u202ea") + "\n")
    code, _, err = run_main("audit")
    assert code == 2 and "row 2, field 'who': character U+202E" in err and "line 3" in err


def test_a_decision_records_its_time_to_the_second(project, run_main):
    before = DocWorld()
    project.record(before)
    project.record(_arrival(before, "Weather sonification", "n1"))
    code, _, err = _decide(run_main, "human-only", "judge-x", "p-ab", "--from", "i-a", "--to", "i-b")
    assert code == 0, err
    (row,) = load_adjudications(project.root / ADJ)
    when = datetime.fromisoformat(row.when)
    assert when.tzinfo is not None and abs((datetime.now(timezone.utc) - when).total_seconds()) < 600


# ---- decisions lead somewhere: counts per judge, and a reference set for `quality` --------------------------------

def _three_decisions(project, run_main) -> DocWorld:
    """judge-x flips p-ab, p-ac (one paper arriving) and p-cd (an edit of Delta); decided correct, incorrect, unclear."""
    before = DocWorld()
    project.record(before)
    after = _arrival(before, "Weather sonification", "n1")
    after = after.edit(texts={**after.texts, "i-d": "text of Delta, now with its method"}).with_verdict("judge-x", "p-cd", "i-d")
    project.record(after)
    for pair, src, dst, decision in (("p-ab", "i-a", "i-b", "correct"), ("p-ac", "tie", "i-c", "incorrect"),
                                     ("p-cd", "i-c", "i-d", "unclear")):
        code, _, err = run_main("adjudicate", "human-only", "judge-x", pair, "--from", src, "--to", dst, "--decision", decision,
                                "--who", "ana", "--reason", f"=reason for {pair}")
        assert code == 0, err
    return after


def test_decisions_per_judge_count_correct_incorrect_unclear_and_open(project, run_main):
    _three_decisions(project, run_main)
    result = audit_project("params.yaml").result
    assert decisions_per_judge(result) == {"judge-x": {"correct": 1, "incorrect": 1, "unclear": 1, "open": 0}}
    code, _, err = run_main("adjudicate", "human-only", "judge-x", "p-ab", "--from", "i-a", "--to", "i-b",
                            "--decision", "incorrect", "--who", "bo")
    assert code == 0, err
    assert decisions_per_judge(audit_project("params.yaml").result)["judge-x"] == {"correct": 0, "incorrect": 2, "unclear": 1, "open": 0}


def test_export_adjudications_round_trips_through_quality_reference(project, run_main):
    _three_decisions(project, run_main)
    code, out, err = run_main("export", "adjudications", "--out", "reference.jsonl", "--json")
    assert code == 0, err
    summary = orjson.loads(out)
    assert (summary["rows"], summary["judges"], summary["open"], summary["excluded"]) == (3, ["judge-x"], 0, [])
    ref = project.root / "reference.jsonl"
    assert summary["sha256"] == digest_file(ref)
    # correct → the verdict after the change; incorrect → the verdict before it; unclear → quality's abstain label.
    assert read_verdict_file(ref) == {"human-only/p-ab": "i-b", "human-only/p-ac": "tie", "human-only/p-cd": "unknown"}
    rows = {r["id"]: r for r in map(orjson.loads, ref.read_bytes().splitlines())}
    ab = rows["human-only/p-ab"]
    assert (ab["decision"], ab["reason"], ab["who"], ab["judge"], ab["from"], ab["to"]) == (
        "correct", "=reason for p-ab", "ana", "judge-x", "i-a", "i-b")
    assert datetime.fromisoformat(ab["when"]).tzinfo is not None
    assert ab["evidence"]["decisive"][0]["title"] == "Weather sonification" and ab["evidence"]["docs"]
    assert set(ab["evidence_digests"]) == {"before", "after"} and all(ab["evidence_digests"].values())
    assert [(i["id"], i["text"]) for i in ab["ideas"]] == [("i-a", "text of Alpha"), ("i-b", "text of Beta")]
    edited = next(i for i in rows["human-only/p-cd"]["ideas"] if i["id"] == "i-d")
    assert (edited["text_before"], edited["text"]) == ("text of Delta", "text of Delta, now with its method")

    # The judge's own verdicts, scored against the reference: p-ab agrees, p-ac does not, p-cd is answered where
    # the reference abstains.
    code, _, err = run_main("export", "verdicts", "--judge", "judge-x", "--out", "judge-x.csv")
    assert code == 0, err
    code, out, err = run_main("quality", "judge-x.csv", "--reference", "reference.jsonl", "--report-mismatches", "--json")
    assert code == 0, err
    q = orjson.loads(out)
    assert (q["n"], q["reference_accuracy"], q["n_reference_abstain"], q["unsupported_confident"]) == (3, 1 / 3, 1, 1.0)


def test_export_adjudications_refuses_csv_and_an_empty_set_with_exit_2(project, run_main):
    before = DocWorld()
    project.record(before)
    project.record(_arrival(before, "Weather sonification", "n1"))
    code, _, err = run_main("export", "adjudications", "--out", "ref.csv")
    assert code == 2 and "JSONL" in err
    code, _, err = run_main("export", "adjudications")
    assert code == 2 and "no decided evidence change" in err and "Traceback" not in err
