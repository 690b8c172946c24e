"""Concurrency: one lock per stage across processes, publishing never raises under contention, leftovers of
dead writers are cleaned at the next start (never a live writer's), the code digest is safe across threads."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from novelty_audit.artifacts import (
    StageInput,
    StageResult,
    Store,
    clean_stale_temps,
    code_digest,
    execute_stage,
    stage_lock,
    write_table,
)
from novelty_audit.artifacts import _code
from novelty_audit.errors import StageLockedError

REPO = Path(__file__).resolve().parents[2]


def _python(script: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )  # fmt: skip


def _wait_for_line(proc: subprocess.Popen, expected: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline().strip()
        if line == expected:
            return
        if proc.poll() is not None:
            break
    raise AssertionError(f"child did not print {expected!r} (last {line!r}): {proc.stderr.read() if proc.poll() is not None else ''}")


HOLD = """
import sys
from novelty_audit.artifacts import stage_lock
with stage_lock(sys.argv[1], "judge"):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_second_holder_of_a_stage_lock_gives_up_naming_the_holder_then_gets_it_once_free(tmp_path):
    child = _python(HOLD, str(tmp_path))
    try:
        _wait_for_line(child, "held")
        with pytest.raises(StageLockedError, match=rf"stage judge is being run by pid {child.pid} on ") as exc:
            with stage_lock(tmp_path, "judge", timeout=0.3):
                pass
        assert exc.value.exit_code == 2 and "NOVELTY_AUDIT_LOCK_TIMEOUT" in exc.value.hint
        with stage_lock(tmp_path, "pin", timeout=0):  # other stages are not blocked
            pass
        child.stdin.close()  # the holder finishes; the waiter then gets the lock
        with stage_lock(tmp_path, "judge", timeout=60):
            assert child.wait(60) == 0
    finally:
        child.kill()
        child.wait()


def test_a_killed_holder_releases_its_lock(tmp_path):
    child = _python(HOLD, str(tmp_path))
    _wait_for_line(child, "held")
    child.kill()
    child.wait()
    with stage_lock(tmp_path, "judge", timeout=0):
        pass


def test_the_stage_lock_is_reentrant_within_a_thread(tmp_path):
    with stage_lock(tmp_path, "judge", timeout=0):
        with stage_lock(tmp_path, "judge", timeout=0):
            pass


def test_execute_stage_waits_for_another_run_of_the_same_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("NOVELTY_AUDIT_LOCK_TIMEOUT", "0.2")
    src = tmp_path / "input.txt"
    src.write_text("x")
    child = _python(HOLD.replace('"judge"', '"demo"'), str(tmp_path / "store"))
    try:
        _wait_for_line(child, "held")
        with pytest.raises(StageLockedError, match=f"pid {child.pid}"):
            execute_stage(
                "demo", code_root="novelty_audit.artifacts", params={}, inputs=[StageInput(src)],
                out_dir=tmp_path / "artifacts/demo", store=Store(tmp_path / "store"),
                compute=lambda out: pytest.fail("must not compute while another process holds the lock"), workdir=tmp_path,
            )  # fmt: skip
    finally:
        child.kill()
        child.wait()


RACE = """
import sys
from pathlib import Path
from novelty_audit.artifacts._stage import _publish, _stage_tmp
out = Path(sys.argv[1])
for i in range(int(sys.argv[2])):
    tmp = _stage_tmp(out)
    (tmp / "who").write_text(f"{sys.argv[3]}-{i}")
    _publish(tmp, out)
print("done", flush=True)
"""


def test_racing_publishes_from_two_processes_never_raise_and_leave_one_whole_directory(tmp_path):
    out = tmp_path / "artifacts" / "judge"
    procs = [_python(RACE, str(out), "400", name) for name in ("a", "b")]
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0 and "done" in stdout, stderr
    assert [f.name for f in out.iterdir()] == ["who"]
    assert out.joinpath("who").read_text().split("-")[0] in {"a", "b"}
    assert [p.name for p in out.parent.iterdir()] == ["judge"], "no temp or swapped-out directory is left"


SIT = """
import sys
print("ready", flush=True)
sys.stdin.read()
"""


