"""Serve the scheduled deployments: the full evaluation and the judge drift watch.

    prefect server start                      # once, in its own terminal (SQLite under ~/.prefect)
    prefect config set PREFECT_API_URL=http://127.0.0.1:4200/api
    python -m flows.serve [--params params.yaml] [--project-dir .]

Cron schedules come from params.yaml `flows.schedules`. `serve` keeps running and starts each
scheduled run in a subprocess in the project directory; stop it with Ctrl-C.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefect import serve
from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.schedules import Cron

from novelty_audit.pipeline import load_checked_params

from .drift import drift_watch
from .evaluate import evaluate


def deployments(project_dir: str | Path = ".", params_path: str = "params.yaml") -> list[RunnerDeployment]:
    """The two deployments with their cron schedules; runs use the absolute project directory."""
    root = Path(project_dir).resolve()
    sched = load_checked_params(root / params_path).flows.schedules
    params = {"project_dir": str(root), "params_path": params_path}
    return [
        evaluate.to_deployment(
            name="novelty-audit-evaluate",
            schedules=[Cron(sched.evaluate, timezone=sched.timezone)],
            parameters=params,
            description="Every dvc.yaml stage in order; unchanged stage identities are reused.",
            tags=["novelty-audit"],
            entrypoint_type=EntrypointType.MODULE_PATH,  # the installed package, whatever the cwd
        ),
        drift_watch.to_deployment(
            name="novelty-audit-drift",
            schedules=[Cron(sched.drift, timezone=sched.timezone)],
            parameters=params,
            description="Re-ask API judges on the canary with the call cache bypassed; audit the changes.",
            tags=["novelty-audit"],
            entrypoint_type=EntrypointType.MODULE_PATH,  # the installed package, whatever the cwd
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project-dir", default=".", help="project root (params.yaml, dvc.yaml)")
    ap.add_argument("--params", default="params.yaml", help="params file, relative to the project root")
    args = ap.parse_args(argv)
    serve(*deployments(args.project_dir, args.params))


if __name__ == "__main__":
    main()
