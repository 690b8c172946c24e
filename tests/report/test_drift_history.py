"""The drift watch's history per judge is published beside the report (reports/drift.md, drift.json), read from the
drift ledger, and never part of the report's identity."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/synthetic_runs.py

from synthetic_runs import Ledger, World  # noqa: E402

from novelty_audit.artifacts import Store  # noqa: E402
from novelty_audit.params import Params  # noqa: E402
from novelty_audit.report import write_drift_history  # noqa: E402


def _drift_ledger(root: Path) -> Ledger:
    """Runs recorded where the drift watch records them: <store.root>/<flows.drift_dir>."""
    ledger = Ledger(root)
    ledger.store = Store(root / ".novelty-audit" / "drift")
    return ledger


def test_each_drift_check_lists_the_changed_verdicts_of_each_judge_by_cause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    ledger = _drift_ledger(tmp_path)
    ledger.record(World())
    ledger.record(World().with_verdict("judge-x", "p-cd", "tie"))  # same inputs, another answer: spurious
    write_drift_history(Params(pin={"datasets": {}}), tmp_path / "reports", judges=["judge-x", "judge-y"])
    history = orjson.loads((tmp_path / "reports" / "drift.json").read_bytes())
    [check] = history["checks"]
    assert check["changed"] == {"judge-x": {"spurious": 1, "provider": 0, "config": 0, "evidence": 0, "harness": 0, "dataset": 0}}
    md = (tmp_path / "reports" / "drift.md").read_text()
    # The report's judge cards link drift.md#<judge>.
    assert '<a id="judge-x"></a>' in md and "| 1 | spurious 1 |" in md
    assert "## judge-y\n\nNot re-asked by any drift check listed here." in md


def test_without_two_drift_runs_there_is_nothing_to_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    write_drift_history(Params(pin={"datasets": {}}), tmp_path / "reports", judges=["judge-x"])
    assert orjson.loads((tmp_path / "reports" / "drift.json").read_bytes())["checks"] == []
    assert "nothing to compare" in (tmp_path / "reports" / "drift.md").read_text()
