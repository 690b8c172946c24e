"""User-facing errors.

The CLI catches only `NoveltyAuditError` and prints its message and hint without a
traceback; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

__all__ = [
    "NoveltyAuditError",
    "BadInputError",
    "ConfigError",
    "PinMismatchError",
    "ManifestMismatchError",
    "UnknownNameError",
    "MissingDependencyError",
    "BudgetExceededError",
    "StageLockedError",
    "IncompleteStageError",
    "StorageError",
    "require",
    "storage_error",
]


class NoveltyAuditError(Exception):
    """A problem the user can fix: carries a message, an optional hint and an exit code."""

    exit_code: int = 2

    def __init__(self, message: str, hint: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class BadInputError(NoveltyAuditError):
    """Input data that cannot be used as is; the message names file, item and field."""


class ConfigError(NoveltyAuditError):
    """params.yaml (or a CLI option) is invalid."""


class PinMismatchError(NoveltyAuditError):
    """A pinned input file's sha256 differs from params.yaml."""


class ManifestMismatchError(NoveltyAuditError):
    """An artifact on disk no longer matches the digest its manifest recorded."""


class UnknownNameError(NoveltyAuditError):
    """A registry lookup failed; the message suggests close matches."""


class MissingDependencyError(NoveltyAuditError):
    """An optional dependency is not installed; the hint names the extra."""


class BudgetExceededError(NoveltyAuditError):
    """A paid stage would exceed the configured budget cap."""


def require(module: str, extra: str):
    """Import an optional dependency or raise an error naming the extra that provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"the optional dependency '{module}' is not installed ({exc})",
            hint=f"pip install 'novelty-audit[{extra}]'",
        ) from None


class StageLockedError(NoveltyAuditError):
    """Another process holds the stage's lock and did not release it in time; the message names the holder."""


class IncompleteStageError(NoveltyAuditError):
    """A stage published outputs that are incomplete (e.g. failed API calls); the next run completes them.

    Exit code 3, so `dvc repro` does not record the stage as done and reruns it next time.
    """

    exit_code = 3


class StorageError(NoveltyAuditError):
    """The file system refused a read or write: disk full, quota exceeded, read-only, or permission denied. The
    message names the path and what to do. Exit code 4: the input is fine, the machine must change; the writes
    are atomic, so nothing half-written stays, and answered calls are kept, so the rerun pays only what is missing."""

    exit_code = 4


_FULL = (errno.ENOSPC, errno.EDQUOT)
_REFUSED = (errno.EROFS, errno.EACCES, errno.EPERM)
STORAGE_ERRNOS = frozenset(_FULL + _REFUSED)
"""errno values of an OSError that a user fixes on the machine, not in the code or the input."""

_RERUN = "then run the same command again: answered calls are kept in the call cache, so the rerun pays only the missing ones"


def storage_error(exc: BaseException) -> StorageError | None:
    """The user error for a disk-full, quota, read-only or permission OSError in `exc` or its causes (a library
    may wrap it), naming the path; None when there is none (a bug keeps its traceback)."""
    seen: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(seen) < 12 and e not in seen:
        seen.append(e)
        if isinstance(e, OSError) and e.errno in STORAGE_ERRNOS:
            return _storage_error(e)
        e = e.__cause__ or e.__context__
    return None


def _storage_error(e: OSError) -> StorageError:
    # A copy or rename names its destination second (shutil.copyfile on a full disk: filename is the source).
    named = e.filename2 if e.filename2 is not None else e.filename
    path = os.fsdecode(named) if named is not None else None
    if path and os.path.basename(path).startswith(".") and path.endswith(".tmp"):
        path = os.path.dirname(path) + os.sep  # a temp file beside its target: the directory is what the user knows
    where = f"writing {path}" if path else "writing"
    if e.errno in _FULL:
        what = "no space left on the device" if e.errno == errno.ENOSPC else "disk quota exceeded"
        mount, free = _mount_and_free(path)
        on = f" (file system at {mount}, {free} free)" if mount else ""
        return StorageError(
            f"{what} {where}{on}",
            hint=f"free space on that file system — old artifacts, reports or caches you no longer need, or other "
            f"files — or point store.root / store.artifacts in params.yaml at a larger disk; {_RERUN}",
        )
    what = "read-only file system" if e.errno == errno.EROFS else "permission denied"
    return StorageError(
        f"{what}: {path or 'a file'}",
        hint=f"make that directory writable for this user (or point store.root / store.artifacts in params.yaml at "
        f"a writable one); {_RERUN}",
    )


def _mount_and_free(path: str | None) -> tuple[str | None, str]:
    """The mount point of the file system holding `path` and its free space, for the message."""
    if not path:
        return None, ""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        free = shutil.disk_usage(p).free
    except OSError:
        return None, ""
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    units = ("bytes", "KB", "MB", "GB", "TB")
    size, unit = float(free), 0
    while size >= 1024 and unit < len(units) - 1:
        size, unit = size / 1024, unit + 1
    return str(p), f"{size:.0f} {units[unit]}" if unit == 0 else f"{size:.1f} {units[unit]}"
