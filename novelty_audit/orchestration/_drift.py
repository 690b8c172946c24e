"""The drift watch without Prefect: where it writes, which judges it re-asks, how it reports.

The drift watch re-asks API judges on the canary with their call cache bypassed and audits the fresh
verdicts against the previous drift run. It never writes into `store.artifacts` (DVC's outputs) nor
into the main store's runs ledger or call cache: everything goes under `<store.root>/<flows.drift_dir>/`,
which is a store of its own (objects, manifests, run log, runs ledger, call cache) with an
`artifacts/` directory in the pin/judge layout. `dvc status`, `novelty-audit audit` and the replay of the
main pipeline from its call cache are therefore unaffected. The drift flow publishes its own audit (drift
run vs the previous drift run); `novelty-audit audit --params P` with a params file whose `store.root` is
the drift store audits any two drift runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..artifacts import Store
from ..errors import ConfigError
from ..markdown import md_text

if TYPE_CHECKING:  # params.py imports the flows section model; keep this module out of that cycle
    from ..audit import AuditResult
    from ..params import Params

__all__ = ["API_BACKENDS", "NO_API_JUDGE", "DriftPaths", "canary_datasets", "drift_judges", "drift_markdown", "drift_params", "drift_paths", "drift_rows"]

API_BACKENDS = ("openai", "anthropic")
"""Backends that answer through a provider's API: their answers can drift, so the watch re-asks them."""


class DriftPaths(NamedTuple):
    """Where one project's drift watch writes."""

    root: Path
    """The drift store root (objects, manifests, runlog.jsonl, runs.jsonl, cache/)."""
    artifacts: Path
    """Stage outputs of the latest drift check: pin/ (the canary) and judge/."""

    @property
    def store(self) -> Store:
        return Store(self.root)


def drift_paths(params: Params) -> DriftPaths:
    """`<store.root>/<flows.drift_dir>` and its `artifacts/`."""
    root = Path(params.store.root) / params.flows.drift_dir
    return DriftPaths(root=root, artifacts=root / "artifacts")


def drift_judges(params: Params) -> list[str]:
    """The judges to re-ask: `flows.canary.judges` if set, else every enabled judge with an API backend (possibly none)."""
    configured = params.judge.judges
    names = params.flows.canary.judges
    if names is not None:
        unknown = [n for n in names if n not in configured]
        if unknown:
            import difflib

            close = {n: difflib.get_close_matches(n, list(configured), n=1) for n in unknown}
            hint = "; ".join(f"{n}: did you mean {c[0]}?" for n, c in close.items() if c) or f"judges: {', '.join(configured)}"
            raise ConfigError(f"params.yaml flows.canary.judges: unknown judge(s) {', '.join(unknown)}", hint=hint)
        return list(names)
    return [n for n, spec in sorted(configured.items()) if spec.enabled and spec.backend in API_BACKENDS]


NO_API_JUDGE = (
    "no enabled API judge to watch: the drift watch did nothing. Enable a judge with backend "
    + " or ".join(API_BACKENDS)
    + " in params.yaml judge.judges (and set its key), or list judges in flows.canary.judges"
)
"""What the drift watch says when `drift_judges` is empty (the default params): it finishes as a no-op, so the
served daily deployment succeeds until there is a judge to watch."""


def canary_datasets(params: Params, judges: Sequence[str]) -> list[str]:
    """The datasets the canary draws from: `flows.canary.datasets`, else every dataset a watched judge is asked
    about (judge.datasets, or its own `datasets`, such as a sweep's dataset variant), pinned or built by pools."""
    if params.flows.canary.datasets:
        return list(params.flows.canary.datasets)
    out: list[str] = []
    for name in judges:
        out += [d for d in params.judge.datasets_of(name) if d not in out]
    return out


