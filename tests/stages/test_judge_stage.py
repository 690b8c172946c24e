"""The judge stage end to end on the pinned benchmark: coverage, controls, replay, secrets, kill and resume."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.judges import TIE
from novelty_audit.params import load_params

KEY = "sk-test-SECRET123"
CONTROLS = {name: {"backend": name} for name in ("always-first", "always-second", "random", "abstain")}


def set_judges(project: Path, judges: dict, **section) -> None:
    """Replace the judge section of the project's params.yaml (the repository's may list judges whose data is not copied)."""
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {"datasets": ["human-only", "human-plus-generated"], "progress": False, "judges": judges, **section}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def run(name: str, force: bool = False):
    from novelty_audit.pipeline import run_stage

    return run_stage(name, force=force)


def mock_judge(mock: MockLLM, **args) -> dict:
    return {
        "backend": "openai",
        "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "concurrency": 16, **args},
    }


@pytest.fixture(scope="module")
def pinned_template(tmp_path_factory) -> Path:
    """A project whose pin stage ran once, for the module: each `pinned` test gets a copy (outputs, manifest and
    store) instead of pinning the benchmark again."""
    from project_copy import make_project

    root = make_project(tmp_path_factory.mktemp("pinned") / "project")
    with contextlib.chdir(root):
        run("pin")
    return root


@pytest.fixture
def pinned(pinned_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of `pinned_template`, made the cwd."""
    root = tmp_path / "project"
    shutil.copytree(pinned_template, root)
    monkeypatch.chdir(root)
    return root


def test_controls_judge_every_pair_of_both_splits_and_always_first_ties_all(pinned):
    set_judges(pinned, CONTROLS)
    m = run("judge")
    v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")
    per = v.group_by("dataset", "judge").len()
    assert per.height == 8 and set(per["len"]) == {154}
    assert v.filter(pl.col("judge") == "always-first")["verdict"].to_list() == [TIE] * 308
    assert v.filter(pl.col("judge") == "abstain")["verdict"].unique().to_list() == ["none"]
    assert v.select(["dataset", "judge", "pair_id"]).is_duplicated().sum() == 0
    p = pl.read_parquet(pinned / "artifacts/judge/pointwise.parquet")
    assert p.group_by("dataset").len().sort("dataset")["len"].to_list() == [299 * 4, 308 * 4]
    judges = pl.read_parquet(pinned / "artifacts/judge/judges.parquet")
    assert judges["judge"].to_list() == sorted(CONTROLS)
    assert m.summary["always-first"]["human-only"]["ties"] == 154


def test_the_api_judge_replays_from_its_cache_byte_for_byte_and_never_writes_the_key(pinned, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)
    with MockLLM() as mock:
        set_judges(pinned, {"always-first": {"backend": "always-first"}, "mock": mock_judge(mock)}, tasks=["pairwise"])
        run("judge")
        first_calls = mock.count
        before = (pinned / "artifacts/judge/verdicts.parquet").read_bytes()
        run("judge", force=True)
        assert mock.count == first_calls  # zero calls on rerun
        assert (pinned / "artifacts/judge/verdicts.parquet").read_bytes() == before
    v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet").filter(pl.col("judge") == "mock")
    assert v.height == 308 and v["n_valid"].to_list() == [2] * 308
    calls = list((pinned / ".novelty-audit/cache/calls").rglob("*.json"))
    assert first_calls == len(calls) <= 616  # pairs shared by both splits are asked once
    for p in pinned.rglob("*"):
        if p.is_file() and p.suffix in {".json", ".jsonl", ".parquet", ".yaml", ".log", ".txt", ""}:
            assert KEY.encode() not in p.read_bytes(), p


def test_a_killed_run_repeats_no_completed_call(pinned, monkeypatch):
    env = {**os.environ, "MOCK_API_KEY": KEY}
    with MockLLM(latency=0.05) as mock:
        set_judges(pinned, {"mock": mock_judge(mock, concurrency=4)}, tasks=["pairwise"])
        proc = subprocess.Popen([sys.executable, "-m", "novelty_audit.cli", "stage", "judge"], cwd=pinned, env=env)
        cache = pinned / ".novelty-audit/cache/calls"
        deadline = time.time() + 60
        while time.time() < deadline and len(list(cache.rglob("*.json"))) < 40:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done = len(list(cache.rglob("*.json")))
        assert 40 <= done < 600, "the run should have been killed midway"
        mock.reset()
        monkeypatch.setenv("MOCK_API_KEY", KEY)
        # concurrency is not part of a call's key: the resumed run may go faster and still reuse every answer
        set_judges(pinned, {"mock": mock_judge(mock, concurrency=32)}, tasks=["pairwise"])
        run("judge")
        total = len(list(cache.rglob("*.json")))
        assert mock.count == total - done
    assert pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet").height == 308


def test_an_unknown_dataset_is_a_clear_error(pinned):
    from novelty_audit.errors import BadInputError

    set_judges(pinned, CONTROLS)
    raw = yaml.safe_load((pinned / "params.yaml").read_text())
    raw["judge"]["datasets"] = ["human-only", "human-plus-generatd"]
    (pinned / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(BadInputError, match="human-plus-generatd"):
        run("judge")


def test_the_shipped_params_run_offline_judges_only():
    spec = load_params(Path(__file__).resolve().parents[2] / "params.yaml").judge
    enabled = {n: s.backend for n, s in spec.judges.items() if s.enabled}
    assert {"always-first", "always-second", "random", "abstain"} <= set(enabled)
    assert not {"openai", "anthropic"} & set(enabled.values())


def cli(*args: str, cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, **(env or {})}, timeout=timeout,
    )  # fmt: skip


