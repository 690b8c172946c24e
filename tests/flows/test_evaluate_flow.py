"""The `evaluate` flow runs dvc.yaml's stages through the same function dvc does, so its artifacts
have dvc repro's digests; our manifests, not Prefect's cache, decide what is skipped."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml


def _stages(project: Path) -> list[str]:
    return list(yaml.safe_load((project / "dvc.yaml").read_text())["stages"])


@pytest.fixture
def tiny_copy(make_tiny_project_copy) -> Path:
    """The small project (tests/tiny_project.py): these tests run the pin stage, whose reuse does not depend on sizes."""
    return make_tiny_project_copy("project")


@pytest.mark.slow
def test_the_flow_reproduces_dvc_repro_digests_for_every_stage(dvc_and_flow):
    # dvc_and_flow (tests/flows/conftest.py): light projects, one run by `dvc repro`, one by the flow.
    summary = dvc_and_flow.flow_summary
    assert summary.totals()["failed"] == 0
    assert [s.stage for s in summary.stages] == _stages(dvc_and_flow.by_flow)
    assert dvc_and_flow.digests["flow"] == dvc_and_flow.digests["dvc"]
    # Both recorded one run in their ledgers, with equal content and therefore equal run ids.
    assert dvc_and_flow.run_ids["flow"] == dvc_and_flow.run_ids["dvc"] and len(dvc_and_flow.run_ids["flow"]) == 1


def test_a_stage_with_unchanged_identity_is_skipped_and_a_changed_one_recomputes(prefect_api, tiny_copy, caplog):
    import logging

    from prefect.cache_policies import NO_CACHE

    from flows.evaluate import evaluate, stage_task

    assert stage_task.cache_policy is NO_CACHE  # Prefect never decides reuse
    first = evaluate(project_dir=str(tiny_copy), stages=["pin"])
    assert [(s.stage, s.action) for s in first.stages] == [("pin", "computed")]
    pin_file = tiny_copy / "artifacts" / "pin" / "human-only" / "pairs.parquet"
    mtime = pin_file.stat().st_mtime_ns

    task_log = logging.getLogger("prefect.task_runs")  # Prefect's run loggers do not propagate to root
    task_log.addHandler(caplog.handler)
    try:
        second = evaluate(project_dir=str(tiny_copy), stages=["pin"])
    finally:
        task_log.removeHandler(caplog.handler)
    assert [(s.stage, s.action, s.identity) for s in second.stages] == [("pin", "reused", first.stages[0].identity)]
    assert second.stages[0].skipped and pin_file.stat().st_mtime_ns == mtime
    assert "pin: skipped, identity" in caplog.text

    # A params edit changes the identity: Prefect sees the same task and arguments, we recompute.
    params = yaml.safe_load((tiny_copy / "params.yaml").read_text())
    params["pin"]["on_bad_item"] = "exclude" if params["pin"].get("on_bad_item", "error") == "error" else "error"
    (tiny_copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    third = evaluate(project_dir=str(tiny_copy), stages=["pin"])
    assert third.stages[0].action == "computed" and third.stages[0].identity != first.stages[0].identity


def test_a_failing_stage_fails_the_flow_and_is_listed_in_the_summary(prefect_api, tiny_copy):
    from flows.evaluate import evaluate
    from novelty_audit.errors import PinMismatchError

    data = tiny_copy / "data" / "novelty-judge-bench" / "human-only" / "pairwise.yaml"
    data.write_text(data.read_text() + "\n# edited\n")
    state = evaluate(project_dir=str(tiny_copy), stages=["pin"], return_state=True)
    assert state.is_failed()
    with pytest.raises(PinMismatchError):
        state.result()
    assert not (tiny_copy / "artifacts" / "pin").exists()


def test_unknown_stage_names_are_refused(prefect_api, tiny_copy):
    from flows.evaluate import evaluate

    with pytest.raises(ValueError, match="not declared in dvc.yaml"):
        evaluate(project_dir=str(tiny_copy), stages=["pinn"])
