"""params.yaml `judge.sweeps` — the instability study's design (one knob at a time from a base judge, or a grid),
expanded into real judges when params load.

A sweep `judge.sweeps.<name>: {base: <judge id>, mode: one-at-a-time | grid, vary: {<knob>: [values…]}}` becomes one
judge per variant under `judge.judges`, id `<name>/<knob>=<value>` (grid: `<name>/<k1>=<v1>,<k2>=<v2>` with knobs in
`KNOBS` order), spec = the base's spec with the knob(s) changed. With `bases: [a, b, …]` instead of `base`, every
variant is made once per base, id `<name>/<base>/<knob>=<value>`, each compared with its own base. The size of a
sweep is computed from its value counts before anything is expanded (`SweepSpec.size`, `judge.max_variants`).
Everything downstream (config digest, call cache, budget, `judge.limit`, metrics) treats a variant as any other
judge. The `dataset` knob is not an arg: it sets the
variant's own `datasets` (one pinned split); the variant is compared with its base judged on the split that split is
a variant of (`pin.datasets.<split>.variant_of`, docs/sweeps.md). Imports nothing of the project but `_base`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import SerializerFunctionWrapHandler, ValidationError, field_validator, model_serializer, model_validator

from ._base import REASONING_EFFORTS, SLUG, Frozen, check_name

__all__ = ["KNOBS", "KNOB_NOTES", "SweepSpec", "SweepVariant", "expand_sweeps", "variant_value_text"]

KNOBS: dict[str, tuple[str, ...]] = {
    "model": ("model",),
    "prompt": ("prompt",),
    "pointwise_prompt": ("pointwise_prompt",),
    "votes": ("votes",),
    "orders": ("orders",),
    "temperature": ("sampling", "temperature"),
    "reasoning_effort": ("sampling", "reasoning_effort"),
    "guard": ("guard",),
    "reasoning": ("reasoning",),
    "retrieval": ("retrieval",),
    "dataset": (),
}
"""Knob → where it lives in the judge's `args` (the order also fixes the order of knobs in a grid variant's id).
`dataset` (empty path) lives in the spec, not in `args`: the variant's `datasets` becomes `[value]`."""

KNOB_NOTES: dict[str, str] = {
    "reasoning": "`reasoning` is the answer format of the prompted judges (brief | none); the reasoning budget is "
                 f"the knob `reasoning_effort` ({' | '.join(REASONING_EFFORTS)})",
    "reasoning_effort": "it is sent as `sampling.reasoning_effort` (OpenAI: reasoning_effort; Anthropic: extended "
                        "thinking, whose budget max_tokens must exceed)",
    "orders": "both: each pair in both slot orders; forward: the published order only (half the calls)",
}
"""What a knob means, added to the error when a backend refuses one of its values."""

_ORDERS = ("both", "forward", "reverse")


