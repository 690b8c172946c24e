"""A flow run and DVC never drift apart: after any `evaluate` run `dvc status` is clean and `dvc repro` runs
nothing, the flow writes reports/audit.* exactly as the report stage under dvc does, and the runs ledger holds
one record per distinct run."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml
from dvc_run import ok

from novelty_audit.artifacts import Store

pytestmark = pytest.mark.slow

AUDIT = ("reports/audit.md", "reports/audit.json")


def assert_dvc_in_step(project: Path) -> None:
    """`dvc status` reports nothing, and `dvc repro` runs no stage."""
    status = ok("dvc", "status", "--json", cwd=project)
    assert orjson.loads(status or "{}") == {}, status
    repro = ok("dvc", "repro", cwd=project)
    assert "Running stage" not in repro, repro


def audit_bytes(project: Path) -> dict[str, bytes]:
    return {rel: (project / rel).read_bytes() for rel in AUDIT}


def test_flow_runs_keep_dvc_lock_the_audit_and_the_ledger_in_step_with_dvc_repro(dvc_and_flow):
    from flows.evaluate import evaluate

    # dvc_and_flow.by_dvc: a light project just run by `dvc repro` (tests/flows/conftest.py); this test is the
    # only one that changes it.
    project = dvc_and_flow.by_dvc
    by_dvc = audit_bytes(project)
    ledger = Store(project / ".novelty-audit")
    (first,) = ledger.runs()

    # 1. A flow run on the up-to-date project: every stage reused, nothing for DVC to redo.
    summary = evaluate(project_dir=str(project))
    assert {s.action for s in summary.stages} == {"reused"}
    assert audit_bytes(project) == by_dvc
    assert_dvc_in_step(project)
    (again,) = ledger.runs()  # the same run, seen twice: not a second record
    assert again.run_id == first.run_id and len(again.seen) == 2

    # 2. A flow run that computes: a report param changes, only the report stage reruns. The flow records the
    #    stages in dvc.lock, so dvc has nothing to do either.
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["report"]["nearest_pairs"] = raw["report"]["nearest_pairs"] + 1
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    summary = evaluate(project_dir=str(project))
    assert [s.stage for s in summary.stages if s.action == "computed"] == ["report"]
    assert_dvc_in_step(project)
    runs = ledger.runs()
    assert [r.run_id for r in runs][0] == first.run_id and len(runs) == 2
    by_flow = audit_bytes(project)
    audit = orjson.loads(by_flow["reports/audit.json"])
    assert (audit["from"], audit["to"]) == (first.run_id, "current")

    # 3. The report stage run again by dvc writes the same audit, and records no new run.
    ok("dvc", "repro", "--force", "--single-item", "report", cwd=project)
    assert audit_bytes(project) == by_flow
    assert [r.run_id for r in ledger.runs()] == [r.run_id for r in runs]
    assert_dvc_in_step(project)


def test_a_flow_run_on_a_fresh_dvc_project_leaves_dvc_nothing_to_do(dvc_and_flow):
    # dvc_and_flow.by_flow: a fresh light git + DVC project just run by the flow (tests/flows/conftest.py).
    project, summary = dvc_and_flow.by_flow, dvc_and_flow.flow_summary
    assert summary.totals()["failed"] == 0 and summary.totals()["computed"] == len(summary.stages)
    assert_dvc_in_step(project)
    assert len(Store(project / ".novelty-audit").runs()) == 1


def test_without_dvc_the_flow_says_it_left_dvc_lock_alone(prefect_api, make_tiny_project_copy, caplog):
    import logging

    from flows.evaluate import evaluate

    project_copy = make_tiny_project_copy("project")
    flow_log = logging.getLogger("prefect.flow_runs")  # Prefect's run loggers do not propagate to root
    flow_log.addHandler(caplog.handler)
    try:
        evaluate(project_dir=str(project_copy), stages=["pin"])
    finally:
        flow_log.removeHandler(caplog.handler)
    assert "dvc.lock not updated" in caplog.text and "not a DVC repository" in caplog.text
    assert not (project_copy / "dvc.lock").exists()
