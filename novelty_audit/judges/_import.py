"""The `import` backend: verdicts made elsewhere, matched to the pinned pairs by id, item key or content.

A row names its pair in one of five ways (`match:`; `auto` takes the first whose columns the file has):
`pair_id` (+ `dataset`), `item_key` (the source file's item key, + `dataset` when several datasets are run),
`text` (the two idea texts, in the order they were *shown*), `digest` (sha256 of each normalized text) or
`title`. Content is compared after Unicode NFC and whitespace collapsing (texts, digests) or case folding
(titles); the shown order decides what `A`/`B` mean. A row that matches no pinned pair, or several, is
never placed by position: it is an error naming file, row and field, or with `on_unmatched: exclude` an
exclusion recorded in the judge stage's manifest summary (`exclusions.<judge>`). In a `judge.limit` run, a
row naming a pinned pair the run leaves out is *outside the subset*: counted on one stderr line and recorded
as an exclusion with that reason, never called unmatched. docs/design/import.md.
"""

from __future__ import annotations

import csv
import io
import re
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from ..artifacts import digest_file
from ..config import Frozen
from ..errors import BadInputError, ConfigError
from ._base import (
    NEGATIVE,
    NONE,
    OUTCOMES,
    POSITIVE,
    TIE,
    Judge,
    JudgeContext,
    JudgeOutput,
    PairItem,
    PointItem,
    pairwise_row,
    parse_args,
    pointwise_row,
)
from ._protocol import Call, CallResult, VoteJudge

__all__ = ["ImportArgs", "ImportColumns", "ImportJudge"]

MatchMode = Literal["pair_id", "item_key", "text", "digest", "title"]
_MODES: tuple[MatchMode, ...] = ("pair_id", "item_key", "text", "digest", "title")
_CONTENT: tuple[MatchMode, ...] = ("text", "digest", "title")


class ImportColumns(Frozen):
    """The file's column (or JSONL key) for each field; defaults are the field names themselves."""

    dataset: str = "dataset"
    """Dataset name as in params.yaml pin.datasets (optional for content matching: restricts the search)."""
    pair_id: str = "pair_id"
    item_key: str = "item_key"
    """The pair's key in the source file (pairs.parquet `source_key`, e.g. the YAML item id)."""
    text_a: str = "text_a"
    """Text of the idea shown first (`A`)."""
    text_b: str = "text_b"
    digest_a: str = "digest_a"
    """sha256 of the normalized text shown first (ideas.parquet `text_digest`)."""
    digest_b: str = "digest_b"
    title_a: str = "title_a"
    title_b: str = "title_b"
    vote: str = "vote"
    order: str = "order"
    """forward | reverse (pair_id / item_key rows only; content rows carry their order in text_a/text_b)."""
    error_reason: str = "error_reason"


class ImportArgs(Frozen):
    """Verdicts made elsewhere, one vote per row (CSV with a header, or JSONL).

    Votes: `A` / `B` (the idea shown first / second, case-insensitive), an idea id of the pair, `tie`, or an
    outcome `invalid` | `refusal` | `error` | `truncated`; rows matched by `pair_id` or `item_key` may also
    use `0` / `1` (the published slot). Several rows for one pair are several votes. Pointwise file columns:
    `dataset`, `idea_id`, `vote` (POSITIVE | NEGATIVE | an outcome).
    """

    path: str
    """Pairwise votes (.csv or .jsonl). Must lie under a dvc.yaml dep of the judge stage."""
    pointwise_path: str | None = None
    """Pointwise votes (.csv or .jsonl); without it every pointwise prediction is `none` with zero calls."""
    columns: ImportColumns = ImportColumns()
    """Column names in the file, e.g. {text_a: shown_A_idea, text_b: shown_B_idea, vote: predicted}."""
    match: Literal["auto", "pair_id", "item_key", "text", "digest", "title"] = "auto"
    """How rows name their pair; auto: the first of pair_id, item_key, text, digest, title the file has."""
    on_unmatched: Literal["error", "exclude"] = "error"
    """A row matching no pinned pair or several: error (listing every such row), or exclude (recorded)."""
    on_missing: Literal["error", "none"] | None = None
    """A pinned pair with no row: error, or not covered (verdict `none`, zero calls; metrics leave it out of
    accuracy_on_covered). Default: error for pair_id files (a whole run's export), none otherwise (samples)."""