class SweepSpec(Frozen):
    """One sweep: a base judge (or several) and the knobs to vary."""

    base: str | None = None
    """A judge id declared under judge.judges (not another sweep's variant). Set `base` or `bases`, not both."""
    bases: list[str] | None = None
    """Several declared judges, of any backend: every variant is made once per base (id `<sweep>/<base>/<knob>=…`)
    and compared with its own base, e.g. each prompt wording on each of six backbones."""
    mode: Literal["one-at-a-time", "grid"] = "one-at-a-time"
    """one-at-a-time: each variant changes one knob of the base (the study's ablations); grid: every combination."""
    vary: dict[str, list[Any]]
    """Knob → values; knobs: model, prompt, pointwise_prompt, votes, orders (both | forward), temperature,
    reasoning_effort (none … xhigh, max), guard, reasoning (the answer format: brief | none), retrieval, dataset
    (a pinned pairwise split's name: the variant is the base's config judged on that split only)."""

    @field_validator("vary")
    @classmethod
    def _knobs(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        if not v:
            raise ValueError("vary: name at least one knob")
        for knob, values in v.items():
            if knob not in KNOBS:
                raise ValueError(f"{knob}: unknown knob (values {values!r}; knobs: {', '.join(KNOBS)})")
            if not values:
                raise ValueError(f"{knob}: empty value list")
            allowed = {"reasoning_effort": (*REASONING_EFFORTS, None), "orders": _ORDERS}.get(knob)
            bad = [x for x in values if allowed is not None and x not in allowed]
            if bad:
                raise ValueError(f"{knob}: value {bad[0]!r} is not one of {', '.join(map(str, allowed or ()))}")
            if knob == "dataset":
                bad = [x for x in values if not isinstance(x, str) or not x or "/" in x]
                if bad:
                    raise ValueError(f"dataset: value {bad[0]!r} is not a dataset name (a name under pin.datasets)")
                for x in values:
                    check_name(x, "dataset")
        return v

    @field_validator("bases")
    @classmethod
    def _bases(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("bases: name at least one judge")
        for b in v:
            check_name(b, "bases")
        seen: set[str] = set()
        for b in v:
            if b in seen:
                raise ValueError(f"bases: '{b}' is named twice")
            seen.add(b)
        return v

    @model_validator(mode="after")
    def _one_base_form(self) -> "SweepSpec":
        if (self.base is None) == (self.bases is None):
            raise ValueError("set `base: <judge>` or `bases: [<judge>, …]` (one of the two)")
        if self.base is not None:
            check_name(self.base, "base")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if isinstance(out, dict):
            for unset in ("base", "bases"):
                if out.get(unset) is None:
                    out.pop(unset, None)  # a single-`base` sweep keeps the params digest it had before `bases`
        return out

    def base_ids(self) -> list[str]:
        """The judges every variant is made from, in the order written."""
        return [self.base] if self.base is not None else list(self.bases or ())

    def size(self) -> int:
        """How many judges this sweep makes: computed from the value counts alone, before any expansion, so a
        10^6 grid is refused at once instead of filling memory."""
        counts = [len(values) for values in self.vary.values()]
        per_base = sum(counts) if self.mode == "one-at-a-time" else math.prod(counts)
        return per_base * len(self.base_ids())

    def datasets(self) -> list[str]:
        """The splits this sweep's `dataset` knob names (empty when the knob is not varied)."""
        return list(self.vary.get("dataset", []))


class SweepVariant(Frozen):
    """What one generated judge is: its sweep, its base and the knob values it sets."""

    sweep: str
    base: str
    knobs: dict[str, Any]


def variant_value_text(value: Any) -> str:
    """A knob value as it appears in a variant id: scalars as written, `null` as none, a mapping as `k:v+k:v`
    (sorted keys) so a guard or retrieval setting stays readable (`,` separates a grid variant's knobs)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return "+".join(f"{k}:{variant_value_text(value[k])}" for k in sorted(value)) or "{}"
    if isinstance(value, list):
        return "[" + "|".join(variant_value_text(x) for x in value) + "]"
    return str(value)


def _set(args: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = dict(args)
    if len(path) == 1:
        out[path[0]] = value
        return out
    inner = out.get(path[0]) or {}
    if not isinstance(inner, dict):
        raise ValueError(f"args.{path[0]} of the base is not a mapping")
    out[path[0]] = _set(inner, path[1:], value)
    return out


def _settings(spec: SweepSpec) -> list[dict[str, Any]]:
    knobs = [k for k in KNOBS if k in spec.vary]
    if spec.mode == "one-at-a-time":
        return [{k: v} for k in knobs for v in spec.vary[k]]
    combos: list[dict[str, Any]] = [{}]
    for k in knobs:
        combos = [{**c, k: v} for c in combos for v in spec.vary[k]]
    return combos


def _variant_id(name: str, base: str, several: bool, setting: dict[str, Any]) -> str:
    knobs = ",".join(f"{k}={variant_value_text(v)}" for k, v in setting.items())
    return f"{name}/{base}/{knobs}" if several else f"{name}/{knobs}"


def _variant_spec(base: dict[str, Any], setting: dict[str, Any]) -> dict[str, Any]:
    args = dict(base.get("args") or {})
    extra: dict[str, Any] = {}
    for knob, value in setting.items():
        if knob == "dataset":
            extra["datasets"] = [value]
        else:
            args = _set(args, KNOBS[knob], value)
    return {**base, **extra, "args": args}


def expand_sweeps(
    sweeps: dict[str, SweepSpec], judges: dict[str, dict[str, Any]], validate: Any
) -> tuple[dict[str, dict[str, Any]], dict[str, SweepVariant]]:
    """The variants' raw judge specs (id → spec as params.yaml would write it) and what each one is.

    `judges`: the declared judges as raw mappings; `validate(raw) -> Any` checks one spec (JudgeSpec), raising
    ValidationError. Errors are ValueError naming the sweep, the base, the knob and the value."""
    specs: dict[str, dict[str, Any]] = {}
    info: dict[str, SweepVariant] = {}
    for name, sweep in sweeps.items():
        where = f"judge.sweeps.{name}"
        if not SLUG.fullmatch(name):
            raise ValueError(f"{where}: a sweep name must be lowercase letters, digits, '.', '_' or '-' (it starts every variant id)")
        several = sweep.bases is not None
        for base_id in sweep.base_ids():
            base = judges.get(base_id)
            if base is None or "/" in base_id:
                field = "bases" if several else "base"
                raise ValueError(f"{where}.{field}: '{base_id}' is not a judge declared under judge.judges")
            for setting in _settings(sweep):
                vid = _variant_id(name, base_id, several, setting)
                what = (f"base {base_id}: " if several else "") + ", ".join(f"knob {k} value {v!r}" for k, v in setting.items())
                try:
                    check_name(vid, "variant id")  # a knob value with a line break would split every table row
                    spec = _variant_spec(base, setting)
                    validate(spec)
                except (ValidationError, ValueError) as exc:
                    why = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()) if isinstance(exc, ValidationError) else str(exc)
                    raise ValueError(f"{where}: {what}: {why}") from None
                if vid in specs:
                    raise ValueError(f"{where}: {what}: two values give the same variant id '{vid}'")
                declared = judges.get(vid)
                if declared is not None and declared != spec:
                    raise ValueError(f"{where}: {what}: variant id '{vid}' clashes with a judge declared under judge.judges")
                specs[vid] = spec
                info[vid] = SweepVariant(sweep=name, base=base_id, knobs=setting)
    return specs, info
