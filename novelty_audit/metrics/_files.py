"""Bring-your-own verdicts: `id,verdict` files (CSV or JSONL) compared without the pipeline.

Every problem with the files — not a file, not text (a Parquet or binary file), an empty file, a missing
column, a row with too many or too few fields, an unbalanced quote, a duplicated id, ids that do not match,
a verdict outside the allowed set — is a `BadInputError` naming file, line and field; no row is skipped.
Mismatched ids are reported instead when the caller asks for it (`report_mismatches`).

Pairwise files (what `novelty-audit export verdicts` writes) may carry the pair's two ideas in columns
`idea_0`, `idea_1`: a row's allowed verdicts are then exactly those two idea ids, `tie` and `none`, so the
losing idea of a pair — never seen in gold — is a valid verdict and a typo is still caught.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

import polars as pl

from ..artifacts import atomic_write_bytes, csv_records
from ..errors import BadInputError
from ._compare import NONE, TIE, compare_verdicts
from ._views import is_covered

__all__ = [
    "read_verdict_file", "FlipsReport", "flips_report", "QualityReport", "quality_report", "ExportResult",
    "export_verdicts", "export_gold",
]

ID, VERDICT = "id", "verdict"
IDEA_0, IDEA_1 = "idea_0", "idea_1"


_PARQUET_MAGIC = b"PAR1"
_CONVERT_HINT = "write one row per item as CSV (header id,verdict) or JSONL (objects with id and verdict)"


def _read_text(path: Path) -> str:
    """The file's text, or a BadInputError saying why it cannot be read as a verdict file."""
    if not path.exists():
        raise BadInputError(f"{path}: no such file")
    if path.is_dir():
        raise BadInputError(f"{path}: is a directory, not a verdict file", hint=_CONVERT_HINT)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not data.strip():
        raise BadInputError(f"{path}: the file is empty", hint=_CONVERT_HINT)
    if data[:4] == _PARQUET_MAGIC:
        raise BadInputError(
            f"{path}: is a Parquet file, not CSV or JSONL",
            hint="convert it, e.g. python -c \"import polars as pl; pl.read_parquet('in.parquet')"
            ".select('id','verdict').write_csv('out.csv')\"",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadInputError(
            f"{path}: line {line}: not UTF-8 text (byte {exc.start}); is it a binary file?", hint=_CONVERT_HINT
        ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise BadInputError(f"{path}: line {line}: contains NUL bytes; is it a binary file?", hint=_CONVERT_HINT)
    return text


def _csv_rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    header: list[str] | None = None
    for start, end, record in csv_records(text, str(path), hint="quote whole values: \"like this\""):
        if header is None:
            header = [h.strip() for h in record]
            dup = sorted({h for h in header if header.count(h) > 1})
            if dup:
                raise BadInputError(f"{path}: line {start}: header names column(s) {', '.join(dup)} more than once")
            missing = [f for f in (ID, VERDICT) if f not in header]
            if missing:
                raise BadInputError(
                    f"{path}: line {start}: the header has no column {' or '.join(repr(f) for f in missing)} "
                    f"(columns found: {', '.join(header) or 'none'})",
                    hint=f"the first line must name the columns, e.g. {ID},{VERDICT}",
                )
            continue
        if len(record) != len(header):
            raise BadInputError(
                f"{path}: line {start}: {len(record)} field(s) where the header has {len(header)} ({', '.join(header)})",
                hint="quote values that contain commas",
            )
        for name, value in zip(header, record, strict=True):
            if name in (ID, VERDICT) and ("\n" in value or "\r" in value):
                raise BadInputError(
                    f"{path}: line {start}, field '{name}': the value spans lines {start}-{end}; "
                    "an unbalanced quote would swallow the rows after it",
                    hint="close the quote, or remove it",
                )
        rows.append((start, dict(zip(header, record, strict=True))))
    if header is None:
        raise BadInputError(f"{path}: no header line", hint=_CONVERT_HINT)
    return rows


def _jsonl_rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise BadInputError(f"{path}: line {i + 1} is not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise BadInputError(f"{path}: line {i + 1} is not a JSON object with fields {ID}, {VERDICT}")
        for f in (ID, VERDICT):
            value = obj.get(f)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
                raise BadInputError(
                    f"{path}: line {i + 1}, field '{f}': expected a string or number, found {type(value).__name__}"
                )
        rows.append((i + 1, obj))
    return rows


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        raise BadInputError(
            f"{path}: Parquet verdict files are not read", hint=_CONVERT_HINT + "; polars: df.write_csv('out.csv')"
        )
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        if path.is_dir():
            raise BadInputError(f"{path}: is a directory, not a verdict file", hint=_CONVERT_HINT)
        raise BadInputError(f"{path}: unknown file type '{suffix or '(none)'}'", hint="use .csv (header id,verdict) or .jsonl")
    text = _read_text(path)
    return _csv_rows(path, text) if suffix == ".csv" else _jsonl_rows(path, text)


def read_verdict_file(path: str | Path) -> dict[str, str]:
    """{id: verdict} from a CSV (header `id,verdict`) or JSONL file (objects with `id`, `verdict`).

    Values are stripped strings. Empty files, missing fields or values and duplicated ids are errors.
    """
    return _read_verdicts(Path(path))[0]


def _read_verdicts(path: Path) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """({id: verdict}, {id: (idea_0, idea_1)} for rows that name their pair's two ideas)."""
    rows = _rows(path)
    if not rows:
        raise BadInputError(f"{path}: no rows", hint=f"the file needs one row per item with fields {ID},{VERDICT}")
    out: dict[str, str] = {}
    pairs: dict[str, tuple[str, str]] = {}
    first_line: dict[str, int] = {}
    for line, row in rows:
        for f in (ID, VERDICT):
            if f not in row:
                raise BadInputError(
                    f"{path}: line {line}: field '{f}' is missing (fields found: {', '.join(map(str, row)) or 'none'})",
                    hint=f"the file needs fields {ID},{VERDICT}",
                )
            if row[f] is None or str(row[f]).strip() == "":
                raise BadInputError(f"{path}: line {line}, field '{f}': empty value")
        key = str(row[ID]).strip()
        if key in first_line:
            raise BadInputError(
                f"{path}: line {line}: id {key!r} appears more than once (first at line {first_line[key]})",
                hint="each id must have exactly one verdict; remove or merge the duplicates",
            )
        first_line[key] = line
        out[key] = str(row[VERDICT]).strip()
        ideas = [str(row.get(c) or "").strip() for c in (IDEA_0, IDEA_1)]
        if all(ideas):
            pairs[key] = (ideas[0], ideas[1])
        elif any(ideas):
            missing = IDEA_0 if not ideas[0] else IDEA_1
            raise BadInputError(f"{path}: line {line}, field '{missing}': empty while the other idea is given")
    return out, pairs


def _allowed(allowed: str | Iterable[str] | None) -> set[str] | None:
    if allowed is None:
        return None
    values = allowed.split(",") if isinstance(allowed, str) else list(allowed)
    out = {v.strip() for v in values if v.strip()}
    if not out:
        raise BadInputError("--allowed: no values given", hint="pass a comma-separated list, e.g. --allowed A,B,tie")
    return out


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _merge_pairs(*named: tuple[Path | str, dict[str, tuple[str, str]]]) -> dict[str, tuple[str, str]]:
    """{id: the pair's ideas} over several files; one id naming two different pairs is an error."""
    out: dict[str, tuple[str, str]] = {}
    seen_in: dict[str, Path | str] = {}
    for path, pairs in named:
        for k, ideas in pairs.items():
            if k in out and set(out[k]) != set(ideas):
                raise BadInputError(
                    f"{path}: id {k}: ideas {ideas[0]}, {ideas[1]} differ from {out[k][0]}, {out[k][1]} in {seen_in[k]}",
                    hint="both files must be exports of the same pinned pairs",
                )
            out.setdefault(k, ideas)
            seen_in.setdefault(k, path)
    return out


def _check_allowed(
    values: dict[str, str], allowed: set[str], path: Path | str, how: str, pairs: dict[str, tuple[str, str]] | None = None,
    extra: frozenset[str] = frozenset({TIE, NONE}),
) -> None:
    """Every value in `allowed`, except ids with known pair ideas (`pairs`): those allow their ideas + `extra`."""
    pairs = pairs or {}
    bad = sorted(
        (k, v) for k, v in values.items() if v not in (set(pairs[k]) | extra if k in pairs else allowed)
    )
    if bad:
        shown = ", ".join(f"id {k}: {v!r}" for k, v in bad[:5])
        raise BadInputError(
            f"{path}: {len(bad)} verdict(s) outside the allowed set {sorted(allowed)} ({how}): {shown}"
            + (" …" if len(bad) > 5 else ""),
            hint="fix the values, or pass --allowed with the full comma-separated set of verdicts",
        )


def _check_ids(a: Iterable[str], b: Iterable[str], name_a: str, name_b: str, report: bool) -> None:
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    if (only_a or only_b) and not report:
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} id(s) only in {name_a} (e.g. {', '.join(only_a[:3])})")
        if only_b:
            parts.append(f"{len(only_b)} id(s) only in {name_b} (e.g. {', '.join(only_b[:3])})")
        raise BadInputError(
            "the files do not cover the same ids: " + "; ".join(parts),
            hint="pass --report-mismatches to compare the common ids and list the others",
        )


def _accuracy(verdicts: dict[str, str], gold: dict[str, str]) -> float | None:
    ids = [k for k in verdicts if k in gold]
    return sum(verdicts[k] == gold[k] for k in ids) / len(ids) if ids else None


@dataclass(frozen=True)
class FlipsReport:
    """How verdicts changed between two files, aligned by id."""

    compared: int
    flips: int
    flip_rate: float | None
    only_before: list[str]
    only_after: list[str]
    directions: dict[str, int]
    accuracy_before: float | None = None
    """Strict accuracy of BEFORE over its ids (tie and none are wrong); with gold only."""
    accuracy_after: float | None = None
    mcnemar_p: float | None = None
    """Exact McNemar p on correctness over the compared ids; with gold only."""
    missing_gold: list[str] = field(default_factory=list)
    """Verdict ids without a gold verdict (only with report_mismatches; left out of the accuracies)."""
    flipped_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """The human-readable summary the CLI prints."""
        out = []
        if self.accuracy_before is not None:
            out.append(f"accuracy {_fmt(self.accuracy_before)} → {_fmt(self.accuracy_after)}")
        out.append(f"{self.flips} flip(s) of {self.compared} compared (flip rate {_fmt(self.flip_rate)})")
        if self.directions:
            out.append("directions: " + ", ".join(f"{k} {v}" for k, v in self.directions.items()))
        if self.mcnemar_p is not None:
            out.append(f"exact McNemar p on correctness: {_fmt(self.mcnemar_p)}")
        for label, ids in (("only in BEFORE", self.only_before), ("only in AFTER", self.only_after), ("without gold", self.missing_gold)):
            if ids:
                out.append(f"{label} ({len(ids)}): {', '.join(ids[:20])}{' …' if len(ids) > 20 else ''}")
        return out


def flips_report(
    before: str | Path,
    after: str | Path,
    gold: str | Path | None = None,
    *,
    allowed: str | Iterable[str] | None = None,
    report_mismatches: bool = False,
) -> FlipsReport:
    """Compare two verdict files by id.

    Allowed verdicts: `allowed` if given (a set or a comma-separated string); else, for a row naming its
    pair's ideas (`idea_0`, `idea_1` columns, as `export verdicts` writes), those two ideas, `tie` and `none`;
    for other rows the values seen in gold, plus `tie` and `none`, plus every value that both files use.
    """
    (b, pb), (a, pa) = _read_verdicts(Path(before)), _read_verdicts(Path(after))
    g = read_verdict_file(gold) if gold is not None else None
    pairs = _merge_pairs((before, pb), (after, pa)) if allowed is None else {}
    explicit = _allowed(allowed)
    if explicit is not None:
        allowed_set, how = explicit, "from --allowed"
    else:
        # Gold names only winners, so the losing idea of a pair never appears in it; a value both files use
        # is a real verdict, while one used by a single file only and unknown to gold is most likely a typo.
        allowed_set = (set(g.values()) if g is not None else set()) | {TIE, NONE} | (set(b.values()) & set(a.values()))
        how = "the pair's two ideas, tie and none" if pairs else "gold values, tie, none and values used in both files"
    _check_ids(b, a, f"BEFORE ({before})", f"AFTER ({after})", report_mismatches)
    _check_allowed(b, allowed_set, before, how, pairs)
    _check_allowed(a, allowed_set, after, how, pairs)
    missing: list[str] = []
    if g is not None:
        missing = sorted((set(b) | set(a)) - set(g))
        if missing and not report_mismatches:
            raise BadInputError(
                f"{gold}: no gold verdict for {len(missing)} id(s) (e.g. {', '.join(missing[:3])})",
                hint="add them to the gold file, or pass --report-mismatches to score only ids that have gold",
            )
    c = compare_verdicts(b, a, g)
    return FlipsReport(
        compared=c.compared,
        flips=c.flips,
        flip_rate=c.flip_rate,
        only_before=c.only_before,
        only_after=c.only_after,
        directions=c.directions,
        accuracy_before=_accuracy(b, g) if g is not None else None,
        accuracy_after=_accuracy(a, g) if g is not None else None,
        mcnemar_p=c.mcnemar_p,
        missing_gold=missing,
        flipped_ids=c.flipped_ids,
    )


@dataclass(frozen=True)
class QualityReport:
    """Judgment quality against labelled references, with abstention."""

    n: int
    """Ids scored (present in both PRED and the reference)."""
    reference_accuracy: float | None
    """PRED = reference / n (abstaining is correct only where the reference is the abstain label)."""
    answered_fraction: float | None
    """Answered (not the abstain label) among answerable ids (reference not the abstain label)."""
    accuracy_on_answered: float | None
    """PRED = reference among answered ids."""
    correct_abstention: float | None
    """Abstained among ids whose reference is the abstain label."""
    unsupported_confident: float | None
    """Answered among ids whose reference is the abstain label (= 1 − correct_abstention)."""
    stability: float | None
    """Agreement of PRED with the repeat run over their common ids; None without --repeat."""
    n_answerable: int
    n_answered: int
    n_reference_abstain: int
    abstain_label: str
    only_prediction: list[str] = field(default_factory=list)
    only_reference: list[str] = field(default_factory=list)
    only_repeat: list[str] = field(default_factory=list)
    """Ids in the repeat but not in PRED (and the reverse under only_prediction_not_repeated)."""
    only_prediction_not_repeated: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """The human-readable summary the CLI prints."""
        out = [
            f"reference accuracy     {_fmt(self.reference_accuracy)}  ({self.n} ids)",
            f"answered fraction      {_fmt(self.answered_fraction)}  ({self.n_answered} answered; {self.n_answerable} answerable)",
            f"accuracy on answered   {_fmt(self.accuracy_on_answered)}",
            f"correct abstention     {_fmt(self.correct_abstention)}  ({self.n_reference_abstain} with reference '{self.abstain_label}')",
            f"unsupported confident  {_fmt(self.unsupported_confident)}",
            f"stability              {_fmt(self.stability)}",
        ]
        for label, ids in (
            ("only in PRED", self.only_prediction),
            ("only in the reference", self.only_reference),
            ("only in the repeat", self.only_repeat),
            ("not repeated", self.only_prediction_not_repeated),
        ):
            if ids:
                out.append(f"{label} ({len(ids)}): {', '.join(ids[:20])}{' …' if len(ids) > 20 else ''}")
        return out


def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def quality_report(
    prediction: str | Path,
    reference: str | Path,
    repeat: str | Path | None = None,
    *,
    abstain_label: str = "unknown",
    allowed: str | Iterable[str] | None = None,
    report_mismatches: bool = False,
) -> QualityReport:
    """Score PRED against the reference labels (and against a repeat run for stability).

    Allowed labels: `allowed` if given; else, for a row naming its pair's ideas (`idea_0`, `idea_1`), those
    ideas, `tie`, `none` and the abstain label; for other rows the reference's labels plus `tie` and the
    abstain label. Abstaining = the abstain label or `none` (no verdict). `tie` is a verdict, not an
    abstention: it counts as answered and is correct only where the reference says `tie`.
    """
    (pred, pp), ref = _read_verdicts(Path(prediction)), read_verdict_file(reference)
    rep, rp = _read_verdicts(Path(repeat)) if repeat is not None else (None, {})
    explicit = _allowed(allowed)
    pairs = _merge_pairs((prediction, pp), (repeat or "", rp)) if explicit is None else {}
    allowed_set = explicit if explicit is not None else set(ref.values()) | {abstain_label, TIE}
    how = "from --allowed" if explicit is not None else f"reference labels plus tie and '{abstain_label}'"
    if pairs:
        how += "; pairwise rows: the pair's two ideas, tie, none"
    extra = frozenset({TIE, NONE, abstain_label})
    _check_allowed(pred, allowed_set, prediction, how, pairs, extra)
    if rep is not None:
        _check_allowed(rep, allowed_set, repeat, how, pairs, extra)
        _check_ids(pred, rep, f"PRED ({prediction})", f"--repeat ({repeat})", report_mismatches)
    _check_ids(pred, ref, f"PRED ({prediction})", f"--reference ({reference})", report_mismatches)
    ids = sorted(set(pred) & set(ref))
    abstains = {abstain_label, NONE}

    def abstained(v: str) -> bool:
        return v in abstains

    answerable = [k for k in ids if ref[k] != abstain_label]
    ref_abstain = [k for k in ids if ref[k] == abstain_label]
    answered = [k for k in ids if not abstained(pred[k])]
    stability = None
    if rep is not None:
        common = sorted(set(pred) & set(rep))
        stability = _share(sum(pred[k] == rep[k] for k in common), len(common))
    return QualityReport(
        n=len(ids),
        reference_accuracy=_share(sum(pred[k] == ref[k] or (abstained(pred[k]) and ref[k] == abstain_label) for k in ids), len(ids)),
        answered_fraction=_share(sum(not abstained(pred[k]) for k in answerable), len(answerable)),
        accuracy_on_answered=_share(sum(pred[k] == ref[k] for k in answered), len(answered)),
        correct_abstention=_share(sum(abstained(pred[k]) for k in ref_abstain), len(ref_abstain)),
        unsupported_confident=_share(sum(not abstained(pred[k]) for k in ref_abstain), len(ref_abstain)),
        stability=stability,
        n_answerable=len(answerable),
        n_answered=len(answered),
        n_reference_abstain=len(ref_abstain),
        abstain_label=abstain_label,
        only_prediction=sorted(set(pred) - set(ref)),
        only_reference=sorted(set(ref) - set(pred)),
        only_repeat=sorted(set(rep) - set(pred)) if rep is not None else [],
        only_prediction_not_repeated=sorted(set(pred) - set(rep)) if rep is not None else [],
    )


# -- export: the judge stage's verdicts as id,verdict files ----------------------------------------------

EXPORT_COLUMNS = (ID, VERDICT, "dataset", "pair_id", IDEA_0, IDEA_1)


@dataclass(frozen=True)
class ExportResult:
    """What `export_verdicts` / `export_gold` wrote."""

    path: str
    rows: int
    datasets: list[str]
    uncovered: int = 0
    """Pairs the judge was never asked about (verdict none, zero calls), left out of the file."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        out = [f"wrote {self.rows} row(s) to {self.path} ({', '.join(self.datasets)})"]
        if self.uncovered:
            out.append(f"left out {self.uncovered} pair(s) the judge was never asked about (not covered)")
        return out


def _read_verdict_table(path: Path) -> pl.DataFrame:
    if not path.exists():
        raise BadInputError(f"{path}: no verdict table", hint="run the judge stage first (`novelty-audit stage judge` or `dvc repro`)")
    return pl.read_parquet(path)


def _pick_dataset(df: pl.DataFrame, dataset: str | None, what: str) -> pl.DataFrame:
    if dataset is None:
        return df
    known = sorted(df["dataset"].unique().to_list())
    if dataset not in known:
        raise BadInputError(f"--dataset {dataset}: {what} has no rows for it", hint=f"datasets: {', '.join(known) or 'none'}")
    return df.filter(pl.col("dataset") == dataset)


def _write_rows(rows: list[dict[str, Any]], out: Path, fmt: str | None) -> str:
    fmt = fmt or ("jsonl" if out.suffix.lower() in (".jsonl", ".ndjson") else "csv")
    if fmt not in ("csv", "jsonl"):
        raise BadInputError(f"--format {fmt}: expected csv or jsonl")
    if fmt == "jsonl":
        data = b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in rows)
    else:
        import csv
        import io

        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(EXPORT_COLUMNS), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        data = buf.getvalue().encode("utf-8")
    atomic_write_bytes(out, data)
    return fmt


def _export_rows(df: pl.DataFrame, value_col: str, single: bool) -> list[dict[str, Any]]:
    rows = []
    for r in df.sort("dataset", "pair_id").iter_rows(named=True):
        rid = r["pair_id"] if single else f"{r['dataset']}/{r['pair_id']}"
        rows.append({ID: rid, VERDICT: r[value_col], "dataset": r["dataset"], "pair_id": r["pair_id"], IDEA_0: r["idea_0"], IDEA_1: r["idea_1"]})
    return rows


def export_verdicts(verdicts: str | Path, out: str | Path, *, judge: str, dataset: str | None = None, fmt: str | None = None) -> ExportResult:
    """Write one judge's pairwise verdicts (from the judge stage's verdicts.parquet) as an `id,verdict` file
    that `flips` and `quality` read. id = pair_id with `dataset`, else `<dataset>/<pair_id>`; columns
    idea_0/idea_1 name the pair's ideas so the readers can check each verdict against its pair. Pairs the
    judge was never asked about (uncovered) are left out and counted."""
    df = _read_verdict_table(Path(verdicts))
    judges = sorted(df["judge"].unique().to_list())
    if judge not in judges:
        import difflib

        close = difflib.get_close_matches(judge, judges, n=3)
        raise BadInputError(
            f"--judge {judge}: no verdicts in {verdicts}",
            hint=f"did you mean {', '.join(close)}?" if close else f"judges: {', '.join(judges) or 'none'}",
        )
    df = _pick_dataset(df.filter(pl.col("judge") == judge), dataset, f"judge {judge}")
    covered = [is_covered(r, r["verdict"]) for r in df.iter_rows(named=True)]
    kept = df.filter(pl.Series(covered, dtype=pl.Boolean)) if df.height else df
    if not kept.height:
        raise BadInputError(f"--judge {judge}: covers no pair{f' of dataset {dataset}' if dataset else ''}", hint="nothing to export")
    _write_rows(_export_rows(kept, "verdict", dataset is not None), Path(out), fmt)
    return ExportResult(str(out), kept.height, sorted(kept["dataset"].unique().to_list()), df.height - kept.height)


def export_gold(verdicts: str | Path, out: str | Path, *, dataset: str | None = None, fmt: str | None = None) -> ExportResult:
    """Write the gold idea of every pair in the verdict table as an `id,verdict` file (for `flips --gold` and
    `quality --reference`), with the same ids as `export_verdicts` given the same `dataset`."""
    df = _pick_dataset(_read_verdict_table(Path(verdicts)), dataset, "the verdict table")
    pairs = df.select("dataset", "pair_id", "idea_0", "idea_1", "gold_idea_id").unique()
    if not pairs.height:
        raise BadInputError(f"{verdicts}: no pairs", hint="run the judge stage with the pairwise task")
    _write_rows(_export_rows(pairs, "gold_idea_id", dataset is not None), Path(out), fmt)
    return ExportResult(str(out), pairs.height, sorted(pairs["dataset"].unique().to_list()))
