"""An edit of one knob of a sweep's base judge: the audit between the two recorded runs calls the moved verdicts
`config` and names the knob (from the judges' config payloads in judges.parquet), with its values before and after;
the variants that set that knob themselves kept their config and have no change."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.audit import audit_project
from novelty_audit.pipeline import load_checked_params, record_run, run_stage

BASE = "mock-base"


def by_prompt_hash(body: dict, nth: int) -> str:
    """A or B from the digest of the exact prompt and how often it was asked (as tests/sweeps/test_sweep_run.py):
    another wording answers differently on some pairs, deterministically."""
    text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    label = "AB"[hashlib.sha256(f"{text}\n{nth}".encode()).digest()[0] % 2]
    return f'Both ideas are plausible.\n{{"answer": "{label}"}}'


def _configure(project: Path, mock: MockLLM, base_prompt: str) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {
        "datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "limit": 6,
        "judges": {BASE: {"backend": "openai", "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY",
                                                        "prompt": base_prompt, "votes": 1, "concurrency": 16}}},
        "sweeps": {"s": {"base": BASE, "mode": "one-at-a-time", "vary": {"prompt": ["p3-v1"], "votes": [3]}}},
    }  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def _judge_and_record() -> None:
    run_stage("judge")
    record_run(load_checked_params("params.yaml"))  # what the pipeline's last stage does after a run


def test_editing_a_knob_of_the_base_is_a_config_change_naming_that_knob(tiny: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-knob")
    run_stage("pin")
    with MockLLM(answer=by_prompt_hash) as mock:
        _configure(tiny, mock, "reference-v1")
        _judge_and_record()
        _configure(tiny, mock, "p5-v1")
        _judge_and_record()
    result, markdown = audit_project("params.yaml")
    changes = result.to_json()["changes"]
    assert changes, "the new wording must move some verdict (the mock answers by prompt hash)"
    assert {c["cause"] for c in changes} == {"config"}
    assert {c["judge"] for c in changes} <= {BASE, "s/votes=3"}  # s/prompt=p3-v1 sets its own prompt
    for c in changes:
        knobs = {k["name"]: (k["before"], k["after"]) for k in c["knobs"]}
        assert knobs["prompt"] == ("reference-v1", "p5-v1"), c["knobs"]
        assert set(knobs) - {"prompt", "prompt_digest"} == set(), knobs  # nothing else about the judge moved
    assert "- knobs: prompt: reference-v1 → p5-v1" in markdown, markdown[:2000]
