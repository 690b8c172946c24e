"""NovBench: the generative novelty-evaluation track (pin → review → metrics → report section).

Papers of a NovBench-format file (pin source `novbench`) are normalized into tables (`_tables`), generators
write a three-section novelty evaluation per paper (`_generate`, `_llmgen`; the judge stage's `review`
task), the evaluations are scored per paper and averaged (`_metrics`) and shown in the report
(`_report`). docs/design/novbench.md has the details.

Exports are resolved lazily so that a stage importing one submodule (the pin stage reads `_tables`) does
not carry the others in its code digest.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ReportSection", "published_rows", "report_section", "normalize_novbench", "parse_evaluation"]

_WHERE = {
    "ReportSection": "_report",
    "published_rows": "_report",
    "report_section": "_report",
    "normalize_novbench": "_tables",
    "parse_evaluation": "_parse",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
