"""The run-wide cost cap of API calls, shared by every thread and process of one run.

A store-backed budget keeps its state (`spent`, `reserved`) in `<store root>/budget/<scope>.json`, read
and rewritten under an exclusive flock of that file, so chunks of one stage run on Dask or Ray
workers (which unpickle the same path and cap) draw on one cap. A budget without a state file (tests,
library callers without a store) is shared by threads only.

Each call reserves its worst-case cost before it is sent and settles the actual cost after, so the cap
is never crossed, however many calls are in flight and wherever they run.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from ..errors import BudgetExceededError

__all__ = ["Budget"]

_RESIDUE_USD = 1e-12
"""Less than this reserved is float rounding left by settled calls, not money in flight."""
STALE_AFTER_S = 7 * 24 * 3600.0
"""State files of runs untouched this long are removed when a new run's budget is made."""


class Budget:
    """A cost cap in USD (None: no cap). `reserve` before sending, `settle` after."""

    def __init__(self, cap_usd: float | None, *, state: str | Path | None = None):
        self.cap = cap_usd
        self.state = Path(state) if state is not None else None
        """The shared state file, or None (state in this object only)."""
        self._lock = threading.Lock()
        self._spent = 0.0
        self._reserved = 0.0

    @classmethod
    def for_run(cls, cap_usd: float | None, store_root: str | Path, scope: str | None = None) -> "Budget":
        """A budget for one run, its state under `<store_root>/budget/<scope>.json` (scope: a fresh
        token unless given). Without a cap nothing is stored: there is nothing to enforce."""
        if cap_usd is None:
            return cls(None)
        # Absolute: a worker of a remote cluster unpickles this path in its own working directory.
        directory = Path(store_root).resolve() / "budget"
        _remove_stale(directory)
        return cls(cap_usd, state=directory / f"{scope or uuid.uuid4().hex}.json")

    # -- shared state ------------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[dict[str, float]]:
        """The current state, exclusively; changes to the yielded dict are saved on exit."""
        with self._lock:
            if self.state is None:
                st = {"spent": self._spent, "reserved": self._reserved}
                yield st
                self._spent, self._reserved = st["spent"], st["reserved"]
                return
            self.state.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.state, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                st = _read_state(fd, self.state)
                before = dict(st)
                yield st
                if st != before:
                    _write_state(fd, {"cap_usd": self.cap, "spent": st["spent"], "reserved": st["reserved"]})
            finally:
                os.close(fd)  # drops the flock

    @property
    def spent(self) -> float:
        """Actual cost of the calls settled so far (all processes sharing the state)."""
        with self._locked() as st:
            return st["spent"]

    @property
    def reserved(self) -> float:
        """Worst-case cost of the calls in flight (all processes sharing the state)."""
        with self._locked() as st:
            return st["reserved"]

    # -- the protocol ------------------------------------------------------------------------------
    def reserve(self, amount: float, what: str) -> None:
        """Set aside `amount` for the call `what`, or raise BudgetExceededError if the cap could be crossed.
        A call that cannot cost anything (no price: counted as free) is never stopped and touches no state."""
        if self.cap is None or amount <= 0:
            return
        with self._locked() as st:
            if st["spent"] + st["reserved"] + amount > self.cap:
                raise BudgetExceededError(
                    f"budget cap ${self.cap:.4f} reached: spent ${st['spent']:.4f}, in flight ${st['reserved']:.4f}, "
                    f"next call ({what}) may cost up to ${amount:.4f}",
                    hint="raise judge.budget_usd and rerun; answered calls are cached and will not be paid again",
                )
            st["reserved"] += amount

    def settle(self, reserved: float, actual: float) -> None:
        """Release a reservation and record what the call actually cost."""
        if self.cap is None or (reserved <= 0 and actual <= 0):
            return
        with self._locked() as st:
            left = st["reserved"] - reserved
            # Float sums of many reservations leave residues (1e-18): with nothing in flight, zero means zero.
            st["reserved"] = left if left > _RESIDUE_USD else 0.0
            st["spent"] += actual

    # -- pickling: a copy on another worker shares the state file, not this object's lock ----------
    def __getstate__(self) -> dict[str, Any]:
        return {"cap": self.cap, "state": self.state, "spent": self._spent, "reserved": self._reserved}

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.cap, self.state = d["cap"], d["state"]
        self._spent, self._reserved = d["spent"], d["reserved"]
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Budget(cap_usd={self.cap!r}, state={str(self.state) if self.state else None!r})"


_RECORD = 256
"""The state is one fixed-size record written by a single pwrite: a process killed at any moment leaves
the old record or the new one, and readers hold the lock, so no fsync or rename is needed."""


def _read_state(fd: int, path: Path) -> dict[str, float]:
    data = os.pread(fd, _RECORD, 0)
    if not data:
        return {"spent": 0.0, "reserved": 0.0}
    try:
        raw = orjson.loads(data)
        return {"spent": float(raw["spent"]), "reserved": float(raw["reserved"])}
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        # Unknown spend: refusing every further call is the only way to be sure the cap holds.
        raise BudgetExceededError(
            f"budget state {path} is unreadable, so the spend of this run is unknown",
            hint="rerun the stage: a new run starts a new budget, and answered calls are cached",
        ) from None


def _write_state(fd: int, state: dict[str, Any]) -> None:
    data = orjson.dumps(state, option=orjson.OPT_SORT_KEYS)
    os.pwrite(fd, data.ljust(_RECORD), 0)


def _remove_stale(directory: Path) -> None:
    if not directory.is_dir():
        return
    now = time.time()
    for p in directory.glob("*.json"):
        try:
            if now - p.stat().st_mtime > STALE_AFTER_S:
                p.unlink()
        except FileNotFoundError:
            pass
