"""Leftovers of killed writers: temp files and directories whose name carries a dead process's pid.

Every temp the project writes is named `.<name>.<pid>.<random>` (files end in `.tmp`, a stage's
swapped-out directory in `.old`), next to its target. A kill -9 leaves it behind; the next run
removes those whose pid no longer runs, and never one of a live process (which may still be writing).
"""

from __future__ import annotations

import errno
import fnmatch
import logging
import os
import re
import shutil
from pathlib import Path

__all__ = ["clean_stale_temps", "temp_owner"]

log = logging.getLogger("novelty_audit.artifacts")

# `.<name>.<pid>.<token>[.tmp|.old]`: the pid is the last all-digit dot-separated field before the token.
_TEMP = re.compile(r"^\..+\.(?P<pid>\d+)\.[A-Za-z0-9_-]+(?:\.tmp|\.old)?$")


def temp_owner(name: str) -> int | None:
    """The writer pid encoded in a temp name, or None when `name` is not a temp name."""
    m = _TEMP.match(name)
    return int(m.group("pid")) if m else None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a pid we wrote: leave it alone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError as exc:
        return exc.errno != errno.ESRCH
    return True


def clean_stale_temps(directory: str | Path, pattern: str = ".*", *, recursive: bool = False) -> list[Path]:
    """Remove temp files/dirs in `directory` (matching the glob `pattern`) left by processes that no longer run.

    Returns what was removed. Names without a pid (not written by this project) and temps of live
    processes are never touched; a name whose pid was reused by another live process is kept too
    (it goes at a later start), which errs on the side of never deleting a live writer's file.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    entries = directory.rglob(pattern) if recursive else directory.glob(pattern)
    removed: list[Path] = []
    for p in sorted(entries):
        if not fnmatch.fnmatch(p.name, pattern):
            continue
        pid = temp_owner(p.name)
        if pid is None or pid == os.getpid() or _alive(pid):
            continue
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
        except FileNotFoundError:
            continue  # another cleaner got there first
        log.info("removed %s, left by process %d which no longer runs", p, pid)
        removed.append(p)
    return removed
