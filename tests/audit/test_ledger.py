"""The runs ledger holds one record per distinct run (with every time it was recorded); the audit compares
the last two distinct runs, and a RUN selector that names several runs is an error listing them."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
from synthetic_runs import World

from novelty_audit.audit import CURRENT, audit, audit_since_last_run, latest_other_run
from novelty_audit.errors import NoveltyAuditError
from novelty_audit.params import load_params

PARAMS = """
store: {root: .novelty-audit, artifacts: artifacts}
pin: {datasets: {}}
audit: {adjudications: data/adjudications.csv}
"""


def _git_repo(path: Path) -> str:
    """A git repository with one commit at `path`; returns HEAD."""
    path.mkdir(parents=True, exist_ok=True)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
    for cmd in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "c"]):
        res = subprocess.run(["git", *cmd], cwd=path, capture_output=True, text=True, env={**env, "PATH": "/usr/bin:/bin"})
        assert res.returncode == 0, res.stderr
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, check=True).stdout.strip()


def _lines(ledger) -> list[dict]:
    return [orjson.loads(x) for x in (ledger.store.root / "runs.jsonl").read_bytes().splitlines() if x.strip()]


def test_recording_the_same_content_again_adds_an_occurrence_not_a_record(ledger):
    a = ledger.record(World())
    b = ledger.record(World().with_verdict("judge-x", "p-cd", "tie"))
    assert ledger.record(World()) == a  # back to A's content (a revert): the same run, seen again
    assert ledger.record(World()) == a
    runs = ledger.store.runs()
    assert [r.run_id for r in runs] == [b, a]  # one record per distinct run; A is the latest
    assert [len(r.seen) for r in runs] == [1, 3]
    assert runs[1].time == runs[1].seen[-1].time
    lines = _lines(ledger)
    assert [x["run_id"] for x in lines] == [b, a] and len(lines[1]["seen"]) == 3  # the file itself, not only reads


def test_the_default_audit_compares_the_last_two_distinct_runs(ledger):
    a = ledger.record(World())
    b = ledger.record(World().with_verdict("judge-x", "p-cd", "tie"))
    ledger.record(World().with_verdict("judge-x", "p-cd", "tie"))  # B again: never compared with itself
    res = audit(ledger.store)
    assert (res.from_run, res.to_run) == (a, b)
    assert [c.pair for c in res.changes] == ["p-cd"]


def test_a_ledger_with_repeated_lines_is_read_as_distinct_runs_and_merged_on_the_next_record(ledger):
    a = ledger.record(World())
    b = ledger.record(World().with_verdict("judge-x", "p-cd", "tie"))
    # A ledger written before records were merged: one line per recording (A, B, A, A).
    path = ledger.store.root / "runs.jsonl"
    one = {x["run_id"]: {k: v for k, v in x.items() if k != "seen"} for x in _lines(ledger)}
    path.write_bytes(b"".join(orjson.dumps({**one[r], "time": t}) + b"\n" for r, t in [(a, "t1"), (b, "t2"), (a, "t3"), (a, "t4")]))
    runs = ledger.store.runs()
    assert [(r.run_id, [o.time for o in r.seen]) for r in runs] == [(b, ["t2"]), (a, ["t1", "t3", "t4"])]
    assert (audit(ledger.store).from_run, audit(ledger.store).to_run) == (b, a)
    ledger.record(World().with_verdict("judge-x", "p-cd", "tie"))
    assert [(x["run_id"], len(x["seen"])) for x in _lines(ledger)] == [(a, 3), (b, 2)]


def test_concurrent_recorders_lose_no_run_and_no_occurrence(ledger):
    worlds = [World().with_verdict("judge-x", "p-cd", v) for v in ("i-c", "i-d", "tie", "abstain")]
    manifests = [ledger.write(w) for w in worlds]
    barrier = threading.Barrier(12)
    errors: list[BaseException] = []

    def record(i: int) -> None:
        try:
            barrier.wait(timeout=60)
            ledger.store.record_run(manifests[i % len(manifests)])
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    runs = ledger.store.runs()
    assert len(runs) == 4 and sorted(len(r.seen) for r in runs) == [3, 3, 3, 3]


def test_a_git_revision_with_several_runs_is_an_error_listing_them(ledger, tmp_path):
    head = _git_repo(tmp_path / "repo")
    a = ledger.store.record_run(ledger.write(World()), cwd=tmp_path / "repo").run_id
    b = ledger.store.record_run(ledger.write(World().with_verdict("judge-x", "p-cd", "tie")), cwd=tmp_path / "repo").run_id
    with pytest.raises(NoveltyAuditError, match="matches 2 runs") as err:
        audit(ledger.store, head[:10], b)
    assert a in str(err.value) and b in str(err.value)
    # A run id (or an unambiguous prefix) still names exactly one run.
    assert audit(ledger.store, a[:6], b[:6]).changes[0].pair == "p-cd"


def test_the_cli_refuses_an_ambiguous_run_with_exit_2_listing_the_runs(ledger, tmp_path):
    repo = ledger.root
    head = _git_repo(repo)
    (repo / "params.yaml").write_text(PARAMS)
    a = ledger.store.record_run(ledger.write(World()), cwd=repo).run_id
    b = ledger.store.record_run(ledger.write(World().with_verdict("judge-x", "p-cd", "tie")), cwd=repo).run_id
    res = subprocess.run(
        [sys.executable, "-m", "novelty_audit.cli", "audit", "--from", head[:8], "--to", b], cwd=repo, capture_output=True, text=True
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert "matches 2 runs" in res.stderr and a in res.stderr and b in res.stderr
    assert "Traceback" not in res.stderr


def test_the_published_audit_is_the_same_whether_or_not_the_current_outputs_are_recorded(ledger):
    (ledger.root / "params.yaml").write_text(PARAMS)
    a = ledger.record(World())
    ledger.write(World().with_verdict("judge-x", "p-cd", "tie"))
    params = load_params(ledger.root / "params.yaml").model_copy(deep=True)
    store_root, artifacts = str(ledger.store.root), str(ledger.root / "artifacts")
    params = params.model_copy(update={"store": params.store.model_copy(update={"root": store_root, "artifacts": artifacts})})

    before = audit_since_last_run(params)  # what the report stage writes under dvc, before the run is recorded
    b = ledger.store.record_run(ledger.write(World().with_verdict("judge-x", "p-cd", "tie"))).run_id
    after = audit_since_last_run(params)  # a flow (or dvc repro -f) running the report again on the recorded run
    assert before is not None and after is not None
    assert before.result.to_json() == after.result.to_json()
    assert (after.result.from_run, after.result.to_run) == (a, CURRENT)
    assert latest_other_run(ledger.store, artifacts).run_id == a != b
