"""The adjudication file: people's decisions on evidence changes, append-only.

One row per decision with the columns `dataset, judge, pair, from, to, decision, reason, who,
when, evidence_before, evidence_after, group` (CSV with a header, or a YAML list of mappings with
those keys). A decision is bound to its change's evidence: it applies to a change with the same
(dataset, judge, pair, from verdict, to verdict) AND the same evidence digests before and after, so
a different evidence change on the same pair and verdicts is unadjudicated again. The last row for a
change is in force; earlier rows stay in the file and are shown as superseded.

Legacy rows (files written before the binding: no evidence digests, or a CSV with the 9-column
header) keep loading but are never applied: a change whose key and verdicts they name lists them as
`unbound` and stays `unadjudicated` until someone decides it again. Appending to a CSV with the old
header writes the three new values as extra trailing columns (the header is never rewritten); they are
read back by position.
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

__all__ = ["ADJUDICATION_FIELDS", "LEGACY_FIELDS", "AdjudicationIndex", "load_adjudications", "append_adjudication",
           "append_adjudications", "index_adjudications"]

LEGACY_FIELDS = ("dataset", "judge", "pair", "from", "to", "decision", "reason", "who", "when")
BINDING_FIELDS = ("evidence_before", "evidence_after", "group")
ADJUDICATION_FIELDS = (*LEGACY_FIELDS, *BINDING_FIELDS)
_DECISIONS = ("correct", "incorrect", "unclear")
_EXTRA = "__extra__"


def _rows(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text), restkey=_EXTRA)
        header = list(reader.fieldnames or [])
        missing = [f for f in LEGACY_FIELDS if f not in header]
        if missing:
            raise BadInputError(
                f"{path}: header is missing column(s) {', '.join(missing)}",
                hint=f"the header must be: {','.join(ADJUDICATION_FIELDS)}",
            )
        rows = []
        for raw in reader:
            extra = raw.pop(_EXTRA, None) or []
            # A legacy header: the binding values were appended as trailing columns; read them by position.
            absent = [f for f in BINDING_FIELDS if f not in header]
            for f, v in zip(absent, extra):
                raw[f] = v
            if len(extra) > len(absent):
                raise BadInputError(f"{path}: row {len(rows) + 1} has {len(extra) - len(absent)} value(s) more than the header")
            rows.append(raw)
        return rows
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
        if bool(row["evidence_before"]) != bool(row["evidence_after"]):
            raise BadInputError(f"{path}: row {i}: evidence_before and evidence_after must both be set or both be empty")
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
                evidence_before=row["evidence_before"] or None,
                evidence_after=row["evidence_after"] or None,
                group=row["group"] or None,
            )
        )
    return out


class AdjudicationIndex:
    """Rows by the change they are bound to; the last row is in force, earlier ones are superseded."""

    def __init__(self, records: list[AdjudicationRecord]):
        self.bound: dict[tuple[str, ...], list[AdjudicationRecord]] = {}
        self.legacy: dict[tuple[str, ...], list[AdjudicationRecord]] = {}
        for r in records:
            key = (r.dataset, r.judge, r.pair, r.from_verdict, r.to_verdict)
            if r.bound:
                self.bound.setdefault((*key, r.evidence_before or "", r.evidence_after or ""), []).append(r)
            else:
                self.legacy.setdefault(key, []).append(r)

    def lookup(
        self, dataset: str, judge: str, pair: str, from_verdict: str, to_verdict: str, evidence: tuple[str | None, str | None]
    ) -> tuple[Adjudication | None, list[AdjudicationRecord]]:
        """(the decision bound to this change, legacy rows naming its key and verdicts — shown, not applied)."""
        key = (dataset, judge, pair, from_verdict, to_verdict)
        rows = self.bound.get((*key, evidence[0] or "", evidence[1] or ""), [])
        adj = Adjudication(current=rows[-1], superseded=rows[:-1]) if rows else None
        return adj, list(self.legacy.get(key, []))


def index_adjudications(records: list[AdjudicationRecord]) -> AdjudicationIndex:
    """Index rows by the change (and evidence) they are bound to."""
    return AdjudicationIndex(records)


def append_adjudication(path: str | Path, row: dict[str, str]) -> Path:
    """Append one decision (never rewrite earlier rows); creates the file with its header if needed."""
    return append_adjudications(path, [row])


def append_adjudications(path: str | Path, rows: list[dict[str, str]]) -> Path:
    """Append several decisions in one write (a group): all or none land."""
    path = Path(path)
    for row in rows:
        missing = [f for f in ADJUDICATION_FIELDS if f not in row or (f not in ("reason", "group") and not str(row[f] or "").strip())]
        if missing:
            raise BadInputError(f"adjudication for {path}: missing field(s) {', '.join(missing)}")
        if row["decision"] not in _DECISIONS:
            raise BadInputError(f"adjudication for {path}: decision '{row['decision']}' is not one of {', '.join(_DECISIONS)}")
        _check_when(str(row["when"]), path, len(load_adjudications(path)) + 1)
    ordered = [{f: str(r[f] or "") for f in ADJUDICATION_FIELDS} for r in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        data = _csv_lines(path, ordered)
    elif path.suffix.lower() in (".yaml", ".yml"):
        data = yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True)
    else:
        raise BadInputError(f"{path}: unknown adjudication file type '{path.suffix}'", hint="use .csv, .yaml or .yml")
    _append_bytes(path, data)
    return path


def _csv_lines(path: Path, rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    if not path.exists() or path.stat().st_size == 0:
        fields: tuple[str, ...] = ADJUDICATION_FIELDS
        header = True
    else:
        with path.open(encoding="utf-8", newline="") as fh:
            existing = next(csv.reader(fh), [])
        # A legacy header stays as it is: the binding values follow as trailing columns (read back by position).
        fields = tuple(existing) + tuple(f for f in BINDING_FIELDS if f not in existing)
        header = False
    writer = csv.writer(buf, lineterminator="\n")
    if header:
        writer.writerow(fields)
    for r in rows:
        writer.writerow([r.get(f, "") for f in fields])
    if not header and path.read_bytes()[-1:] not in (b"\n", b""):
        return "\n" + buf.getvalue()
    return buf.getvalue()


def _append_bytes(path: Path, data: str) -> None:
    # O_APPEND: earlier rows are never rewritten, and concurrent appends do not interleave.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data.encode("utf-8"))
    finally:
        os.close(fd)
