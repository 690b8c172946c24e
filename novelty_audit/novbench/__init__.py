"""NovBench: the generative novelty-evaluation track (pin → review → metrics → report section).

Papers of a NovBench-format file (pin source `novbench`) are normalized into tables (`_tables`), generators
write a three-section novelty evaluation per paper (`_generate`, `_llmgen`; the judge stage's `review`
task), the evaluations are scored per paper and averaged (`_metrics`) and shown in the report
(`_report`). docs/design/novbench.md has the details.

Exports are resolved on first use (`_LAZY`), so a stage importing one of them (the pin stage reads the tables)
imports, and carries in its code digest, only the module that defines it: the code digest follows `_LAZY` for
the names a module imports (novelty_audit/artifacts/_code.py).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "NovbenchTables": "._tables",
    "TABLE_KEYS": "._tables",
    "normalize_novbench": "._tables",
    "read_list_field": "._tables",
    "parse_evaluation": "._parse",
    "REVIEW_KEYS": "._generate",
    "ReviewRun": "._review",
    "build_review_generators": "._review",
    "review_inputs": "._review",
    "run_reviews": "._review",
    "write_reviews": "._review",
    "NOVBENCH_OUTPUTS": "._stage",
    "NovbenchScoring": "._stage",
    "novbench_inputs": "._stage",
    "resolve_fluency": "._stage",
    "score_reviews": "._stage",
    "EXPERT_REUSED_NOTE": "._published",
    "PUBLISHED_FILE": "._published",
    "check_published": "._published",
    "published_rows": "._published",
    "read_published": "._published",
    "ReportSection": "._report",
    "report_section": "._report",
}
"""Export name → the module defining it (relative to this package)."""

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
