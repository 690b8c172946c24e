"""Per-item arrays of one (dataset, judge) slice of a verdict table, aligned to a fixed id order.

Every view is aligned to a `universe` of ids (sorted) shared by all judges of a dataset, so that one
bootstrap weight matrix pairs every judge's items. Items a judge returned no row for are zero everywhere
with `present = 0`; they never enter a denominator.

`covered`: the judge was asked about the item — its row has a verdict other than `none`, or at least one
call of any outcome. A `none` row with zero calls (an imported file without a row for the pair) is present
but not covered. Tables without count columns (files made elsewhere) count every row as covered.

Search agents (judges/agents) add effort columns — `n_rounds`, `n_queries`, `n_tokens`, `citations` — that are
null for every other judge; `AgentEffort` reads them, and is None for a slice where they are all null.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import orjson
import polars as pl

from ..errors import BadInputError

__all__ = ["AgentEffort", "PairwiseView", "PointwiseView", "pairwise_view", "pointwise_view", "TIE", "NONE", "check_unique", "is_covered"]

TIE = "tie"
NONE = "none"
POSITIVE = "POSITIVE"
NEGATIVE = "NEGATIVE"
UNSPECIFIED_REASON = "unspecified"
"""Same as novelty_audit.judges.UNSPECIFIED_REASON (metrics read tables, they do not import the judges)."""


def check_unique(df: pl.DataFrame, key: list[str], where: str) -> None:
    """Raise naming the first duplicated key: a duplicate would be counted twice in every metric."""
    dup = df.group_by(key).len().filter(pl.col("len") > 1)
    if dup.height:
        first = dup.sort(key).row(0, named=True)
        raise BadInputError(
            f"{where}: {dup.height} duplicated key(s) {key}, e.g. {', '.join(f'{k}={first[k]}' for k in key)} "
            f"appears {first['len']} times",
            hint="each (dataset, judge, item) must have exactly one row",
        )


@dataclass(frozen=True)
class AgentEffort:
    """A search agent's effort per item (arrays over the view's ids): what its decisions made and cited.

    A decision is one call made: n_valid + n_invalid + n_refusal + n_error + n_truncated + n_undecided.
    """

    decisions: np.ndarray
    undecided: np.ndarray
    rounds: np.ndarray
    queries: np.ndarray
    tokens: np.ndarray
    cost_usd: np.ndarray
    """NaN where a row recorded no cost (the per-decision cost is then unknown, never free)."""
    cited: np.ndarray
    """Citations checked: pointwise one per NEGATIVE decision, pairwise one per decision that cites."""
    grounded: np.ndarray
    """Of those, citations whose paper is among the papers the decision's searches returned (`retrieved`)."""


def _citations(r: dict, where: str) -> list[dict]:
    raw = r.get("citations")
    if raw is None:
        return []
    try:
        cites = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except orjson.JSONDecodeError:
        raise BadInputError(f"{where}, field citations: not valid JSON") from None
    if not isinstance(cites, list) or not all(isinstance(c, dict) and isinstance(c.get("retrieved"), bool) for c in cites):
        raise BadInputError(f"{where}, field citations: expected a JSON list of entries with a boolean `retrieved`",
                            hint="docs/design/tables.md (citations)")
    return cites


def agent_effort(rows: list[dict], at: np.ndarray, n: int, where: str, id_col: str) -> AgentEffort | None:
    """The agent columns of one slice aligned to its universe; None when no row has them (not an agent)."""
    if not any(r.get(c) is not None for r in rows for c in AGENT_COUNTS):
        return None
    dec, und, rounds, queries, tokens, cost, cited, grounded = (np.zeros(n) for _ in range(8))
    for i, r in zip(at, rows):
        here = f"{where}, {id_col.removesuffix('_id')} {r[id_col]}"
        und[i] = _count(r, "n_undecided")
        dec[i] = sum(_count(r, c) for c in _CALL_COUNTS) + und[i]
        rounds[i], queries[i], tokens[i] = (_count(r, c) for c in AGENT_COUNTS)
        cost[i] = np.nan if r.get("cost_usd") is None else r["cost_usd"]
        cites = _citations(r, here)
        cited[i] = len(cites)
        grounded[i] = sum(1 for c in cites if c["retrieved"])
    return AgentEffort(dec, und, rounds, queries, tokens, cost, cited, grounded)


