"""Published reference results: figures from papers, shown beside measured judges, never merged with them.

The data file (data/published/reference-results.yaml) is pinned by sha256 under params.yaml
`report.published`, so the report stage reads it as a checked input. Every value is stored as a share
of 1 (sources print percentages); a published range is `low`/`high` with `value` null.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import Field, ValidationError, model_validator

from .artifacts import check_pinned_file
from .config import Frozen
from .errors import BadInputError

__all__ = ["PublishedResult", "load_published"]


class PublishedResult(Frozen):
    """One published figure, as published ("published, not rerun" wherever it is shown)."""

    source: str
    """Short citation (authors, title, year)."""
    url: str | None = None
    """Where the figure is published; null when the source was not recorded."""
    dataset: str | None = None
    """The project dataset it was measured on (params.yaml pin.datasets name), or null."""
    judge: str
    """The judge's display name as the source names it (never a configured judge id)."""
    metric: str
    """strict_accuracy where the source defines it as this project does; otherwise the source's own name."""
    value: float | None = Field(default=None, ge=0, le=1)
    """The figure as a share of 1 (74.03 % → 0.7403); null for a range."""
    low: float | None = Field(default=None, ge=0, le=1)
    """Lower end of a published range (share of 1)."""
    high: float | None = Field(default=None, ge=0, le=1)
    approximate: bool = False
    """The source gives the figure as approximate (≈)."""
    prompt: str | None = None
    """The prompt it was measured with, as the source names it (reference, P3, …)."""
    note: str | None = None

    @model_validator(mode="after")
    def _one_figure(self) -> PublishedResult:
        has_range = self.low is not None or self.high is not None
        if self.value is None and not (self.low is not None and self.high is not None):
            raise ValueError("give value, or both low and high (a published range)")
        if self.value is not None and has_range:
            raise ValueError("give value or low/high, not both")
        if has_range and self.low > self.high:  # type: ignore[operator]
            raise ValueError(f"low {self.low} is above high {self.high}")
        return self


class _PublishedFile(Frozen):
    results: list[PublishedResult]


def load_published(path: str | Path, sha256: str) -> list[PublishedResult]:
    """Read the published-results file after checking its bytes against the pin; errors name file and field."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"report.published: {path} not found", hint="check report.published.path in params.yaml")
    check_pinned_file(path, sha256, what=f"report.published: {path}",
                      hint="if the change is deliberate, put the new digest in params.yaml report.published.sha256")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise BadInputError(f"{path}: not valid YAML ({exc})") from None
    try:
        return list(_PublishedFile.model_validate(raw).results)
    except ValidationError as exc:
        lines = [f"{path}: invalid published results"]
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"  {loc}: {err['msg']}")
        raise BadInputError("\n".join(lines), hint="fields: " + ", ".join(PublishedResult.model_fields)) from None
