"""A disk that fills up (or turns read-only) under a run: one message naming the path and what to free, exit 4,
no traceback, nothing half-written; the rerun pays only the calls whose answers were not kept.

The full disk is simulated in the stage's own process by tests/llm/full_disk/sitecustomize.py (os.write fails
with ENOSPC under one directory after N writes), so no root mount is needed."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml
from mock_llm import MockLLM
from test_llm_stage_faults import KEY, pinned, set_api_judge  # noqa: F401  (pinned: a fixture)

from novelty_audit.errors import StorageError, storage_error

pytestmark = pytest.mark.slow  # runs stages: seconds each

FULL_DISK = str(Path(__file__).resolve().parents[1] / "llm" / "full_disk")


def stage(project: Path, name: str, **full: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCK_API_KEY": KEY}
    if full:
        env["PYTHONPATH"] = os.pathsep.join([FULL_DISK, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env.update({f"NOVELTY_TEST_FULL_{k.upper()}": v for k, v in full.items()})
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", "stage", name], cwd=project, capture_output=True, text=True, env=env, timeout=600)


def test_a_disk_that_fills_up_while_judging_stops_the_run_with_one_message_and_the_rerun_pays_only_what_is_missing(pinned):
    calls = pinned / ".novelty-audit" / "cache" / "calls"
    with MockLLM(latency=0.01) as mock:
        set_api_judge(pinned, mock.base_url, concurrency=8)
        raw = yaml.safe_load((pinned / "params.yaml").read_text())
        raw["judge"]["datasets"] = ["human-only"]  # 154 pairs × 2 orders = 308 calls
        (pinned / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        full = stage(pinned, "judge", under=str(calls), after="40")
        first = [orjson.dumps(r.body, option=orjson.OPT_SORT_KEYS) for r in mock.requests]
    out = full.stdout + full.stderr
    assert full.returncode == 4, out
    assert "Traceback" not in out and out.count("error:") == 1, out
    assert "error: no space left on the device writing .novelty-audit/cache/calls/" in full.stderr  # the store, as configured
    assert "hint: free space on that file system" in full.stderr and "pays only the missing ones" in full.stderr
    assert len(first) < 308 - 100, f"{len(first)} calls sent: sending goes on after the disk is full"
    kept = sorted(calls.glob("??/*.json"))
    assert len(kept) == 40
    assert not [p for p in pinned.rglob("*.tmp")], "a temp file left behind"
    assert not (pinned / "artifacts/judge").exists(), "nothing published from a run the disk stopped"

    with MockLLM(port=mock.port) as again:
        rerun = stage(pinned, "judge")
        second = [orjson.dumps(r.body, option=orjson.OPT_SORT_KEYS) for r in again.requests]
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert len(second) == 308 - 40 and len(set(second)) == len(second), "only the calls not kept are asked"
    kept_bodies = {orjson.dumps({k: v for k, v in orjson.loads(p.read_bytes())["value"].items() if k == "messages"}) for p in kept}
    assert not {orjson.dumps({"messages": orjson.loads(b)["messages"]}) for b in second} & kept_bodies, "a kept answer paid twice"


def test_a_read_only_artifacts_directory_is_one_message_naming_it(project):
    done = stage(project, "pin", under=str(project / "artifacts"), after="0", errno="EROFS")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("error:") == 1
    assert "error: read-only file system: artifacts/" in done.stderr  # the file being written, under store.artifacts
    assert "hint: make that directory writable" in done.stderr
    assert not list((project / "artifacts").glob(".pin.*")), "the staging directory of the refused publish is gone"


@pytest.mark.parametrize(
    ("code", "said"),
    [(errno.ENOSPC, "no space left on the device writing /data/x.json"), (errno.EDQUOT, "disk quota exceeded writing /data/x.json"),
     (errno.EROFS, "read-only file system: /data/x.json"), (errno.EACCES, "permission denied: /data/x.json"),
     (errno.EPERM, "permission denied: /data/x.json")],
)  # fmt: skip
def test_the_disk_errors_a_user_fixes_become_one_message_naming_the_path(code, said):
    wrapped = RuntimeError("a library's own error")
    wrapped.__cause__ = OSError(code, os.strerror(code), "/data/x.json")
    for exc in (OSError(code, os.strerror(code), "/data/x.json"), wrapped):
        found = storage_error(exc)
        assert isinstance(found, StorageError) and found.exit_code == 4 and found.message.startswith(said)


def test_other_os_errors_stay_bugs_with_their_traceback():
    assert storage_error(OSError(errno.EIO, "I/O error", "/data/x.json")) is None
    assert storage_error(FileNotFoundError(errno.ENOENT, "missing", "/data/x.json")) is None