@dataclass(frozen=True)
class PairwiseView:
    """One judge on one dataset, pairwise; arrays are float 0/1 (or counts) over `ids`."""

    dataset: str
    judge: str
    ids: list[str]
    present: np.ndarray
    correct: np.ndarray
    tie: np.ndarray
    no_verdict: np.ndarray
    decisive: np.ndarray
    both_orders: np.ndarray
    """Both presentation orders were run and both gave a valid verdict."""
    orders_differ: np.ndarray
    first_votes: np.ndarray
    """Votes for the idea shown first (idea_0 in the forward order, idea_1 in the reverse order)."""
    idea_votes: np.ndarray
    """Votes naming either idea (ties and failed calls excluded)."""
    n_invalid: np.ndarray
    n_refusal: np.ndarray
    n_error: np.ndarray
    cost_usd: np.ndarray
    n_truncated: np.ndarray = field(default_factory=lambda: np.zeros(0))
    error_reasons: dict[str, int] = field(default_factory=dict)
    """Failed calls by reason, summed over the slice; sums to n_error (`unspecified` where no reason was recorded)."""
    covered: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """The judge was asked about the pair (see the module docstring); ⊆ present."""
    agent: AgentEffort | None = None
    """Search agents only (their rows carry effort columns); None for every other judge."""


@dataclass(frozen=True)
class PointwiseView:
    """One judge on one dataset, pointwise."""

    dataset: str
    judge: str
    ids: list[str]
    present: np.ndarray
    gold: list[str | None]
    predicted: list[str | None]
    correct: np.ndarray
    answered: np.ndarray
    scores: np.ndarray
    """NaN where the judge gave no score."""
    n_invalid: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_refusal: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_error: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_truncated: np.ndarray = field(default_factory=lambda: np.zeros(0))
    error_reasons: dict[str, int] = field(default_factory=dict)
    """As in PairwiseView."""
    covered: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """As in PairwiseView."""
    agent: AgentEffort | None = None
    """As in PairwiseView."""


def _align(ids: list[str], universe: list[str]) -> np.ndarray:
    pos = {pid: i for i, pid in enumerate(universe)}
    missing = [i for i in ids if i not in pos]
    if missing:
        raise ValueError(f"ids outside the universe: {missing[:5]}")
    return np.fromiter((pos[i] for i in ids), dtype=np.int64, count=len(ids))


def _votes_for(votes: list[str] | None, idea: str) -> int:
    return 0 if votes is None else sum(1 for v in votes if v == idea)


def _idea_votes(votes: list[str] | None, a: str, b: str) -> int:
    return 0 if votes is None else sum(1 for v in votes if v == a or v == b)


def _count(r: dict, col: str) -> int:
    # Tables made elsewhere (imported verdict files, older runs) may lack a count column: nothing counted.
    return int(r.get(col) or 0)


_CALL_COUNTS = ("n_valid", "n_invalid", "n_refusal", "n_error", "n_truncated")
AGENT_COUNTS = ("n_rounds", "n_queries", "n_tokens")


def is_covered(r: dict, verdict: str | None) -> bool:
    """A row is covered unless it is `none` with every call count present and zero (nobody was asked).

    An agent's `undecided` decision was asked too (`n_undecided`, absent from older tables, counts when present)."""
    if verdict != NONE or any(r.get(c) is None for c in _CALL_COUNTS):
        return True
    return sum(int(r[c]) for c in _CALL_COUNTS) + _count(r, "n_undecided") > 0


def _add_reasons(total: Counter[str], r: dict, where: str) -> None:
    """Add one row's failed calls by reason; a row without (enough) recorded reasons counts `unspecified`."""
    n_error = _count(r, "n_error")
    reasons = list(r.get("error_reasons") or [])
    if len(reasons) > n_error:
        raise BadInputError(
            f"{where}, field error_reasons: {len(reasons)} reasons for n_error={n_error} failed call(s)",
            hint="error_reasons holds one entry per failed call (docs/design/tables.md)",
        )
    total.update(reasons)
    if n_error > len(reasons):
        total[UNSPECIFIED_REASON] += n_error - len(reasons)


def _slice(
    df: pl.DataFrame, id_col: str, universe: list[str] | None, where: str, caller: str
) -> tuple[str, str, list[str], list[dict], np.ndarray]:
    """One (dataset, judge) slice: its keys, its universe of ids (default: its own, sorted), its rows and
    each row's position in the universe."""
    keys = df.select("dataset", "judge").unique()
    if keys.height > 1:
        raise ValueError(f"{caller} takes one (dataset, judge) slice")
    check_unique(df, ["dataset", "judge", id_col], where)
    dataset, judge = (keys.row(0) if keys.height else ("", ""))
    universe = sorted(df[id_col].to_list()) if universe is None else universe
    rows = df.to_dicts()
    return dataset, judge, universe, rows, _align([r[id_col] for r in rows], universe)


