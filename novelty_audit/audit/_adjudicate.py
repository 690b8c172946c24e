"""The adjudication file: people's decisions on evidence changes, append-only.

One row per decision with the columns `dataset, judge, pair, from, to, decision, reason, who,
when, evidence_before, evidence_after, group` (CSV with a header, or a YAML list of mappings with
those keys). A decision is bound to its change's evidence: it applies to a change with the same
(dataset, judge, pair, from verdict, to verdict) AND the same evidence digests before and after, so
a different evidence change on the same pair and verdicts is unadjudicated again. The last row for a
change is in force; earlier rows stay in the file and are shown as superseded.

Every field is checked before a row is written and again when the file is read (docs/design/review.md):
bounded length (`FIELD_LIMITS`), no control characters or bidi overrides, newlines only in `reason` (CRLF and
CR are stored as LF). In the CSV a value that a spreadsheet would run as a formula (leading `=`, `+`, `-`, `@`,
tab or CR) is stored with a leading `'`, and so is a value that already starts with `'`; reading strips one
leading `'`, so every value reads back exactly as it was given. A row that cannot be read is a BadInputError
naming its row and line, never a crash. Writers hold an exclusive `flock` on the file itself
(`novelty_audit.artifacts.file_lock`): the CLI, the review page and group decisions cannot interleave or
write the header twice; readers take the shared lock.

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
import re
import unicodedata
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from ..artifacts import file_lock
from ..errors import BadInputError
from ._model import Adjudication, AdjudicationRecord

__all__ = ["ADJUDICATION_FIELDS", "FIELD_LIMITS", "LEGACY_FIELDS", "AdjudicationIndex", "check_field", "load_adjudications",
           "append_adjudication", "append_adjudications", "index_adjudications"]

LEGACY_FIELDS = ("dataset", "judge", "pair", "from", "to", "decision", "reason", "who", "when")
BINDING_FIELDS = ("evidence_before", "evidence_after", "group")
ADJUDICATION_FIELDS = (*LEGACY_FIELDS, *BINDING_FIELDS)
_DECISIONS = ("correct", "incorrect", "unclear")
_EXTRA = "__extra__"

FIELD_LIMITS: dict[str, int] = {"reason": 4000, "who": 100}
"""Characters allowed per field; every other field (ids, verdicts, digests, dates) at most `_ID_LIMIT`. A person's
reason is a paragraph or two; the bound keeps every row far below the CSV reader's field limit (131072)."""
_ID_LIMIT = 512
_MULTILINE = frozenset({"reason"})

# C0/C1 controls (tab and newline are handled per field), bidi embeddings/overrides/isolates and marks, line and
# paragraph separators, BOM, lone surrogates: they hide, reorder or split text a person reads as one line.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                        "\u2028\u2029\ufeff\ud800-\udfff]")
_FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r", "'")
"""A CSV cell starting with one of these gets a leading `'` (the last one so that the escape reads back)."""


def check_field(name: str, value: Any) -> str:
    """`value` as it is stored: a string within its length bound, without control characters or bidi controls,
    newlines only in `reason` (CRLF/CR → LF). Raises BadInputError naming the field and what is wrong."""
    text = "" if value is None else str(value)
    if name in _MULTILINE:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    limit = FIELD_LIMITS.get(name, _ID_LIMIT)
    if len(text) > limit:
        raise BadInputError(f"field '{name}': {len(text)} characters; at most {limit} are allowed",
                            hint="shorten it" + (" (a reason is a few sentences; link to longer notes)" if name == "reason" else ""))
    bad = _FORBIDDEN.search(text) or (None if name in _MULTILINE else re.search("[\t\n\r]", text))
    if bad:
        ch = bad.group()
        what = unicodedata.name(ch, "a control character") if not 0xD800 <= ord(ch) <= 0xDFFF else "a lone surrogate"
        raise BadInputError(
            f"field '{name}': character U+{ord(ch):04X} ({what}) at position {bad.start() + 1} is not allowed",
            hint=("control characters and bidi controls can hide or reorder what a reader sees"
                  + ("" if name in _MULTILINE else "; this field is one line")),
        )
    return text


