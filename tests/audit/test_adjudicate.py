"""`novelty-audit adjudicate`: decisions are validated against the audited runs, bound to the change's evidence,
can cover a whole group, and refresh reports/audit.* at once."""

from __future__ import annotations

import orjson
import pytest
from worlds import DocLedger, DocWorld, doc, write_params

from novelty_audit.artifacts import digest_file, published_records
from novelty_audit.audit import load_adjudications

ADJ = "data/adjudications.csv"


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