def pairwise_view(df: pl.DataFrame, universe: list[str] | None = None, *, where: str = "verdicts") -> PairwiseView:
    """Build the view of one (dataset, judge) slice; `universe` defaults to its own sorted pair ids."""
    dataset, judge, universe, rows, at = _slice(df, "pair_id", universe, where, "pairwise_view")
    n = len(universe)

    def arr() -> np.ndarray:
        return np.zeros(n, dtype=np.float64)

    present, correct, tie, none, decisive = arr(), arr(), arr(), arr(), arr()
    both, differ, first, ideas = arr(), arr(), arr(), arr()
    inv, ref, err, trunc, cost = arr(), arr(), arr(), arr(), arr()
    covered = arr()
    reasons: Counter[str] = Counter()
    for i, r in zip(at, rows):
        a, b, v = r["idea_0"], r["idea_1"], r["verdict"]
        allowed = (a, b, TIE, NONE)
        for field in ("verdict", "verdict_forward", "verdict_reverse"):
            val = r.get(field)
            if (val is not None or field == "verdict") and val not in allowed:
                raise BadInputError(
                    f"{where}: dataset {dataset}, judge {judge}, pair {r['pair_id']}, field {field}: "
                    f"{val!r} is neither idea ({a}, {b}) nor '{TIE}'/'{NONE}'",
                    hint="verdicts name an idea by idea_id (docs/design/tables.md)",
                )
        present[i] = 1
        covered[i] = is_covered(r, v)
        correct[i] = v == r["gold_idea_id"]
        tie[i] = v == TIE
        none[i] = v == NONE
        decisive[i] = v in (a, b)
        fwd, rev = r.get("verdict_forward"), r.get("verdict_reverse")
        if fwd is not None and rev is not None and NONE not in (fwd, rev):
            both[i] = 1
            differ[i] = fwd != rev
        vf, vr = r.get("votes_forward"), r.get("votes_reverse")
        first[i] = _votes_for(vf, a) + _votes_for(vr, b)
        ideas[i] = _idea_votes(vf, a, b) + _idea_votes(vr, a, b)
        inv[i], ref[i], err[i], trunc[i] = (_count(r, c) for c in ("n_invalid", "n_refusal", "n_error", "n_truncated"))
        _add_reasons(reasons, r, f"{where}: dataset {dataset}, judge {judge}, pair {r['pair_id']}")
        # Unknown (absent or null) stays NaN so the total is reported as unknown rather than as free.
        cost[i] = np.nan if r.get("cost_usd") is None else r["cost_usd"]
    return PairwiseView(
        dataset, judge, universe, present, correct, tie, none, decisive, both, differ, first, ideas, inv, ref, err, cost,
        trunc, dict(sorted(reasons.items())), covered, agent_effort(rows, at, n, f"{where}: dataset {dataset}, judge {judge}", "pair_id"),
    )


def pointwise_view(df: pl.DataFrame, universe: list[str] | None = None, *, where: str = "pointwise") -> PointwiseView:
    """Build the pointwise view of one (dataset, judge) slice."""
    dataset, judge, universe, rows, at = _slice(df, "idea_id", universe, where, "pointwise_view")
    n = len(universe)
    present, correct, answered = np.zeros(n), np.zeros(n), np.zeros(n)
    scores = np.full(n, np.nan)
    inv, ref, err, trunc = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    covered = np.zeros(n)
    reasons: Counter[str] = Counter()
    gold: list[str | None] = [None] * n
    pred: list[str | None] = [None] * n
    for i, r in zip(at, rows):
        p = r["predicted"]
        if p not in (POSITIVE, NEGATIVE, NONE):
            raise BadInputError(
                f"{where}: dataset {dataset}, judge {judge}, idea {r['idea_id']}, field predicted: {p!r} is not "
                f"{POSITIVE}, {NEGATIVE} or '{NONE}'",
            )
        present[i] = 1
        covered[i] = is_covered(r, p)
        gold[i], pred[i] = r["gold_label"], p
        correct[i] = p == r["gold_label"]
        answered[i] = p != NONE
        s = r.get("score")
        if s is not None and np.isfinite(s):
            scores[i] = s
        inv[i], ref[i], err[i], trunc[i] = (_count(r, c) for c in ("n_invalid", "n_refusal", "n_error", "n_truncated"))
        _add_reasons(reasons, r, f"{where}: dataset {dataset}, judge {judge}, idea {r['idea_id']}")
    return PointwiseView(
        dataset, judge, universe, present, gold, pred, correct, answered, scores, inv, ref, err, trunc, dict(sorted(reasons.items())),
        covered, agent_effort(rows, at, n, f"{where}: dataset {dataset}, judge {judge}", "idea_id"),
    )
