"""Build judges from params.yaml: judge id → spec → registered backend factory (one hop)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from ..config import JudgeParams
from ..errors import MissingDependencyError
from ._base import JUDGES, Judge, JudgeContext
from ._llm import Budget

__all__ = ["Built", "build_judges", "judge_catalog"]


class Built(NamedTuple):
    """The judges a run will use, and the optional ones left out because their extra is missing."""

    judges: list[Judge]
    skipped: dict[str, str]
    """judge id → why (the missing dependency and the extra to install)."""


def build_judges(
    jp: JudgeParams, *, store_root: str | Path, names: list[str] | None = None, progress: bool | None = None
) -> Built:
    """Build every enabled judge (or `names`) sorted by id, sharing one budget. Unknown backends fail
    with close matches; bad args fail naming the judge and field — all before any call is made."""
    budget = Budget(jp.budget_usd)
    judges: list[Judge] = []
    skipped: dict[str, str] = {}
    for name, spec in sorted(jp.judges.items()):
        if names is not None and name not in names:
            continue
        if names is None and not spec.enabled:
            continue
        factory = JUDGES.get(spec.backend)
        ctx = JudgeContext(
            name=name,
            seed=jp.seed,
            cache_dir=Path(store_root) / "cache",
            refresh=jp.refresh or spec.refresh,
            prices=jp.prices,
            budget=budget,
            progress=jp.progress if progress is None else progress,
            tasks=tuple(jp.tasks),
        )
        try:
            judge = factory(ctx, **spec.args)
        except MissingDependencyError as exc:
            if not spec.optional:
                raise
            skipped[name] = f"{exc.message} ({exc.hint})"
            continue
        judge.backend = judge.backend or spec.backend
        judges.append(judge)
    return Built(judges, skipped)


def judge_catalog(jp: JudgeParams) -> dict[str, Any]:
    """Registered backends and configured judges (for `novelty-audit judges`); builds nothing."""
    return {
        "backends": {name: (JUDGES.get(name).__doc__ or "").strip().splitlines()[0] if JUDGES.get(name).__doc__ else "" for name in JUDGES.names()},
        "judges": [
            {"judge": name, "backend": spec.backend, "enabled": spec.enabled, "optional": spec.optional, "args": spec.args}
            for name, spec in sorted(jp.judges.items())
        ],
    }