def test_stale_temps_of_dead_writers_go_and_a_live_writers_stay(tmp_path):
    live = _python(SIT)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    try:
        _wait_for_line(live, "ready")
        live_file = tmp_path / f".verdicts.parquet.{live.pid}.ab_c9x.tmp"
        live_dir = tmp_path / f".judge.{live.pid}.k2j4l0qz"
        dead_file = tmp_path / f".verdicts.parquet.{dead_pid}.zz81kd.tmp"
        dead_dir = tmp_path / f".judge.{dead_pid}.a8d7f6e5"
        dead_old = tmp_path / f".judge.{dead_pid}.0123456789ab.old"
        foreign = [tmp_path / ".gitignore", tmp_path / ".judge.old-123", tmp_path / "x.1.tmp"]
        for d in (live_dir, dead_dir, dead_old):
            d.mkdir()
            (d / "verdicts.parquet").write_text("partial")
        for f in (live_file, dead_file, *foreign):
            f.write_text("partial")
        removed = clean_stale_temps(tmp_path)
        assert sorted(removed) == sorted([dead_file, dead_dir, dead_old])
        assert live_file.exists() and live_dir.exists() and all(f.exists() for f in foreign)
        assert clean_stale_temps(tmp_path, ".judge.*") == []
    finally:
        live.kill()
        live.wait()
    assert sorted(clean_stale_temps(tmp_path)) == sorted([live_file, live_dir]), "once its writer is gone it is stale"


KILLED_MID_WRITE = """
import os, sys
from pathlib import Path
from novelty_audit.artifacts import _io
fd, tmp = _io._create_temp(Path(sys.argv[1]))  # the temp atomic_write_bytes writes before its rename
os.write(fd, b"half of it")
print(tmp, flush=True)
os._exit(9)  # killed before the rename
"""


def test_a_writer_killed_mid_write_leaves_no_target_and_a_temp_the_next_start_removes(tmp_path):
    target = tmp_path / "calls" / "ab" / "entry.json"
    target.parent.mkdir(parents=True)
    child = _python(KILLED_MID_WRITE, str(target))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 9, err
    leftover = Path(out.strip())
    assert leftover.parent == target.parent and leftover.exists() and not target.exists()
    assert clean_stale_temps(tmp_path, ".*.tmp", recursive=True) == [leftover]


def test_atomic_writes_give_the_usual_file_mode_with_or_without_fsync(tmp_path):
    import os
    import stat

    from novelty_audit.artifacts import atomic_write_bytes
    from novelty_audit.artifacts._io import _FILE_MODE

    for fsync in (True, False):
        p = atomic_write_bytes(tmp_path / "new" / f"f-{fsync}.json", b"{}", fsync=fsync)
        assert p.read_bytes() == b"{}" and stat.S_IMODE(os.stat(p).st_mode) == _FILE_MODE
    assert sorted(x.name for x in (tmp_path / "new").iterdir()) == ["f-False.json", "f-True.json"], "no temp left"


def test_execute_stage_removes_a_killed_runs_temp_dir_at_the_next_start(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    leftover = tmp_path / "artifacts" / f".demo.{int(dead.stdout)}.q1w2e3r4"
    leftover.mkdir(parents=True)
    (leftover / "t.parquet").write_text("half")
    src = tmp_path / "input.txt"
    src.write_text("x")

    def compute(out: Path) -> StageResult:
        write_table(out / "t.parquet", pl.DataFrame({"k": ["a"]}))
        return StageResult(outputs={"t.parquet": ["k"]})

    execute_stage("demo", code_root="novelty_audit.artifacts", params={}, inputs=[StageInput(src)],
                  out_dir=tmp_path / "artifacts/demo", store=Store(tmp_path / "store"), compute=compute, workdir=tmp_path)  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "artifacts").iterdir()) == ["demo"]


def test_the_code_digest_is_computed_once_and_safely_from_many_threads(monkeypatch):
    monkeypatch.setattr(_code, "_DIGESTS", {})
    parsed: list[str] = []
    real = _code._imports_of
    monkeypatch.setattr(_code, "_imports_of", lambda name, *rest: (parsed.append(name), real(name, *rest))[1])
    results: list = []
    errors: list = []
    start = threading.Barrier(16)

    def work() -> None:
        start.wait()
        try:
            results.append(code_digest("stages.judge"))
        except BaseException as exc:  # noqa: BLE001 - the test reports any crash of any thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(results) == 16
    assert len({r.digest for r in results}) == 1
    assert len(parsed) == len(set(parsed)), "each module parsed once: one computation per roots"
