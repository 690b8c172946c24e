"""Run facts stay out of hashed artifacts: two fresh runs with identical answers publish identical bytes.

The judge stage runs against a deterministic mock server, the call cache is deleted, and the judge,
metrics and report stages run again (forced, so nothing is restored from the store) against a server
that answers the same but slower: every output file of the three stages has the same sha256.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import polars as pl
import yaml
from mock_llm import MockLLM

from novelty_audit.pipeline import run_stage

STAGES = ("judge", "metrics", "report")
# The latest audit is written next to the report from the runs ledger, outside the report's manifest.
NOT_HASHED = {"audit.md", "audit.json"}


def configure(project: Path, mock: MockLLM) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {
        "datasets": ["human-only", "human-plus-generated"],
        "progress": False,
        "judges": {
            "always-first": {"backend": "always-first"},
            "mock": {"backend": "openai", "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY",
                                                  "votes": 1, "concurrency": 32}},
        },
    }
    raw["metrics"] = {**raw.get("metrics", {}), "bootstrap_resamples": 200}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def digests(project: Path) -> dict[str, str]:
    """sha256 of every file the three stages wrote (artifacts and their published copies under reports/)."""
    roots = [project / "artifacts" / s for s in STAGES] + [project / "reports"]
    return {
        p.relative_to(project).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for root in roots for p in sorted(root.rglob("*")) if p.is_file() and p.name not in NOT_HASHED
    }


def some_answers_without_a_verdict(mock: MockLLM) -> None:
    # Some answers carry no verdict, so invalid counts and their notes take part in the comparison too.
    mock.add_rule("graph", "malformed")


def test_a_fresh_rerun_with_identical_answers_reproduces_every_artifact_byte_for_byte(tiny: Path, monkeypatch):
    project = tiny  # the small project: each split's first pairs, the shipped params otherwise
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-rerun")
    run_stage("pin")
    with MockLLM(latency=0.0) as mock:
        configure(project, mock)
        some_answers_without_a_verdict(mock)
        for s in STAGES:
            run_stage(s)
        first, first_calls = digests(project), mock.count
    v = pl.read_parquet(project / "artifacts/judge/verdicts.parquet").filter(pl.col("judge") == "mock")
    assert v["n_valid"].sum() > 0 and v["n_invalid"].sum() > 0, "the comparison should cover valid and invalid calls"
    assert "latency_s" not in v.columns

    shutil.rmtree(project / ".novelty-audit/cache/calls")
    shutil.rmtree(project / "artifacts/judge")
    # Same port, same answers, ten times slower: only run facts (latency, seconds) may differ.
    with MockLLM(latency=0.02, port=mock.port) as slow:
        some_answers_without_a_verdict(slow)
        for s in STAGES:
            run_stage(s, force=True)
        assert slow.count == first_calls, "the second run must ask every call again, not replay them"
    second = digests(project)
    assert any(k.startswith("artifacts/judge/") for k in first) and any(k.startswith("artifacts/report/") for k in first)
    changed = sorted(k for k in first.keys() | second.keys() if first.get(k) != second.get(k))
    assert not changed, f"files differ between two runs with identical answers: {changed}"
