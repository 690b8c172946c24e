"""The judge stage asks the judges of one endpoint (a sweep's variants) together, in one fan-out: the same
verdicts as judging them one by one, the endpoint's bound on requests in flight kept, each judge's run facts
saying how many judges shared its fan-out."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import yaml

from novelty_audit.judges import _run
from novelty_audit.pipeline import run_stage

BASE = "mock-base"


def by_prompt(body: dict, nth: int) -> str:
    """A or B from the prompt alone: whoever asks it, in whatever order, gets the same answer."""
    text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    return '{"answer": "%s"}' % "AB"[hashlib.sha256(text.encode()).digest()[0] % 2]


def configure(project: Path, url: str) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {
        "datasets": ["human-only"], "tasks": ["pairwise", "pointwise"], "progress": False, "limit": 6,
        "judges": {BASE: {"backend": "openai", "args": {"model": "mock", "base_url": url, "api_key_env": "MOCK_API_KEY", "votes": 2, "concurrency": 3, "pointwise_prompt": "reference-v1"}},
                   "first": {"backend": "always-first"}},
        "sweeps": {"s": {"base": BASE, "mode": "one-at-a-time", "vary": {"prompt": ["p3-v1"], "votes": [1]}}},
    }  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def judge_facts(project: Path) -> dict:
    lines = (project / ".novelty-audit" / "runlog.jsonl").read_text().splitlines()
    rec = [json.loads(x) for x in lines if json.loads(x).get("stage") == "judge"][-1]
    return {k: v for k, v in rec.items() if isinstance(v, dict) and "calls" in v}


def test_the_judges_of_one_endpoint_are_asked_together_with_the_verdicts_of_one_by_one(pinned_tiny, monkeypatch):
    root, mock = pinned_tiny
    mock.answer = by_prompt
    mock.latency = 0.02
    configure(Path(root), mock.base_url)
    run_stage("judge")
    together = {name: (Path(root) / "artifacts/judge" / name).read_bytes() for name in ("verdicts.parquet", "pointwise.parquet")}
    facts = judge_facts(Path(root))
    assert {k: f.get("asked_together") for k, f in facts.items()} == {BASE: 3, "s/prompt=p3-v1": 3, "s/votes=1": 3}
    assert mock.max_inflight <= 3, "three judges in one fan-out, never more requests in flight than one judge's bound"
    sent = mock.count
    assert sent == sum(f["calls"] for f in facts.values()), "a call two judges share (votes=1 is vote 0 of the base) is sent once"

    shutil.rmtree(Path(root) / ".novelty-audit" / "cache" / "calls")
    monkeypatch.setattr(_run, "_asked_together", lambda *args: {})  # one judge after the other, as before
    run_stage("judge", force=True)
    assert {name: (Path(root) / "artifacts/judge" / name).read_bytes() for name in together} == together
    assert mock.count == 2 * sent
