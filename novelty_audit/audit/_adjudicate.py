"""The adjudication file: people's decisions on evidence changes, append-only.

One row per decision with the columns `dataset, judge, pair, from, to, decision, reason, who,
when` (CSV with a header, or a YAML list of mappings with those keys). A change is named by
(dataset, judge, pair, from verdict, to verdict), so a decision follows the change into every
later audit that shows it. The last row for a change is in force; earlier rows stay in the file
and are shown as superseded.
"""

from __future__ import annotations

import csv
import io
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from ..errors import BadInputError
from ._model import Adjudication, AdjudicationRecord

__all__ = ["ADJUDICATION_FIELDS", "load_adjudications", "append_adjudication", "index_adjudications"]

ADJUDICATION_FIELDS = ("dataset", "judge", "pair", "from", "to", "decision", "reason", "who", "when")
_DECISIONS = ("correct", "incorrect", "unclear")


def _rows(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = [f for f in ADJUDICATION_FIELDS if f not in (reader.fieldnames or [])]
        if missing:
            raise BadInputError(
                f"{path}: header is missing column(s) {', '.join(missing)}",
                hint=f"the header must be: {','.join(ADJUDICATION_FIELDS)}",
            )
        return list(reader)
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BadInputError(f"{path}: not valid YAML ({exc})") from None
        if doc is None:
            return []
        if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
            raise BadInputError(f"{path}: expected a list of mappings", hint=f"each with keys {', '.join(ADJUDICATION_FIELDS)}")
        return doc
    raise BadInputError(f"{path}: unknown adjudication file type '{path.suffix}'", hint="use .csv, .yaml or .yml")


def _check_when(value: str, path: Path, row: int) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise BadInputError(
            f"{path}: row {row}, field 'when': '{value}' is not an ISO 8601 date or time",
            hint="e.g. 2026-11-29 or 2026-11-29T14:05:00+00:00",
        ) from None
    return value


def load_adjudications(path: str | Path | None) -> list[AdjudicationRecord]:
    """Every row of the adjudication file in file order; a missing file means no decisions yet."""
    if path is None:
        return []
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for i, raw in enumerate(_rows(path), start=1):
        row = {k: ("" if raw.get(k) is None else str(raw.get(k)).strip()) for k in ADJUDICATION_FIELDS}
        extra = sorted(set(raw) - set(ADJUDICATION_FIELDS))
        if extra:
            raise BadInputError(f"{path}: row {i} has unknown field(s) {', '.join(map(str, extra))}",
                                hint=f"allowed: {', '.join(ADJUDICATION_FIELDS)}")
        for field in ("dataset", "judge", "pair", "from", "to", "decision", "who", "when"):
            if not row[field]:
                raise BadInputError(f"{path}: row {i}, field '{field}' is empty", hint="every field but reason is required")
        if row["decision"] not in _DECISIONS:
            raise BadInputError(
                f"{path}: row {i}, field 'decision': '{row['decision']}' is not one of {', '.join(_DECISIONS)}"
            )
        out.append(
            AdjudicationRecord(
                dataset=row["dataset"],
                judge=row["judge"],
                pair=row["pair"],
                from_verdict=row["from"],
                to_verdict=row["to"],
                decision=row["decision"],  # type: ignore[arg-type]
                reason=row["reason"],
                who=row["who"],
                when=_check_when(row["when"], path, i),
                row=i,
            )
        )
    return out


def index_adjudications(records: list[AdjudicationRecord]) -> dict[tuple[str, str, str, str, str], Adjudication]:
    """Group rows by the change they name; the last row is in force, earlier ones are superseded."""
    grouped: dict[tuple[str, str, str, str, str], list[AdjudicationRecord]] = {}
    for r in records:
        grouped.setdefault((r.dataset, r.judge, r.pair, r.from_verdict, r.to_verdict), []).append(r)
    return {k: Adjudication(current=rows[-1], superseded=rows[:-1]) for k, rows in grouped.items()}


def append_adjudication(path: str | Path, row: dict[str, str]) -> Path:
    """Append one decision (never rewrite earlier rows); creates the file with its header if needed."""
    path = Path(path)
    missing = [f for f in ADJUDICATION_FIELDS if f not in row or (f != "reason" and not str(row[f]).strip())]
    if missing:
        raise BadInputError(f"adjudication for {path}: missing field(s) {', '.join(missing)}")
    if row["decision"] not in _DECISIONS:
        raise BadInputError(f"adjudication for {path}: decision '{row['decision']}' is not one of {', '.join(_DECISIONS)}")
    _check_when(str(row["when"]), path, len(load_adjudications(path)) + 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    ordered = {f: str(row[f]) for f in ADJUDICATION_FIELDS}
    if path.suffix.lower() == ".csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=ADJUDICATION_FIELDS, lineterminator="\n")
        if not path.exists() or path.stat().st_size == 0:
            writer.writeheader()
        writer.writerow(ordered)
        data = buf.getvalue()
    elif path.suffix.lower() in (".yaml", ".yml"):
        data = yaml.safe_dump([ordered], sort_keys=False, allow_unicode=True)
    else:
        raise BadInputError(f"{path}: unknown adjudication file type '{path.suffix}'", hint="use .csv, .yaml or .yml")
    # O_APPEND: earlier rows are never rewritten, and concurrent appends do not interleave.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data.encode("utf-8"))
    finally:
        os.close(fd)
    return path
