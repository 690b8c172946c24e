"""Build judges from params.yaml: judge id → spec → registered backend factory (one hop).

Every configured judge is checked — enabled or not — against its backend's registered args model
before anything is built: `enabled: false` only means "do not run", never "not checked".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from ..config import SWEEP_KNOB_NOTES, SWEEP_KNOBS, JudgeParams, SweepVariant
from ..errors import ConfigError, MissingDependencyError, UnknownNameError
from ._backends import JUDGES
from ._base import Judge, JudgeContext
from ..llm import Budget, SharedCallCache

__all__ = ["Built", "build_judges", "judge_catalog", "validate_judges"]


class Built(NamedTuple):
    """The judges a run will use, and the optional ones left out because their extra is missing."""

    judges: list[Judge]
    skipped: dict[str, str]
    """judge id → why (the missing dependency and the extra to install)."""


def validate_judges(jp: JudgeParams, *, source: str = "params.yaml") -> None:
    """Check every configured judge's backend and args without building a client or importing an extra.

    Raises UnknownNameError (close matches in the hint) when the only problems are unknown backends,
    otherwise ConfigError; either lists every problem as `judge.judges.<id>.<field>: why`."""
    problems: list[str] = []
    hints: list[str] = []
    unknown_only = True
    variants = jp.sweep_variants()
    for name, spec in sorted(jp.judges.items()):
        if spec.backend not in JUDGES.names():
            err = JUDGES.unknown(spec.backend)
            problems.append(f"judge.judges.{name}.backend: {err.message} ({err.hint})")
            hints.append(f"{name}: {err.hint}")
            continue
        model = JUDGES.args_model(spec.backend)
        if model is None:
            continue
        variant = variants.get(name)
        refused = _unhonoured_knob(model, variant.knobs) if variant is not None else None
        if refused is not None:
            unknown_only = False
            knob, path = refused
            problems.append(f"{_sweep_where(variant, spec.backend, knob)}: the {spec.backend} backend has no arg {path} "
                            f"(variant {name})")  # fmt: skip
            hints.append(f"drop knob {knob} from judge.sweeps.{variant.sweep}, or sweep a base that takes it")
            continue
        try:
            model.model_validate(dict(spec.args))
        except ValidationError as exc:
            unknown_only = False
            for e in exc.errors():
                loc = ".".join(str(p) for p in e["loc"])
                line = f"judge.judges.{name}.args{'.' + loc if loc else ''}: {e['msg']}"
                if variant is not None:  # a knob value the backend refuses: name the sweep, the base, the knob
                    knob = next((k for k in variant.knobs if SWEEP_KNOBS[k] and loc.startswith(".".join(SWEEP_KNOBS[k]))),
                                next(iter(variant.knobs)) if len(variant.knobs) == 1 else None)  # fmt: skip
                    note = f" ({SWEEP_KNOB_NOTES[knob]})" if knob in SWEEP_KNOB_NOTES else ""
                    line = f"{_sweep_where(variant, spec.backend, knob)}: {line}{note}"
                problems.append(line)
            hints.append(f"{name} ({spec.backend}) args: {', '.join(model.model_fields)}")
    if not problems:
        return
    message = f"{source}: invalid judge configuration\n" + "\n".join(f"  {p}" for p in problems)
    hint = "; ".join(hints) + " — every configured judge is checked, enabled or not (`novelty-audit judges` lists the backends)"
    raise (UnknownNameError if unknown_only else ConfigError)(message, hint=hint)


def _unhonoured_knob(model: Any, knobs: dict[str, Any]) -> tuple[str, str] | None:
    """(knob, arg path) of the first knob whose arg the backend's args model does not have (a temperature on a
    control, a reasoning effort on a distance judge); None when it has them all."""
    for knob in knobs:
        path = SWEEP_KNOBS[knob]
        node = model
        for depth, part in enumerate(path):
            fields = getattr(node, "model_fields", None)
            if fields is None:
                break  # a free-form mapping: its own validation decides
            if part not in fields:
                return knob, ".".join(path)
            node = fields[part].annotation
    return None


def _sweep_where(variant: SweepVariant, backend: str, knob: str | None) -> str:
    value = f" value {variant.knobs[knob]!r}" if knob is not None else ""
    return f"judge.sweeps.{variant.sweep}: base {variant.base} ({backend}), knob {knob or ', '.join(variant.knobs)}{value}"


def build_judges(
    jp: JudgeParams,
    *,
    store_root: str | Path,
    names: list[str] | None = None,
    progress: bool | None = None,
    budget: Budget | None = None,
    shared_cache: str | None = None,
    shared_cache_options: dict[str, Any] | None = None,
) -> Built:
    """Build every enabled judge (or `names`) sorted by id, sharing one budget.

    Every configured judge is validated first (`validate_judges`), so a typo fails before any call.
    `budget`: pass the run's budget when one run builds its judges in several places (fan-out chunks);
    by default a new one is made for this run, its spend kept under `<store_root>/budget/`.
    `shared_cache`: params `store.shared_cache` (with `store.shared_cache_options`), the team layer under the call cache."""
    validate_judges(jp)
    if budget is None:
        budget = Budget.for_run(jp.budget_usd, store_root)
    shared = SharedCallCache(shared_cache, shared_cache_options) if shared_cache else None
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
            shared_cache=shared,
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
    """Registered backends and configured judges (for `novelty-audit judges`); validates every
    configured judge, builds nothing."""
    validate_judges(jp)
    return {
        "backends": {name: (JUDGES.get(name).__doc__ or "").strip().splitlines()[0] if JUDGES.get(name).__doc__ else "" for name in JUDGES.names()},
        "judges": [
            {"judge": name, "backend": spec.backend, "enabled": spec.enabled, "optional": spec.optional, "args": spec.args}
            for name, spec in sorted(jp.judges.items())
        ],
    }
