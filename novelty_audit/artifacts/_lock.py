"""One lock per stage across processes: the CLI, the Prefect flows and `dvc repro` all take it.

DVC's own lock covers only `dvc repro`; two CLI runs (or a flow and a CLI run) of the same stage would
otherwise compute, and pay for, the same calls twice. The lock is an `flock` on
`<store root>/locks/<stage>.lock`, so it is released by the kernel when its holder dies (no stale
locks after a kill -9). The holder writes who it is into the file; a waiter that gives up names it.
`file_lock` waits the same way on a shared file's own flock (the adjudication file's writers and readers).
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import random
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import orjson

from ..errors import StageLockedError

__all__ = ["stage_lock", "file_lock", "lock_timeout", "DEFAULT_LOCK_TIMEOUT_S", "LOCK_TIMEOUT_ENV"]

log = logging.getLogger(__name__)

DEFAULT_LOCK_TIMEOUT_S = 300.0
LOCK_TIMEOUT_ENV = "NOVELTY_AUDIT_LOCK_TIMEOUT"
"""Seconds a run waits for another run of the same stage (0: fail at once). Changes when, never what, is computed."""


def lock_timeout() -> float:
    """The wait for a busy stage: `NOVELTY_AUDIT_LOCK_TIMEOUT` seconds (read at call time), else the default."""
    raw = os.environ.get(LOCK_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:  # NaN would compare false with every deadline, inf wait forever
        from ..errors import ConfigError

        raise ConfigError(f"{LOCK_TIMEOUT_ENV}={raw!r} is not a finite number of seconds ≥ 0") from None
    return value


_HELD = threading.local()
"""Locks this thread holds (resolved paths): `pipeline.run_stage` holds the lock around a stage's publishing and
`execute_stage` takes it again inside, so the lock is re-entrant within one thread."""


def _holder(path: Path) -> str:
    try:
        info = orjson.loads(path.read_bytes() or b"{}")
    except (OSError, orjson.JSONDecodeError):
        return "an unknown process"
    if not isinstance(info, dict) or not info:
        return "an unknown process"
    return f"pid {info.get('pid')} on {info.get('host')} since {info.get('since')} ({info.get('command')})"


def _acquire(fd: int, op: int, wait: float, *, on_wait: Callable[[], None], timed_out: Callable[[], Exception]) -> None:
    """`flock(fd, op)`, polling for up to `wait` seconds; `on_wait` runs once if it has to wait, `timed_out()` is
    raised when the wait runs out (polling, not a blocking flock, so the wait has a bound)."""
    deadline = time.monotonic() + wait
    delay = 0.05
    while True:
        try:
            fcntl.flock(fd, op | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if delay == 0.05 and wait > 0:  # say once why nothing seems to happen
                on_wait()
            if time.monotonic() >= deadline:
                raise timed_out() from None
            # A random part of the delay: waiters that started together (twenty writers appending to one
            # adjudication file) otherwise wake together, one wins and the rest sleep again, up to ~0.8 s per
            # round for a few ms of writing.
            time.sleep(min(random.uniform(delay / 2, delay), max(0.0, deadline - time.monotonic())) or 0.01)
            delay = min(delay * 2, 1.0)


@contextmanager
def stage_lock(store_root: str | Path, stage: str, *, timeout: float | None = None) -> Iterator[Path]:
    """Hold the lock of `stage` in the store at `store_root`; wait up to `timeout` seconds for another holder.

    Raises StageLockedError (exit 2) naming the holder (pid, host, start, command) when the wait runs out.
    """
    path = Path(store_root) / "locks" / f"{stage}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    key = str(path.resolve())
    held: set[str] = _HELD.__dict__.setdefault("paths", set())
    if key in held:
        yield path
        return
    wait = lock_timeout() if timeout is None else max(0.0, timeout)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(
            fd, fcntl.LOCK_EX, wait,
            on_wait=lambda: log.warning("stage %s is being run by %s; waiting up to %g s for it to finish", stage, _holder(path), wait),
            timed_out=lambda: StageLockedError(
                f"stage {stage} is being run by {_holder(path)}; waited {wait:g} s for its lock {path}",
                hint=f"wait for that run to finish, or wait longer: `novelty-audit stage {stage} --wait SECONDS` or {LOCK_TIMEOUT_ENV}",
            ),
        )
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:300],
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps(info), 0)
        held.add(key)
        try:
            yield path
        finally:
            held.discard(key)
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def file_lock(path: str | Path, *, shared: bool = False, timeout: float | None = None) -> Iterator[Path]:
    """Hold an `flock` on the file `path` itself: exclusive for a writer, `shared=True` for a reader.

    For a file several commands write (the adjudication file: the CLI, the review page, group decisions): every
    writer takes this same lock, in any process or thread, and no lock file lies beside it for git or DVC to see.
    A writer's lock creates the file empty if it is missing; nothing is ever written here. A reader's lock on a
    missing file holds nothing (there is nothing to read). Not re-entrant. Waits up to `timeout` seconds (default
    `lock_timeout()`), then raises StageLockedError (exit 2) naming the file.
    """
    path = Path(path)
    if shared and not path.exists():
        yield path
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    wait = lock_timeout() if timeout is None else max(0.0, timeout)
    fd = os.open(path, os.O_RDONLY | (0 if shared else os.O_CREAT), 0o644)
    try:
        _acquire(
            fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, wait,
            # A short wait is the normal case (another append in progress): not worth a warning.
            on_wait=lambda: log.debug("%s is being written by another writer; waiting up to %g s", path, wait),
            timed_out=lambda: StageLockedError(
                f"{path} is being written by another writer; waited {wait:g} s for its lock",
                hint=f"try again once that write has finished, or wait longer with {LOCK_TIMEOUT_ENV}",
            ),
        )
        try:
            yield path
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
