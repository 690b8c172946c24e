"""User-facing errors.

The CLI catches only `NoveltyAuditError` and prints its message and hint without a
traceback; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

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
    "require",
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
