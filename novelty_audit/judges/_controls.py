"""Control judges: the floor every real judge must beat, and a way to bring in verdicts made elsewhere.

- `always-first` votes for whichever idea is shown first; with both orders it must tie every pair.
  Pointwise it answers the first label offered (POSITIVE).
- `always-second` votes for the idea shown second; pointwise NEGATIVE.
- `random` draws each vote from a `random.Random` seeded by (params seed, item id, order, vote index).
- `abstain` declines every call (outcome `refusal`): verdict `none`, never a win.
- `import` reads votes from a CSV or JSONL file (see `ImportArgs`) and runs them through the same protocol.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import orjson

from ..artifacts import digest_file, digest_obj
from ..errors import BadInputError, ConfigError
from ..config import Frozen
from ._base import (
    JUDGES,
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
    parse_args,
)
from ._protocol import Call, CallResult, VoteJudge

__all__ = ["ControlArgs", "ControlJudge", "ImportArgs", "ImportJudge"]


class ControlArgs(Frozen):
    """Arguments of the always-first, always-second, random and abstain controls."""

    votes: int = 3
    """Votes per order (matched to the LLM judges' default so counts compare)."""
    orders: Literal["both", "forward", "reverse"] = "both"
    """Presentation orders asked: both | forward (published slot order) | reverse."""


class ControlJudge(VoteJudge):
    """A judge whose answer depends only on what is shown where (or on a seeded draw)."""

    def __init__(self, ctx: JudgeContext, backend: str, args: ControlArgs):
        super().__init__(ctx, votes=args.votes, orders=args.orders)
        self.backend = backend

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"backend": self.backend, "votes": self.votes, "orders": self.orders}
        if self.backend == "random":
            cfg["seed"] = self.ctx.seed
        return cfg

    def answer(self, call: Call) -> CallResult:
        pairwise = call.task == "pairwise"
        if self.backend == "always-first":
            return CallResult("valid", 0 if pairwise else POSITIVE)
        if self.backend == "always-second":
            return CallResult("valid", 1 if pairwise else NEGATIVE)
        if self.backend == "abstain":
            return CallResult("refusal", detail="abstain control")
        rng = random.Random(digest_obj([self.ctx.seed, call.task, call.dataset, call.item_id, call.order, call.vote_index]))
        pick = rng.randrange(2)
        return CallResult("valid", pick if pairwise else (POSITIVE, NEGATIVE)[pick])


def _control(backend: str):
    def factory(ctx: JudgeContext, **args: Any) -> Judge:
        return ControlJudge(ctx, backend, parse_args(ControlArgs, args, ctx))

    factory.__doc__ = f"The `{backend}` control judge."
    return factory


for _name in ("always-first", "always-second", "random", "abstain"):
    JUDGES.register(_name, args=ControlArgs)(_control(_name))


# -- import -------------------------------------------------------------------------------------------


class ImportArgs(Frozen):
    """Verdicts made elsewhere, one vote per row.

    Pairwise file (CSV with a header, or JSONL) columns: `dataset`, `pair_id`, `vote`, and optionally
    `order` (forward | reverse; default forward). `vote` is an idea id of the pair, `0`/`1` (the idea in
    that published slot), `tie`, or an outcome `invalid` | `refusal` | `error` | `truncated`. Several rows
    per pair are several votes. Pointwise file columns: `dataset`, `idea_id`, `vote` (POSITIVE | NEGATIVE | an
    outcome). Both files may carry an `error_reason` column (a short category) for `error` votes; without it
    the reason is recorded as `unspecified`.
    """

    path: str
    """Pairwise votes (.csv or .jsonl)."""
    pointwise_path: str | None = None
    """Pointwise votes (.csv or .jsonl); without it every pointwise prediction is `none` with zero calls."""
    on_missing: Literal["error", "none"] = "error"
    """A pair (idea) of the run with no row: error, or verdict `none` with zero calls."""


def _reason(row: dict[str, Any], vote: str) -> str | None:
    reason = row.get("error_reason")
    return str(reason) if vote == "error" and reason not in (None, "") else None


