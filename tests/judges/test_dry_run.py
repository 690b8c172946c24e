"""`novelty-audit stage judge --dry-run`: per judge (sweep variants included) the calls a run would make, how many
the call cache holds and the estimated cost; it sends nothing, writes nothing, and its count is the real run's."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from mock_llm import MockLLM

from novelty_audit.pipeline import run_stage

BASE = "mock-api"
VARIANTS = ["votes/votes=1", "votes/prompt=p3-v1"]
LIMIT = 3


def configure(project: Path, mock: MockLLM, **judge: object) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {
        "datasets": ["human-only"],
        "tasks": ["pairwise"],
        "progress": False,
        "limit": LIMIT,
        "judges": {
            BASE: {"backend": "openai", "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY",
                                                 "votes": 2, "concurrency": 4}},
            "first": {"backend": "always-first"},
        },
        "sweeps": {"votes": {"base": BASE, "mode": "one-at-a-time", "vary": {"votes": [1], "prompt": ["p3-v1"]}}},
        **judge,
    }
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts}


def dry(run_main, *extra: str) -> tuple[int, dict, str]:
    """The dry run's (exit code, JSON report, stderr); it must leave the project's files as they were (no
    artifact, no stage lock, no budget state, no cache entry)."""
    root = Path.cwd()
    before = files(root)
    code, out, err = run_main("stage", "judge", "--dry-run", "--json", *extra)
    assert files(root) == before
    return code, (json.loads(out) if out.strip() else {}), err


def test_dry_run_sends_nothing_and_counts_the_calls_the_real_run_sends_then_finds_them_cached(pinned_tiny, run_main):
    root, mock = pinned_tiny
    configure(root, mock)
    code, report, err = dry(run_main)
    assert code == 0, err
    assert mock.count == 0
    assert sorted(report) == sorted([BASE, "first", *VARIANTS])
    # votes × orders × items: the base asks 2 × 2 × 3, votes=1 reuses its vote-0 calls, p3 asks its own 12.
    assert report[BASE]["calls"] == 2 * 2 * LIMIT and report["votes/votes=1"]["calls"] == 2 * LIMIT
    assert report["votes/prompt=p3-v1"]["calls"] == 2 * 2 * LIMIT
    assert report["first"] == {"items": LIMIT, "api_calls": False, "calls": 0, "cached": 0, "to_send": 0, "usd_estimate": 0.0}
    assert all(r["cached"] == 0 and r["to_send"] == r["calls"] for r in report.values())
    distinct = report[BASE]["calls"] + report["votes/prompt=p3-v1"]["calls"]  # votes=1's calls are the base's

    run_stage("judge")
    assert mock.count == distinct

    mock.reset()
    code, again, err = dry(run_main)
    assert code == 0, err
    assert mock.count == 0
    for name in (BASE, *VARIANTS):
        assert again[name]["calls"] == report[name]["calls"]
        assert again[name]["cached"] == report[name]["calls"] and again[name]["to_send"] == 0


def test_dry_run_says_the_estimate_exceeds_the_budget_and_exits_2_before_sending(pinned_tiny, run_main):
    root, mock = pinned_tiny
    configure(root, mock, budget_usd=0.0001, prices={"mock": {"input_per_mtok": 1.0, "output_per_mtok": 4.0}})
    code, report, err = dry(run_main)
    assert code == 2, err
    assert "judge.budget_usd" in err and "$0.0001" in err, err
    assert report[BASE]["usd_estimate"] > 0
    assert mock.count == 0


def test_dry_run_text_names_each_judge_and_says_the_cost_is_an_estimate(pinned_tiny, run_main):
    root, mock = pinned_tiny
    configure(root, mock, prices={"mock": {"input_per_mtok": 1.0, "output_per_mtok": 4.0}})  # unpriced: test_unknown_price.py
    code, out, err = run_main("stage", "judge", "--dry-run")
    assert code == 0, err
    assert "first: 3 items, no API calls" in out
    assert f"{BASE}: 3 items, 12 calls, 0 cached, 12 to send, estimated" in out
    assert "total: 24 distinct calls to send" in out and "worst case" in out
    assert mock.count == 0


def test_dry_run_on_another_stage_is_a_usage_error(pinned_tiny, run_main):
    code, _, err = run_main("stage", "pin", "--dry-run")
    assert code == 2 and "judge stage only" in err


def test_dry_run_before_the_pin_stage_names_the_missing_table_and_exits_2(tiny: Path, run_main):
    code, out, err = run_main("stage", "judge", "--dry-run")
    assert code == 2, out + err
    assert "run the pin stage first" in err and "Traceback" not in err