def _row_list(rows: Sequence[int], shown: int = 8) -> str:
    head = ", ".join(str(r) for r in rows[:shown])
    return head + (f", … {len(rows) - shown} more" if len(rows) > shown else "")


def _norm_text(s: str) -> str:
    # The pin's normalize_text (novelty_audit.datasets): NFC, whitespace collapsed. Repeated here because the
    # judge stage does not depend on the datasets package.
    return " ".join(unicodedata.normalize("NFC", s).split())


def _norm_title(s: str) -> str:
    return _norm_text(s).casefold()


def _norm_digest(s: str) -> str:
    return s.strip().lower()


_NORM = {"text": _norm_text, "digest": _norm_digest, "title": _norm_title}


def _value_of(mode: str, idea: Any) -> str:
    if mode == "text":
        return _norm_text(idea.text)
    if mode == "digest":
        return _norm_digest(idea.text_digest)
    return _norm_title(idea.title)


def read_rows(path: Path, judge: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of a .csv (header) or .jsonl file, and the columns seen (CSV header / union of JSONL keys)."""
    if not path.exists():
        raise ConfigError(f"judge {judge}: import file {path} does not exist", hint="check judge.judges.<id>.args.path")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{path}: not UTF-8 ({exc})") from None
    if path.suffix == ".jsonl":
        rows: list[dict[str, Any]] = []
        seen: dict[str, None] = {}
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise BadInputError(f"{path}: line {n}: not valid JSON ({exc})", hint="one JSON object per line") from None
            if not isinstance(row, dict):
                raise BadInputError(f"{path}: line {n}: expected a JSON object, found {type(row).__name__}")
            seen.update(dict.fromkeys(row))
            rows.append(row)
        return rows, list(seen)
    if path.suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        return list(reader), list(reader.fieldnames or [])
    raise ConfigError(f"judge {judge}: import file {path} must end in .csv or .jsonl")


def _cell(row: dict[str, Any], col: str) -> str | None:
    v = row.get(col)
    if v is None:
        return None
    s = str(v).strip()
    return s or None


@dataclass(frozen=True)
class _Match:
    pair: PairItem
    order: Literal["forward", "reverse"]


class ImportJudge(VoteJudge):
    """Votes read from a file, matched to the pinned pairs and aggregated like any other judge."""

    backend = "import"

    def __init__(self, ctx: JudgeContext, args: ImportArgs):
        super().__init__(ctx, votes=1, orders="both")
        self.args = args
        self.path = Path(args.path)
        self.point_path = Path(args.pointwise_path) if args.pointwise_path else None
        self._rows, header = read_rows(self.path, ctx.name)
        self._point_rows = read_rows(self.point_path, ctx.name)[0] if self.point_path else []
        self.mode = self._mode(set(header))
        self.on_missing = args.on_missing or ("error" if self.mode == "pair_id" else "none")
        self._left_out: list[PairItem] = []
        self._left_out_points: set[tuple[str, str]] = set()
        self._other_splits: list[PairItem] = []

    def set_left_out(self, pairs: Sequence[PairItem], points: Sequence[PointItem] = ()) -> None:
        """The pinned pairs and pointwise ideas this run leaves out (`judge.limit`), told by the judge stage
        before `judge`.

        Rows are matched against them too, so a row naming one is *outside the subset* (counted and recorded)
        rather than unmatched, and a row is unmatched or ambiguous exactly when it would be in a full run."""
        self._left_out = list(pairs)
        self._left_out_points = {(p.dataset, p.idea.idea_id) for p in points}

    def set_other_splits(self, pairs: Sequence[PairItem]) -> None:
        """Pairs of the pinned splits this judge does not judge, told by the judge stage. Never matched for a vote:
        only to name, on the console, a split that would take the rows excluded here."""
        self._other_splits = list(pairs)

    def _exclusion_lines(self, excluded: Sequence[dict[str, Any]]) -> list[str]:
        """One console line per exclusion reason: the count, and a pinned split that would take the rows."""
        groups: dict[tuple[str, str], list[int]] = {}
        for u in excluded:
            # Row-specific values (a quoted key, a list of pairs) out of the reason: rows excluded alike count together.
            kind = re.sub(r"'[^']*'|\([^()]*\)|\bpair \S+ of dataset|\bidea \S+ of dataset", "…", u["reason"])
            groups.setdefault((u["field"], kind), []).append(u["row"])
        takers = self._takers({row for rows in groups.values() for row in rows})
        lines = []
        for (fld, kind), rows in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
            by_split: dict[str, int] = {}
            for row in rows:
                if row in takers:
                    by_split[takers[row]] = by_split.get(takers[row], 0) + 1
            hint = "".join(f"; the pinned split {s} would take {'them' if k == len(rows) else f'{k} of them'} (add it to judge.datasets)"
                           for s, k in sorted(by_split.items()))  # fmt: skip
            lines.append(f"judge {self.name}: {len(rows)} imported row(s) excluded, field '{fld}' {kind}{hint} "
                         f"(rows {_row_list(rows)}; listed under exclusions in the judge manifest)")  # fmt: skip
        return lines

    def _takers(self, rows: set[int]) -> dict[int, str]:
        """Row number → the other pinned split holding the row's pair (pairwise file rows only)."""
        if not self._other_splits or not rows:
            return {}
        known = self._known
        index = self._index(self._other_splits)
        try:
            out = {}
            for n, row in enumerate(self._rows, start=1):
                got = self._locate(row, self._other_splits, index) if n in rows else None
                if isinstance(got, _Match):
                    out[n] = got.pair.dataset
            return out
        finally:
            self._known = known

    def _mode(self, header: set[str]) -> MatchMode:
        c = self.args.columns
        need: dict[MatchMode, tuple[str, ...]] = {
            "pair_id": (c.pair_id,), "item_key": (c.item_key,), "text": (c.text_a, c.text_b),
            "digest": (c.digest_a, c.digest_b), "title": (c.title_a, c.title_b),
        }  # fmt: skip
        if self.args.match != "auto":
            missing = [col for col in need[self.args.match] + (c.vote,) if col not in header]
            if missing and self._rows:
                raise BadInputError(
                    f"{self.path}: missing column(s) {', '.join(missing)} for match: {self.args.match}",
                    hint=f"set args.columns to the file's names; the file has: {', '.join(sorted(header))}",
                )
            return self.args.match
        for mode in _MODES:
            if all(col in header for col in need[mode]):
                return mode
        if not self._rows:
            return "pair_id"
        raise BadInputError(
            f"{self.path}: no column set names a pair (file columns: {', '.join(sorted(header))})",
            hint="one of: pair_id | item_key | text_a+text_b | digest_a+digest_b | title_a+title_b (args.columns maps names)",
        )

    def input_files(self) -> list[Path]:
        return [self.path] + ([self.point_path] if self.point_path else [])

    def config(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "path": self.path.as_posix(),
            "sha256": digest_file(self.path),
            "pointwise_path": self.point_path.as_posix() if self.point_path else None,
            "pointwise_sha256": digest_file(self.point_path) if self.point_path else None,
            "columns": self.args.columns.model_dump(),
            "match": self.mode,
            "on_unmatched": self.args.on_unmatched,
            "on_missing": self.on_missing,
        }

    def extra_evidence(self, shown) -> dict[str, str]:
        return {"import_file": digest_file(self.path)}

    # -- matching ------------------------------------------------------------------------------------

    def _locate(self, row: dict[str, Any], pairs: Sequence[PairItem], index: Any) -> _Match | tuple[str, str]:
        """The row's pair and shown order, or (field, reason) when it matches none or several."""
        c = self.args.columns
        dataset = _cell(row, c.dataset)
        datasets = {p.dataset for p in pairs}
        if dataset is not None and dataset not in datasets:
            return c.dataset, f"= {dataset!r} is not judged in this run (judge.datasets: {', '.join(sorted(datasets))})"
        if self.mode in ("pair_id", "item_key"):
            col = c.pair_id if self.mode == "pair_id" else c.item_key
            key = _cell(row, col)
            if key is None:
                return col, "is missing"
            cands = [p for p in index.get(key, []) if dataset is None or p.dataset == dataset]
            order = _cell(row, c.order) or "forward"
            if order not in ("forward", "reverse"):
                return c.order, f"= {order!r} is not forward or reverse"
            if not cands:
                where = f" of dataset {dataset}" if dataset else ""
                return col, f"= {key!r} matches no pinned pair{where}"
            if len(cands) > 1:
                return col, f"= {key!r} matches {len(cands)} pinned pairs ({_names(cands)}); add a {c.dataset} column"
            return _Match(cands[0], order)  # type: ignore[arg-type]
        a_col, b_col = (getattr(c, f"{self.mode}_a"), getattr(c, f"{self.mode}_b"))
        a, b = _cell(row, a_col), _cell(row, b_col)
        if a is None or b is None:
            return (a_col if a is None else b_col), "is missing"
        norm = _NORM[self.mode]
        key = (norm(a), norm(b))
        cands = [m for m in index.get(key, []) if dataset is None or m.pair.dataset == dataset]
        if len(cands) == 1:
            return cands[0]
        if len(cands) > 1:
            return a_col, f"(with {b_col}) matches {len(cands)} pinned pairs ({_names([m.pair for m in cands])})"
        singles = key[0] in self._known, key[1] in self._known
        if not any(singles):
            return a_col, f"(and {b_col}): neither {self.mode} matches a pinned idea"
        if not all(singles):
            miss = b_col if singles[0] else a_col
            return miss, f"matches no pinned idea (the other {self.mode} does)"
        return a_col, f"(with {b_col}): both match pinned ideas, but no pinned pair holds the two together"

    def _pair_column(self) -> str:
        """The file column that names a row's pair (the first of two for content matching)."""
        c = self.args.columns
        return {"pair_id": c.pair_id, "item_key": c.item_key}.get(self.mode) or getattr(c, f"{self.mode}_a")

    def _index(self, pairs: Sequence[PairItem]) -> dict[Any, list[Any]]:
        """Lookup of pairs by key (id modes) or by (shown first, shown second) normalized values; fills
        `_known` with every pinned idea value, so an unmatched row can say which of its two sides is unknown."""
        index: dict[Any, list[Any]] = {}
        self._known: set[str] = set()
        if self.mode in ("pair_id", "item_key"):
            for p in pairs:
                key = p.pair_id if self.mode == "pair_id" else getattr(p, "source_key", None)
                if key is not None:
                    index.setdefault(str(key), []).append(p)
            return index
        for p in pairs:
            v0, v1 = _value_of(self.mode, p.idea_0), _value_of(self.mode, p.idea_1)
            index.setdefault((v0, v1), []).append(_Match(p, "forward"))
            if v1 != v0:
                index.setdefault((v1, v0), []).append(_Match(p, "reverse"))
            self._known.update((v0, v1))
        return index

    def _vote(self, row: dict[str, Any], m: _Match, where: str) -> CallResult | None:
        c = self.args.columns
        raw = _cell(row, c.vote)
        if raw is None:
            return None
        pair = m.pair
        shown = pair.ideas if m.order == "forward" else (pair.idea_1, pair.idea_0)
        ids = [i.idea_id for i in pair.ideas]
        low = raw.lower()
        if low in OUTCOMES:
            reason = _cell(row, c.error_reason)
            return CallResult(low, error_reason=reason if low == "error" else None)  # type: ignore[arg-type]
        if low == TIE:
            return CallResult("valid", TIE)
        if low in ("a", "b"):
            return CallResult("valid", 0 if low == "a" else 1)
        if raw in ids:
            return CallResult("valid", [i.idea_id for i in shown].index(raw))
        if raw in ("0", "1") and self.mode in ("pair_id", "item_key"):
            return CallResult("valid", [i.idea_id for i in shown].index(ids[int(raw)]))
        slots = ", 0, 1" if self.mode in ("pair_id", "item_key") else ""
        raise BadInputError(
            f"{where}: field '{c.vote}': {raw!r} names neither idea of pair {pair.pair_id} (dataset {pair.dataset})",
            hint=f"use A, B{slots}, tie, {ids[0]}, {ids[1]} or an outcome ({', '.join(OUTCOMES)})",
        )

    # -- the run ---------------------------------------------------------------------------------------

    def judge(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> JudgeOutput:
        by_pair = {(p.dataset, p.pair_id): p for p in pairs}
        answered: dict[tuple[str, str], list[tuple[Call, CallResult]]] = {k: [] for k in by_pair}
        pinned = [*pairs, *(p for p in self._left_out if (p.dataset, p.pair_id) not in by_pair)]
        index = self._index(pinned)
        unmatched: list[dict[str, Any]] = []
        outside: list[dict[str, Any]] = []
        for n, row in enumerate(self._rows, start=1):
            where = f"{self.path}: row {n}"
            got = self._locate(row, pinned, index) if pinned else (self.args.columns.dataset, "no pairwise items in this run")
            if not isinstance(got, _Match):
                unmatched.append({"file": self.path.as_posix(), "row": n, "field": got[0], "reason": got[1]})
                continue
            result = self._vote(row, got, where)  # checked outside the subset too: the full run would refuse it
            if result is None:
                unmatched.append({"file": self.path.as_posix(), "row": n, "field": self.args.columns.vote, "reason": "is missing"})
                continue
            key = (got.pair.dataset, got.pair.pair_id)
            if key not in by_pair:
                outside.append({"file": self.path.as_posix(), "row": n, "field": self._pair_column(),
                                "reason": f"outside the subset: pair {key[1]} of dataset {key[0]} is not judged in this run (judge.limit)"})
                continue
            shown = got.pair.ideas if got.order == "forward" else (got.pair.idea_1, got.pair.idea_0)
            answered[key].append((Call("pairwise", key[0], key[1], got.order, len(answered[key]), shown), result))
        if unmatched and self.args.on_unmatched == "error":
            lines = [f"{u['file']}: row {u['row']}: field '{u['field']}' {u['reason']}" for u in unmatched[:20]]
            more = f"\n  … and {len(unmatched) - 20} more" if len(unmatched) > 20 else ""
            also = f" ({len(outside)} other row(s) name pinned pairs outside this judge.limit subset)" if outside else ""
            raise BadInputError(
                f"judge {self.name}: {len(unmatched)} imported row(s) match no single pinned pair{also}:\n  " + "\n  ".join(lines) + more,
                hint="fix the rows, check args.columns / judge.datasets, or set args.on_unmatched: exclude to record them and go on",
            )
        out = JudgeOutput(facts={"imported_votes": len(self._rows) - len(unmatched) - len(outside)})
        out.exclusions = [{"judge": self.name, **u} for u in sorted(unmatched + outside, key=lambda u: u["row"])]
        for key, pair in by_pair.items():
            if not answered[key]:
                if self.on_missing == "error":
                    raise BadInputError(
                        f"{self.path}: no vote for pair {key[1]} of dataset {key[0]}",
                        hint="add its votes, or set args.on_missing: none (the pair is then not covered)",
                    )
                out.pairwise.append(self._empty_pair_row(pair))
                continue
            out.pairwise.append(self._pair_row(pair, answered[key]))
        point_outside = self._pointwise(points, out)
        out.facts["outside_subset"] = len(outside) + point_outside
        if out.facts["outside_subset"]:
            print(f"judge {self.name}: {out.facts['outside_subset']} imported row(s) outside the subset (judge.limit): their items are "
                  "pinned but not judged in this run; listed under exclusions in the judge manifest", file=sys.stderr, flush=True)
        if unmatched:
            print(*self._exclusion_lines(unmatched), sep="\n", file=sys.stderr, flush=True)
        return out

    def _pointwise(self, points: Sequence[PointItem], out: JudgeOutput) -> int:
        """Pointwise rows into `out`; returns how many name an idea outside this run's subset (judge.limit)."""
        point_keys = {(p.dataset, p.idea.idea_id): p for p in points}
        point_answered: dict[tuple[str, str], list[tuple[Call, CallResult]]] = {k: [] for k in point_keys}
        outside = 0
        for n, row in enumerate(self._point_rows, start=1):
            where = f"{self.point_path}: row {n}"
            for col in ("dataset", "idea_id", "vote"):
                if row.get(col) in (None, ""):
                    raise BadInputError(f"{where}: field '{col}' is missing", hint="columns: dataset, idea_id, vote")
            key = (str(row["dataset"]), str(row["idea_id"]))
            left_out = key not in point_keys and key in self._left_out_points
            if key not in point_keys and not left_out:
                raise BadInputError(f"{where}: field 'idea_id': {key[1]} is not a pointwise idea of dataset {key[0]} in this run")
            vote = str(row["vote"])
            if vote in OUTCOMES:
                reason = row.get("error_reason")
                result = CallResult(vote, error_reason=str(reason) if vote == "error" and reason not in (None, "") else None)  # type: ignore[arg-type]
            elif vote in (POSITIVE, NEGATIVE):
                result = CallResult("valid", vote)
            else:
                raise BadInputError(f"{where}: field 'vote': {vote!r} is not POSITIVE, NEGATIVE or an outcome")
            if left_out:
                outside += 1
                out.exclusions.append({"judge": self.name, "file": self.point_path.as_posix(), "row": n, "field": "idea_id",  # type: ignore[union-attr]
                                       "reason": f"outside the subset: idea {key[1]} of dataset {key[0]} is not judged in this run (judge.limit)"})
                continue
            idea = point_keys[key].idea
            point_answered[key].append((Call("pointwise", key[0], key[1], None, len(point_answered[key]), (idea,)), result))
        for key, item in point_keys.items():
            if not point_answered[key]:
                if self.point_path and self.on_missing == "error":
                    raise BadInputError(f"{self.point_path}: no vote for idea {key[1]} of dataset {key[0]}")
                out.pointwise.append(self._empty_point_row(item))
                continue
            out.pointwise.append(self._point_row(item, point_answered[key]))
        out.facts["imported_pointwise_votes"] = len(self._point_rows) - outside
        return outside

    def _empty_pair_row(self, pair: PairItem) -> dict[str, Any]:
        parts = {"idea_0_text": pair.idea_0.text_digest, "idea_1_text": pair.idea_1.text_digest, **self.extra_evidence(pair.ideas)}
        return pairwise_row(
            self, pair, verdict=NONE, verdict_forward=None, verdict_reverse=None, votes_forward=None,
            votes_reverse=None, counts={}, score_0=None, score_1=None, evidence_parts=parts,
        )  # fmt: skip

    def _empty_point_row(self, item: PointItem) -> dict[str, Any]:
        return pointwise_row(self, item, predicted=NONE, score=None, counts={}, evidence_parts={"idea_text": item.idea.text_digest})


def _names(pairs: Sequence[PairItem]) -> str:
    shown = [f"{p.dataset}/{p.pair_id}" for p in pairs[:3]]
    return ", ".join(shown) + (", …" if len(pairs) > 3 else "")


def import_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """Verdicts made elsewhere (CSV/JSONL), matched to the pinned pairs by id, item key or content."""
    return ImportJudge(ctx, parse_args(ImportArgs, args, ctx))
