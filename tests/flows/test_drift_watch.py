"""The drift watch re-asks API judges on the canary with the call cache bypassed and tells
nondeterminism (`spurious`) from a moved provider snapshot (`provider`), without touching the main
pipeline's artifacts, ledger or call cache."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import pytest
import yaml
from mock_llm import MockLLM
from prefect_artifacts import latest_artifact

from novelty_audit.artifacts import Store, load_manifest
from novelty_audit.pipeline import run_stage


def _tree_digest(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def scripted():
    """A mock OpenAI-compatible server whose pairwise answer ("A" or "B") and reported model id the test sets."""
    state = {"choice": "A"}

    def answer(body, nth):
        return f'Brief reasoning.\n{{"answer": "{state["choice"]}"}}'

    with MockLLM(answer=answer) as mock:
        mock.state = state
        yield mock


@pytest.fixture
def drift_project(project_copy: Path, scripted: MockLLM) -> Path:
    """The project with one API judge pointed at the mock server, a 4-pair canary, and the pin stage run."""
    raw = yaml.safe_load((project_copy / "params.yaml").read_text())
    raw["judge"]["judges"]["mock-gpt"] = {
        "backend": "openai",
        "enabled": False,  # like the shipped API judges: the canary list turns it on for the watch
        "args": {"model": "gpt-x", "base_url": scripted.base_url, "api_key_env": None, "votes": 1, "orders": "forward"},
    }
    raw["judge"].setdefault("prices", {})["gpt-x"] = {"input_per_mtok": 0.15, "output_per_mtok": 0.6}
    raw["flows"] = {**(raw.get("flows") or {}), "canary": {"size": 4, "seed": 7, "judges": ["mock-gpt"]}}
    (project_copy / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with contextlib.chdir(project_copy):
        run_stage("pin")
    return project_copy


@pytest.mark.slow
def test_drift_watch_reports_spurious_provider_and_config_changes(prefect_api, drift_project, scripted):
    from flows.drift import drift_watch

    main_artifacts = _tree_digest(drift_project / "artifacts")
    main_ledger = Store(drift_project / ".novelty-audit").runs()

    first = drift_watch(project_dir=str(drift_project))
    assert first["baseline"] and first["changes"] == []
    canary = load_manifest(drift_project / ".novelty-audit" / "drift" / "artifacts" / "pin")
    n = sum(canary.summary["pairs"].values())
    assert n == 8  # 4 pairs from each of the two datasets
    asked = scripted.count
    assert asked > 0

    # Same model id, different answers: nondeterminism.
    scripted.state["choice"] = "B"
    second = drift_watch(project_dir=str(drift_project))
    assert scripted.count > asked, "the call cache must be bypassed"
    assert second["summary"]["spurious"] == n
    assert {c["cause"] for c in second["changes"]} == {"spurious"}
    assert not second["baseline"]

    # The provider moved its snapshot and the answers changed with it.
    scripted.reported_model = "gpt-x-2026-11-01"
    scripted.state["choice"] = "A"
    third = drift_watch(project_dir=str(drift_project))
    assert third["summary"]["provider"] == n and {c["cause"] for c in third["changes"]} == {"provider"}
    moved = {(d["before"], d["after"]) for c in third["changes"] for d in c["inputs"] if d["name"] == "provider_model"}
    assert moved == {("mock-gpt-x", "gpt-x-2026-11-01")}

    # Published: a summary and a table of the changes of the latest check.
    assert "provider | 8" in latest_artifact("drift-summary").data
    table = latest_artifact("drift-changes").data
    assert table.count('"provider"') == n

    # The user edits how the judge is asked: a config change, naming the knob.
    raw = yaml.safe_load((drift_project / "params.yaml").read_text())
    raw["judge"]["judges"]["mock-gpt"]["args"]["prompt"] = "p3-v1"
    (drift_project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    scripted.state["choice"] = "B"
    fourth = drift_watch(project_dir=str(drift_project))
    assert fourth["summary"]["config"] == n and {c["cause"] for c in fourth["changes"]} == {"config"}
    assert all(any(k["name"] == "prompt" for k in c["knobs"]) for c in fourth["changes"])

    # The main pipeline's outputs and ledger are untouched; the drift store has its own ledger.
    assert _tree_digest(drift_project / "artifacts") == main_artifacts
    assert Store(drift_project / ".novelty-audit").runs() == main_ledger
    assert len(Store(drift_project / ".novelty-audit" / "drift").runs()) == 4
    assert not (drift_project / ".novelty-audit" / "cache" / "calls").exists()


def test_the_drift_watch_without_an_api_judge_is_a_no_op_that_says_so(prefect_api, project_copy):
    from flows.drift import drift_watch

    # The shipped params enable no API judge: the scheduled watch must succeed, do nothing, and say why.
    state = drift_watch(project_dir=str(project_copy), return_state=True)
    assert state.is_completed(), state
    result = state.result()
    assert result["run_id"] is None and result["changes"] == []
    assert "no enabled API judge" in result["skipped"]
    assert "no enabled API judge" in latest_artifact("drift-summary").data
    assert not (project_copy / ".novelty-audit" / "drift").exists()  # no canary, no calls, no ledger


def test_a_misspelled_canary_judge_still_fails_the_drift_watch(prefect_api, project_copy):
    from flows.drift import drift_watch
    from novelty_audit.errors import ConfigError

    raw = yaml.safe_load((project_copy / "params.yaml").read_text())
    raw["flows"] = {**(raw.get("flows") or {}), "canary": {"judges": ["mock-gtp"]}}
    (project_copy / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError, match="unknown judge"):
        drift_watch(project_dir=str(project_copy))


@pytest.mark.slow
def test_a_pools_dataset_in_judge_datasets_is_watched_from_the_pools_stage_tables(prefect_api, light_project, scripted):
    import polars as pl

    from flows.drift import drift_watch
    from novelty_audit.artifacts import digest_file
    from novelty_audit.errors import ManifestMismatchError

    raw = yaml.safe_load((light_project / "params.yaml").read_text())
    raw["judge"]["judges"]["mock-gpt"] = {
        "backend": "openai", "enabled": False,
        "args": {"model": "gpt-x", "base_url": scripted.base_url, "api_key_env": None, "votes": 1, "orders": "forward"},
    }  # fmt: skip
    raw["judge"].setdefault("prices", {})["gpt-x"] = {"input_per_mtok": 0.15, "output_per_mtok": 0.6}
    raw["pools"]["repair"] = {"dataset": "human-only", "seeds": [1]}  # the pinned ideas re-paired: a pools dataset
    raw["judge"]["datasets"] = ["human-only", "human-only-seed-1"]
    raw["flows"] = {**(raw.get("flows") or {}), "canary": {"size": 4, "seed": 7, "judges": ["mock-gpt"]}}
    (light_project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with contextlib.chdir(light_project):
        for stage in ("pin", "signals", "pools"):
            run_stage(stage)
    built = light_project / "artifacts" / "pools" / "datasets" / "human-only-seed-1"
    drift = light_project / ".novelty-audit" / "drift"

    first = drift_watch(project_dir=str(light_project))
    assert first["baseline"]
    canary = load_manifest(drift / "artifacts" / "pin")
    assert canary.summary["pairs"] == {"human-only": 4, "human-only-seed-1": 4}
    assert canary.summary["pools_datasets"] == ["human-only-seed-1"]
    # Drawn from the pools stage's tables, every one of them in the canary's identity, kept in its layout.
    read = {r.sha256 for r in canary.inputs}
    assert all(digest_file(built / f"{t}.parquet") in read for t in ("ideas", "pairs", "pointwise", "exclusions"))
    drawn = set(pl.read_parquet(drift / "artifacts" / "pin" / "datasets" / "human-only-seed-1" / "pairs.parquet")["pair_id"])
    assert drawn <= set(pl.read_parquet(built / "pairs.parquet")["pair_id"])
    verdicts = pl.read_parquet(drift / "artifacts" / "judge" / "verdicts.parquet")
    assert set(verdicts.filter(pl.col("dataset") == "human-only-seed-1")["pair_id"]) == drawn  # the canary, not the whole set

    # A table the canary reads is checked against the pools stage's manifest: an edit by hand is refused, naming it.
    excl = pl.read_parquet(built / "exclusions.parquet")
    row = pl.DataFrame([{"dataset": "human-only-seed-1", "file": "x", "item": "y", "field": "area", "reason": "edited"}], schema=excl.schema)
    pl.concat([excl, row]).write_parquet(built / "exclusions.parquet")
    with pytest.raises(ManifestMismatchError, match="human-only-seed-1/exclusions.parquet: changed after stage pools"):
        drift_watch(project_dir=str(light_project))
    with contextlib.chdir(light_project):
        run_stage("pools")  # restores what its manifest records

    scripted.state["choice"] = "B"
    second = drift_watch(project_dir=str(light_project))
    assert load_manifest(drift / "artifacts" / "pin").identity == canary.identity
    changed = [c for c in second["changes"] if c["dataset"] == "human-only-seed-1"]
    assert second["summary"]["spurious"] == 8 and len(changed) == 4
    assert all(c["titles"] and all(c["titles"]) for c in changed)  # the audit finds the pools dataset's idea titles
    assert not (light_project / ".novelty-audit" / "cache" / "calls").exists()