def _manifest(project: Path):
    from novelty_audit.artifacts import load_manifest

    return load_manifest(project / "artifacts/judge")


def test_failed_calls_publish_incomplete_outputs_exit_3_and_the_next_run_asks_only_them(pinned):
    ideas = pl.read_parquet(pinned / "artifacts/pin/human-only/ideas.parquet")
    pairs = pl.read_parquet(pinned / "artifacts/pin/human-only/pairs.parquet").sort("pair_id")
    texts = dict(zip(ideas["idea_id"], ideas["text"]))
    doomed = [texts[i][:80] for i in pairs["idea_0"].to_list()[::20]]  # every prompt holding one of these ideas fails
    env = {"MOCK_API_KEY": KEY}
    with MockLLM() as mock:
        for snippet in doomed:
            mock.add_rule(snippet, "500")
        set_judges(pinned, {"mock": mock_judge(mock, max_retries=0)}, datasets=["human-only"], tasks=["pairwise"])
        first = cli("stage", "judge", cwd=pinned, env=env)
        assert first.returncode == 3, first.stdout + first.stderr
        assert "Traceback" not in first.stderr
        v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")
        failed = int(v["n_error"].sum())
        assert 0.05 * 308 <= failed <= 0.5 * 308, failed
        assert f"judge: {failed} calls failed: HTTP 500" in first.stderr
        m = _manifest(pinned)
        assert m.complete is False and m.incomplete_reason == f"{failed} calls failed: HTTP 500"
        checked = cli("verify", cwd=pinned)  # other declared stages never ran: only the judge's files matter here
        assert "BAD artifacts/judge" not in checked.stderr and "stage judge: published outputs are incomplete" in checked.stdout

        mock.reset()  # the server is healthy again
        second = cli("stage", "judge", cwd=pinned, env=env)
        assert second.returncode == 0, second.stderr
        assert mock.count == failed, "exactly the failed calls are asked again"
        v = pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")
        assert v["n_error"].sum() == 0 and v.height == 154
        assert _manifest(pinned).complete is True

        third = cli("stage", "judge", cwd=pinned, env=env)
        assert third.returncode == 0 and mock.count == failed, "a complete run is reused: no call"


def test_on_error_record_exits_0_with_the_errors_counted_and_the_next_run_still_completes(pinned):
    env = {"MOCK_API_KEY": KEY}
    with MockLLM() as mock:
        mock.add_rule("Idea A", "500")  # every pairwise prompt
        set_judges(pinned, {"mock": mock_judge(mock, max_retries=0)}, datasets=["human-only"], tasks=["pairwise"], on_error="record")
        first = cli("stage", "judge", cwd=pinned, env=env)
        assert first.returncode == 0, first.stderr
        assert "incomplete: 308 calls failed: HTTP 500" in first.stderr
        assert pl.read_parquet(pinned / "artifacts/judge/verdicts.parquet")["n_error"].sum() == 308
        mock.reset()
        assert cli("stage", "judge", cwd=pinned, env=env).returncode == 0
        assert mock.count == 308 and _manifest(pinned).complete is True


def test_sigterm_ends_the_judge_stage_like_ctrl_c_without_leftover_temp_dirs(pinned):
    env = {**os.environ, "MOCK_API_KEY": KEY}
    with MockLLM(latency=0.3) as mock:
        set_judges(pinned, {"mock": mock_judge(mock, concurrency=2)}, datasets=["human-only"], tasks=["pairwise"])
        proc = subprocess.Popen(
            [sys.executable, "-m", "novelty_audit.cli", "stage", "judge"], cwd=pinned, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.time() + 120
        while time.time() < deadline and mock.count < 4:
            time.sleep(0.05)
        assert mock.count >= 4, "the stage never started calling"
        assert list((pinned / "artifacts").glob(".judge.*")), "the run writes into a temp dir while it runs"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert not list((pinned / "artifacts").glob(".judge.*"))
    assert not (pinned / "artifacts/judge").exists()


def test_an_import_judge_whose_votes_file_is_not_a_dvc_dep_is_refused_naming_the_line_to_add(pinned):
    from novelty_audit.errors import ConfigError

    votes = pinned / "votes" / "mine.csv"
    votes.parent.mkdir()
    votes.write_text("dataset,pair_id,vote\n")
    set_judges(pinned, {"mine": {"backend": "import", "args": {"path": "votes/mine.csv", "on_missing": "none"}}}, datasets=["human-only"])
    with pytest.raises(ConfigError, match="stage judge: 1 input.* votes/mine.csv") as exc:
        run("judge")
    assert "      - votes/mine.csv" in exc.value.hint and "dvc.yaml" in exc.value.hint
    assert not (pinned / "artifacts/judge").exists()
    dvc = pinned / "dvc.yaml"
    dvc.write_text(dvc.read_text().replace("      - data/prior-work\n", "      - data/prior-work\n      - votes\n", 1))
    first = run("judge")
    pair = pl.read_parquet(pinned / "artifacts/pin/human-only/pairs.parquet")["pair_id"][0]
    votes.write_text(f"dataset,pair_id,vote\nhuman-only,{pair},0\n")  # swapped in place
    assert run("judge").identity != first.identity, "the votes file is in the identity (and now a DVC dep)"