def _read_rows(path: Path, judge: str) -> list[dict[str, Any]]:
    if not path.exists():
        raise ConfigError(f"judge {judge}: import file {path} does not exist", hint="check judge.judges.<id>.args.path")
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        rows = []
        for n, line in enumerate(data.decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise BadInputError(f"{path}: line {n}: not valid JSON ({exc})", hint="one JSON object per line") from None
            if not isinstance(row, dict):
                raise BadInputError(f"{path}: line {n}: expected a JSON object, found {type(row).__name__}")
            rows.append(row)
        return rows
    if path.suffix == ".csv":
        return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
    raise ConfigError(f"judge {judge}: import file {path} must end in .csv or .jsonl")


class ImportJudge(VoteJudge):
    """Votes read from a file, validated against the pinned pairs and aggregated like any other judge."""

    backend = "import"

    def __init__(self, ctx: JudgeContext, args: ImportArgs):
        super().__init__(ctx, votes=1, orders="both")
        self.args = args
        self.path = Path(args.path)
        self.point_path = Path(args.pointwise_path) if args.pointwise_path else None
        self._rows = _read_rows(self.path, ctx.name)
        self._point_rows = _read_rows(self.point_path, ctx.name) if self.point_path else []

    def input_files(self) -> list[Path]:
        return [self.path] + ([self.point_path] if self.point_path else [])

    def config(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "path": self.path.as_posix(),
            "sha256": digest_file(self.path),
            "pointwise_path": self.point_path.as_posix() if self.point_path else None,
            "pointwise_sha256": digest_file(self.point_path) if self.point_path else None,
            "on_missing": self.args.on_missing,
        }

    def extra_evidence(self, shown) -> dict[str, str]:
        return {"import_file": digest_file(self.path)}

    def judge(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> JudgeOutput:
        by_pair = {(p.dataset, p.pair_id): p for p in pairs}
        answered: dict[tuple[str, str], list[tuple[Call, CallResult]]] = {k: [] for k in by_pair}
        for n, row in enumerate(self._rows, start=1):
            where = f"{self.path}: row {n}"
            for col in ("dataset", "pair_id", "vote"):
                if row.get(col) in (None, ""):
                    raise BadInputError(f"{where}: field '{col}' is missing", hint="columns: dataset, pair_id, vote[, order]")
            key = (str(row["dataset"]), str(row["pair_id"]))
            if key not in by_pair:
                raise BadInputError(
                    f"{where}: field 'pair_id': {key[1]} is not a pair of dataset {key[0]} in this run",
                    hint="pair ids are in artifacts/pin/<dataset>/pairs.parquet; check judge.datasets",
                )
            pair = by_pair[key]
            order = str(row.get("order") or "forward")
            if order not in ("forward", "reverse"):
                raise BadInputError(f"{where}: field 'order': {order!r} is not forward or reverse")
            shown = pair.ideas if order == "forward" else (pair.idea_1, pair.idea_0)
            vote = str(row["vote"])
            ids = [i.idea_id for i in pair.ideas]
            if vote in OUTCOMES:
                result = CallResult(vote, error_reason=_reason(row, vote))  # type: ignore[arg-type]
            elif vote == TIE:
                result = CallResult("valid", TIE)
            elif vote in ("0", "1") or vote in ids:
                idea_id = ids[int(vote)] if vote in ("0", "1") else vote
                result = CallResult("valid", [i.idea_id for i in shown].index(idea_id))
            else:
                raise BadInputError(
                    f"{where}: field 'vote': {vote!r} names neither idea of pair {key[1]}",
                    hint=f"use {ids[0]}, {ids[1]}, 0, 1, tie or an outcome ({', '.join(OUTCOMES)})",
                )
            idx = len(answered[key])
            answered[key].append((Call("pairwise", key[0], key[1], order, idx, shown), result))  # type: ignore[arg-type]
        point_keys = {(p.dataset, p.idea.idea_id): p for p in points}
        point_answered: dict[tuple[str, str], list[tuple[Call, CallResult]]] = {k: [] for k in point_keys}
        for n, row in enumerate(self._point_rows, start=1):
            where = f"{self.point_path}: row {n}"
            for col in ("dataset", "idea_id", "vote"):
                if row.get(col) in (None, ""):
                    raise BadInputError(f"{where}: field '{col}' is missing", hint="columns: dataset, idea_id, vote")
            key = (str(row["dataset"]), str(row["idea_id"]))
            if key not in point_keys:
                raise BadInputError(f"{where}: field 'idea_id': {key[1]} is not a pointwise idea of dataset {key[0]} in this run")
            vote = str(row["vote"])
            if vote in OUTCOMES:
                result = CallResult(vote, error_reason=_reason(row, vote))  # type: ignore[arg-type]
            elif vote in (POSITIVE, NEGATIVE):
                result = CallResult("valid", vote)
            else:
                raise BadInputError(f"{where}: field 'vote': {vote!r} is not POSITIVE, NEGATIVE or an outcome")
            idea = point_keys[key].idea
            point_answered[key].append((Call("pointwise", key[0], key[1], None, len(point_answered[key]), (idea,)), result))
        out = JudgeOutput(facts={"imported_votes": len(self._rows), "imported_pointwise_votes": len(self._point_rows)})
        for key, pair in by_pair.items():
            if not answered[key]:
                if self.args.on_missing == "error":
                    raise BadInputError(
                        f"{self.path}: no vote for pair {key[1]} of dataset {key[0]}",
                        hint="add its votes, or set args.on_missing: none to record verdict none",
                    )
                out.pairwise.append(self._empty_pair_row(pair))
                continue
            out.pairwise.append(self._pair_row(pair, answered[key]))
        for key, item in point_keys.items():
            if not point_answered[key]:
                if self.point_path and self.args.on_missing == "error":
                    raise BadInputError(f"{self.point_path}: no vote for idea {key[1]} of dataset {key[0]}")
                out.pointwise.append(self._empty_point_row(item))
                continue
            out.pointwise.append(self._point_row(item, point_answered[key]))
        return out

    def _empty_pair_row(self, pair: PairItem) -> dict[str, Any]:
        from ._base import pairwise_row

        parts = {"idea_0_text": pair.idea_0.text_digest, "idea_1_text": pair.idea_1.text_digest, **self.extra_evidence(pair.ideas)}
        return pairwise_row(
            self, pair, verdict=NONE, verdict_forward=None, verdict_reverse=None, votes_forward=None,
            votes_reverse=None, counts={}, score_0=None, score_1=None, evidence_parts=parts,
        )  # fmt: skip

    def _empty_point_row(self, item: PointItem) -> dict[str, Any]:
        from ._base import pointwise_row

        return pointwise_row(self, item, predicted=NONE, score=None, counts={}, evidence_parts={"idea_text": item.idea.text_digest})


@JUDGES.register("import", args=ImportArgs)
def import_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """Verdicts made elsewhere (CSV/JSONL), validated and mapped to idea ids."""
    return ImportJudge(ctx, parse_args(ImportArgs, args, ctx))