def _checked(row: Mapping[str, Any], where: str) -> dict[str, str]:
    out = {}
    for f in ADJUDICATION_FIELDS:
        try:
            out[f] = check_field(f, row.get(f))
        except BadInputError as exc:
            raise BadInputError(f"{where}, {exc.message}", hint=exc.hint) from None
    return out


def _escape(value: str) -> str:
    return "'" + value if value.startswith(_FORMULA_LEAD) else value


def _unescape(value: str) -> str:
    return value[1:] if value.startswith("'") else value


def _csv_rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """[(line where the row starts, {field: value})] of a CSV adjudication file (values un-escaped)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next((r for r in reader if r), [])
    except csv.Error as exc:
        raise BadInputError(f"{path}: the header line cannot be read ({exc})",
                            hint=f"it must be: {','.join(ADJUDICATION_FIELDS)}") from None
    missing = [f for f in LEGACY_FIELDS if f not in header]
    if missing:
        raise BadInputError(
            f"{path}: header is missing column(s) {', '.join(missing)}",
            hint=f"the header must be: {','.join(ADJUDICATION_FIELDS)}",
        )
    # A legacy header: the binding values were appended as trailing columns; read them by position.
    absent = [f for f in BINDING_FIELDS if f not in header]
    rows: list[tuple[int, dict[str, Any]]] = []
    while True:
        line = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            return rows
        except csv.Error as exc:
            raise BadInputError(
                f"{path}: row {len(rows) + 1} (line {line}) cannot be read: {exc}",
                hint=f"novelty-audit writes at most {max(FIELD_LIMITS.values())} characters per field, so the row was "
                     "damaged or edited by hand: repair or delete that row (every other row is intact)",
            ) from None
        if not values:
            continue  # a blank line
        n = len(rows) + 1
        if len(values) > len(header) + len(absent):
            raise BadInputError(f"{path}: row {n} (line {line}) has {len(values) - len(header) - len(absent)} value(s) "
                                f"more than the header")
        raw: dict[str, Any] = dict(zip(header, (_unescape(v) for v in values)))
        raw.update(zip(absent, (_unescape(v) for v in values[len(header):])))
        rows.append((line, raw))


def _yaml_rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadInputError(f"{path}: not valid YAML ({exc})") from None
    if doc is None:
        return []
    if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
        raise BadInputError(f"{path}: expected a list of mappings", hint=f"each with keys {', '.join(ADJUDICATION_FIELDS)}")
    return [(0, r) for r in doc]


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise BadInputError(f"{path}: unknown adjudication file type '{path.suffix}'", hint="use .csv, .yaml or .yml")


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    kind = _kind(path)
    with file_lock(path, shared=True):
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadInputError(f"{path}: not UTF-8 text (byte {exc.start})", hint="repair the file; it holds text only") from None
    if not text.strip():
        return []
    return _csv_rows(path, text) if kind == "csv" else _yaml_rows(path, text)


def _check_when(value: str, where: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise BadInputError(
            f"{where}, field 'when': '{value}' is not an ISO 8601 date or time",
            hint="e.g. 2026-11-29 or 2026-11-29T14:05:00+00:00",
        ) from None
    return value


def load_adjudications(path: str | Path | None) -> list[AdjudicationRecord]:
    """Every row of the adjudication file in file order; a missing file means no decisions yet.

    A row that cannot be read or fails a check is a BadInputError naming the file, row (and CSV line) and field."""
    if path is None:
        return []
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for i, (line, raw) in enumerate(_rows(path), start=1):
        try:
            out.append(_record(raw, f"{path}: row {i}", i))
        except BadInputError as exc:
            # Rows can span lines (a reason with newlines): the line tells an editor where the row starts.
            raise BadInputError(exc.message + (f" (the row starts on line {line})" if line else ""), hint=exc.hint) from None
    return out


def _record(raw: dict[str, Any], where: str, i: int) -> AdjudicationRecord:
    extra = sorted(map(str, set(raw) - set(ADJUDICATION_FIELDS)))
    if extra:
        raise BadInputError(f"{where} has unknown field(s) {', '.join(extra)}",
                            hint=f"allowed: {', '.join(ADJUDICATION_FIELDS)}")
    # The reason is kept exactly (its newlines and indentation are the person's); the other fields are trimmed.
    row = {k: v if k == "reason" else v.strip() for k, v in _checked(raw, where).items()}
    if bool(row["evidence_before"]) != bool(row["evidence_after"]):
        raise BadInputError(f"{where}: evidence_before and evidence_after must both be set or both be empty")
    for field in ("dataset", "judge", "pair", "from", "to", "decision", "who", "when"):
        if not row[field]:
            raise BadInputError(f"{where}, field '{field}' is empty", hint="every field but reason is required")
    if row["decision"] not in _DECISIONS:
        raise BadInputError(f"{where}, field 'decision': '{row['decision']}' is not one of {', '.join(_DECISIONS)}")
    return AdjudicationRecord(
        dataset=row["dataset"],
        judge=row["judge"],
        pair=row["pair"],
        from_verdict=row["from"],
        to_verdict=row["to"],
        decision=row["decision"],  # type: ignore[arg-type]
        reason=row["reason"],
        who=row["who"],
        when=_check_when(row["when"], where),
        row=i,
        evidence_before=row["evidence_before"] or None,
        evidence_after=row["evidence_after"] or None,
        group=row["group"] or None,
    )


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
    """Append several decisions in one write (a group): all or none land.

    Every field is checked first (`check_field`); the write happens under the file's exclusive lock, which also
    decides whether the header is still to be written."""
    path = Path(path)
    kind = _kind(path)
    ordered = []
    for i, row in enumerate(rows, start=1):
        where = f"adjudication for {path} (decision {i} of {len(rows)})" if len(rows) > 1 else f"adjudication for {path}"
        missing = [f for f in ADJUDICATION_FIELDS if f not in row or (f not in ("reason", "group") and not str(row[f] or "").strip())]
        if missing:
            raise BadInputError(f"{where}: missing field(s) {', '.join(missing)}")
        clean = _checked(row, where)
        if clean["decision"] not in _DECISIONS:
            raise BadInputError(f"{where}: decision '{clean['decision']}' is not one of {', '.join(_DECISIONS)}")
        _check_when(clean["when"], where)
        ordered.append(clean)
    with file_lock(path):
        # O_APPEND: earlier rows are never rewritten. The lock makes "is there a header yet" and the write one step.
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            if kind == "csv":
                data = _csv_lines(fd, ordered)
            else:
                data = yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True)
                data = ("\n" if _ends_without_newline(fd) else "") + data
            os.write(fd, data.encode("utf-8"))
        finally:
            os.close(fd)
    return path


def _ends_without_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _csv_lines(fd: int, rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    with os.fdopen(os.dup(fd), "rb") as fh:
        fh.seek(0)
        first = next((line for line in fh if line.strip()), b"").decode("utf-8", "replace")
    if not first:  # a new file (or one holding only blank lines)
        fields: tuple[str, ...] = ADJUDICATION_FIELDS
        header = True
    else:
        existing = next(csv.reader([first]), [])
        # A legacy header stays as it is: the binding values follow as trailing columns (read back by position).
        fields = tuple(existing) + tuple(f for f in BINDING_FIELDS if f not in existing)
        header = False
    writer = csv.writer(buf, lineterminator="\n")
    if header:
        writer.writerow(fields)
    for r in rows:
        writer.writerow([_escape(r.get(f, "")) for f in fields])
    return ("\n" if _ends_without_newline(fd) else "") + buf.getvalue()
