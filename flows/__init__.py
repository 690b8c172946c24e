"""Prefect flows over the pipeline: `evaluate` (every dvc.yaml stage) and `drift_watch` (canary re-asks).

Flows orchestrate only: every stage runs through `novelty_audit.pipeline.run_stage` / `stages.<name>.run`,
and our manifests, not Prefect's cache, decide reuse. See docs/design/flows.md.
"""

from .drift import drift_watch
from .evaluate import evaluate

__all__ = ["drift_watch", "evaluate"]
