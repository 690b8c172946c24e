"""The `evaluate` flow runs dvc.yaml's stages through the same function dvc does, so its artifacts
have dvc repro's digests; our manifests, not Prefect's cache, decide what is skipped."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from novelty_audit.artifacts import Store, load_manifest


def sh(*cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a command in `cwd` with DVC analytics off; never raises on a non-zero exit."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800, check=False)


def _stages(project: Path) -> list[str]:
    return list(yaml.safe_load((project / "dvc.yaml").read_text())["stages"])


def _digests(project: Path) -> dict[str, tuple[str, str, dict[str, str]]]:
    out = {}
    for name in _stages(project):
        m = load_manifest(project / "artifacts" / name)
        out[name] = (m.identity, m.digest(), {r.path: r.sha256 for r in m.outputs})
    return out


@pytest.mark.slow
def test_the_flow_reproduces_dvc_repro_digests_for_every_stage(prefect_api, make_light_project):
    from flows.evaluate import evaluate

    by_dvc, by_flow = make_light_project("dvc"), make_light_project("flow")
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"]):
        res = sh(*cmd, cwd=by_dvc)
        assert res.returncode == 0, res.stderr
    res = sh("dvc", "repro", cwd=by_dvc)
    assert res.returncode == 0, res.stdout + res.stderr

    summary = evaluate(project_dir=str(by_flow))

    assert summary.totals()["failed"] == 0
    assert [s.stage for s in summary.stages] == _stages(by_flow)
    assert _digests(by_flow) == _digests(by_dvc)
    # Both recorded one run in their ledgers, with equal content and therefore equal run ids.
    dvc_runs = Store(by_dvc / ".novelty-audit").runs()
    flow_runs = Store(by_flow / ".novelty-audit").runs()
    assert [r.run_id for r in flow_runs] == [r.run_id for r in dvc_runs] and len(flow_runs) == 1


def test_a_stage_with_unchanged_identity_is_skipped_and_a_changed_one_recomputes(prefect_api, project_copy, caplog):
    import logging

    from prefect.cache_policies import NO_CACHE

    from flows.evaluate import evaluate, stage_task

    assert stage_task.cache_policy is NO_CACHE  # Prefect never decides reuse
    first = evaluate(project_dir=str(project_copy), stages=["pin"])
    assert [(s.stage, s.action) for s in first.stages] == [("pin", "computed")]
    pin_file = project_copy / "artifacts" / "pin" / "human-only" / "pairs.parquet"
    mtime = pin_file.stat().st_mtime_ns

    task_log = logging.getLogger("prefect.task_runs")  # Prefect's run loggers do not propagate to root
    task_log.addHandler(caplog.handler)
    try:
        second = evaluate(project_dir=str(project_copy), stages=["pin"])
    finally:
        task_log.removeHandler(caplog.handler)
    assert [(s.stage, s.action, s.identity) for s in second.stages] == [("pin", "reused", first.stages[0].identity)]
    assert second.stages[0].skipped and pin_file.stat().st_mtime_ns == mtime
    assert "pin: skipped, identity" in caplog.text

    # A params edit changes the identity: Prefect sees the same task and arguments, we recompute.
    params = yaml.safe_load((project_copy / "params.yaml").read_text())
    params["pin"]["on_bad_item"] = "exclude" if params["pin"].get("on_bad_item", "error") == "error" else "error"
    (project_copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    third = evaluate(project_dir=str(project_copy), stages=["pin"])
    assert third.stages[0].action == "computed" and third.stages[0].identity != first.stages[0].identity


def test_a_failing_stage_fails_the_flow_and_is_listed_in_the_summary(prefect_api, project_copy):
    from flows.evaluate import evaluate
    from novelty_audit.errors import PinMismatchError

    data = project_copy / "data" / "novelty-judge-bench" / "human-only" / "pairwise.yaml"
    data.write_text(data.read_text() + "\n# edited\n")
    state = evaluate(project_dir=str(project_copy), stages=["pin"], return_state=True)
    assert state.is_failed()
    with pytest.raises(PinMismatchError):
        state.result()
    assert not (project_copy / "artifacts" / "pin").exists()


def test_unknown_stage_names_are_refused(prefect_api, project_copy):
    from flows.evaluate import evaluate

    with pytest.raises(ValueError, match="not declared in dvc.yaml"):
        evaluate(project_dir=str(project_copy), stages=["pinn"])
