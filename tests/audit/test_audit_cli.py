"""`novelty-audit audit`: JSON in the documented shape, Markdown for people, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from synthetic_runs import World

PARAMS = """
store: {root: .novelty-audit, artifacts: artifacts}
pin: {datasets: {}}
audit: {adjudications: data/adjudications.csv}
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True)


def test_audit_json_has_the_documented_shape_and_reads_the_adjudication_file(ledger):
    (ledger.root / "params.yaml").write_text(PARAMS)
    before = World()
    ledger.record(before)
    ledger.record(before.edit(texts={**before.texts, "i-c": "new"}).with_verdict("judge-x", "p-cd", "i-d"))
    added = cli("adjudicate", "human-only", "judge-x", "p-cd", "--from", "i-c", "--to", "i-d", "--decision", "correct",
                "--who", "ana", "--reason", "the edit added the key idea", cwd=ledger.root)
    assert added.returncode == 0, added.stderr
    header = (ledger.root / "data/adjudications.csv").read_text().splitlines()[0]
    assert header == "dataset,judge,pair,from,to,decision,reason,who,when,evidence_before,evidence_after,group"
    res = cli("audit", "--json", cwd=ledger.root)
    assert res.returncode == 0, res.stderr
    doc = orjson.loads(res.stdout)
    assert list(doc) == ["changes", "compared", "corpus", "filters", "from", "groups", "hidden", "membership", "not_judged", "subsets",
                         "summary", "to"]
    assert doc["summary"]["evidence"] == 1
    (change,) = doc["changes"]
    assert change["titles"] == ["Gamma", "Delta"]
    assert (change["before"], change["after"], change["cause"], change["status"]) == ("i-c", "i-d", "evidence", "correct")
    assert change["inputs"][0]["name"] == "idea_0_text"
    md = cli("audit", "--markdown", cwd=ledger.root)
    assert md.returncode == 0 and "| evidence | 1 |" in md.stdout and "p-cd" in md.stdout


def test_audit_without_two_runs_is_one_message_without_traceback(ledger):
    (ledger.root / "params.yaml").write_text(PARAMS)
    res = cli("audit", cwd=ledger.root)
    assert res.returncode == 2
    assert "holds 0 run(s)" in res.stderr and "Traceback" not in res.stderr


def test_adjudicate_refuses_an_unknown_decision_without_traceback(ledger):
    (ledger.root / "params.yaml").write_text(PARAMS)
    res = cli("adjudicate", "human-only", "judge-x", "p-cd", "--from", "i-c", "--to", "i-d", "--decision", "maybe",
              "--who", "ana", cwd=ledger.root)
    assert res.returncode == 2
    assert "not one of correct, incorrect, unclear" in res.stderr and "Traceback" not in res.stderr
    assert not (ledger.root / "data/adjudications.csv").exists()
