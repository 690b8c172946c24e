"""Progress of long local work (embedding, local models, NovBench generators): a rich bar on a terminal, a log line
every tenth (or every 30 s) otherwise, so a run in CI or behind `| tee` says how far it is too. API calls have their
own counter in the LLM call layer ("n/90 calls done")."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

__all__ = ["PROGRESS_EVERY_S", "Progress", "progress_log"]

PROGRESS_EVERY_S = 30.0
"""Without a terminal, a progress line at least this often while work is under way (and at every tenth of it);
the LLM call layer's counter of calls keeps the same pace."""
progress_log = logging.getLogger("novelty_audit.progress")


class Progress:
    """`done`/`total` `unit` `verb` so far (e.g. "12/308 texts embedded"); `enabled=False` or nothing to do: silent."""

    def __init__(self, label: str, total: int, enabled: bool = True, done: int = 0, *, unit: str = "texts", verb: str = "embedded"):
        self.label, self.total, self.done = label, total, done
        self.unit, self.verb = unit, verb
        self.enabled = enabled and total > done
        self.bar: Any = None
        self._lock = threading.Lock()
        self._tenth = 1  # next tenth of the total that gets a line (integers: 0.1 steps drift)
        self._last = time.monotonic()
        if not self.enabled:
            return
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeRemainingColumn

            self.bar = Bar(TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn(unit), TimeRemainingColumn(),
                           console=Console(stderr=True), transient=True)  # fmt: skip
            self._task = self.bar.add_task(verb, total=total, completed=done)
            self.bar.start()
        else:
            self._line("started")

    def _line(self, what: str) -> None:
        msg = f"{self.label}: {self.done}/{self.total} {self.unit} {self.verb} ({what})"
        if progress_log.hasHandlers():
            progress_log.info(msg)
        else:
            print(msg, file=sys.stderr, flush=True)

    def advance(self, n: int = 1) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.done += n
            if self.bar is not None:
                self.bar.update(self._task, completed=self.done)
                return
            now = time.monotonic()
            if 10 * self.done >= self._tenth * self.total or now - self._last >= PROGRESS_EVERY_S:
                self._line(f"{100 * self.done // max(self.total, 1)}%")
                self._last = now
                while self._tenth * self.total <= 10 * self.done:
                    self._tenth += 1

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