def _asked(params: Params, name: str, datasets: Sequence[str]) -> list[str] | None:
    """The canary datasets judge `name` is asked about in a drift check (None: all of them), as in the main run:
    its own datasets, else judge.datasets (with `flows.canary.datasets` set: the canary's). A judge asked about
    none of the canary's datasets is refused, naming them, rather than watched on nothing."""
    spec = params.judge.judges[name]
    own = spec.datasets if spec.datasets is not None else (None if params.flows.canary.datasets else params.judge.datasets)
    asked = list(datasets) if own is None else [d for d in own if d in datasets]
    if not asked:
        raise ConfigError(
            f"params.yaml flows.canary.datasets: judge {name} is asked about none of them ({', '.join(datasets) or 'none'}); "
            f"it is asked about {', '.join(own or ()) or 'none'}",
            hint=f"add one of its datasets to flows.canary.datasets, or leave {name} out of flows.canary.judges",
        )
    return None if set(asked) == set(datasets) else asked


def drift_params(params: Params, judges: Sequence[str], datasets: Sequence[str]) -> Params:
    """The params the judge stage runs with in a drift check.

    Only the listed judges run (enabled, call cache bypassed), on the pairwise task of the canary's
    datasets (each judge on those of them it is asked about in the main run, see `_asked`), with the drift
    store as store root so fresh answers and outputs stay out of the main store; the injection probe is not
    part of a drift check (it would ask every probe pair afresh).
    Every other judge setting (prompts, votes, sampling, prices, budget) is the user's.
    """
    paths = drift_paths(params)
    specs = {
        n: params.judge.judges[n].model_copy(update={"enabled": True, "refresh": True, "datasets": _asked(params, n, datasets)})
        for n in judges
    }
    judge = params.judge.model_copy(
        # Sweep variants are judges of their own once params load; the sweeps themselves would be expanded again
        # from bases that may not be watched (a variant listed in flows.canary.judges without its base).
        update={"judges": specs, "refresh": True, "tasks": ["pairwise"], "datasets": list(datasets), "probe_datasets": [],
                "probe_judges": None, "sweeps": {}}
    )
    store = params.store.model_copy(update={"root": str(paths.root), "artifacts": str(paths.artifacts)})
    return params.model_copy(update={"judge": judge, "store": store})


def _diff_text(change: Any) -> str:
    diffs = list(change.knobs or []) + list(change.inputs or [])
    return "; ".join(f"{d.name}: {d.before} → {d.after}" for d in diffs)


def drift_rows(result: AuditResult) -> list[dict[str, Any]]:
    """One row per changed verdict, for a table artifact."""
    return [
        {
            "dataset": c.dataset,
            "judge": c.judge,
            "pair": c.pair,
            "before": c.before,
            "after": c.after,
            "cause": c.cause,
            "what moved": _diff_text(c),
            "titles": " | ".join(c.titles),
        }
        for c in result.changes
    ]


def drift_markdown(result: AuditResult | None, *, judges: Sequence[str], canary_pairs: int, facts: dict[str, Any]) -> str:
    """The drift check in a few lines: what was re-asked, what it cost, and changes by cause."""
    lines = [
        "# Judge drift watch",
        "",
        (
            f"Re-asked {md_text(', '.join(judges))} on {canary_pairs} canary pair(s) with the call cache bypassed: "
            f"{int(facts.get('calls', 0))} call(s), ${float(facts.get('cost_usd', 0.0)):.4f}."
        ),
        "",
    ]
    if result is None:
        lines.append("First drift check: recorded as the baseline, nothing to compare yet.")
        return "\n".join(lines) + "\n"
    s = result.summary
    lines += [
        f"Compared {result.compared} verdict(s) of run `{result.from_run}` → `{result.to_run}`: **{len(result.changes)} changed**.",
        "",
        "| cause | changes | meaning |",
        "|---|---:|---|",
        f"| spurious | {s['spurious']} | same call keys, inputs and provider model, different verdict (nondeterminism) |",
        f"| provider | {s['provider']} | the provider-reported model id moved |",
        f"| config | {s['config']} | how the judge is asked changed (params.yaml) |",
        f"| evidence | {s['evidence']} | what the judge saw changed |",
        f"| harness | {s['harness']} | only our code or call keys changed |",
        f"| dataset | {s['dataset']} | pair present on one side only |",
        "",
        f"{s['unchanged_with_changed_digests']} verdict(s) held although a digest moved.",
    ]
    return "\n".join(lines) + "\n"
