"""Comparing two judges (or two runs, or two configurations) on the same items.

Verdicts are aligned by item id — never by row order or A/B slot — and compared as values
(idea ids, `tie`, `none`): a tie is a third verdict, so idea → tie is a flip. Ids present on one
side only are reported, never dropped; a duplicated id is an error.

`align_verdicts` puts one side on a shared id universe (sorted ids) once; `compare_aligned` then
costs a few vector operations, which is what lets the metrics stage compare every two judges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ..errors import BadInputError
from ._estimates import Interval, bootstrap_weights, percentile_interval, seeded_rng

__all__ = [
    "Comparison",
    "AlignedVerdicts",
    "align_verdicts",
    "compare_aligned",
    "compare_verdicts",
    "verdict_map",
    "mcnemar_exact_p",
    "KINDS",
]

TIE = "tie"
NONE = "none"
KINDS = ("correct", "wrong", "idea", TIE, NONE)
"""How a verdict is classed in flip directions: correct/wrong (names the gold / another idea) when the item
has gold, `idea` when it has none; ties and none are their own kinds."""
_KIND = {k: i for i, k in enumerate(KINDS)}


@dataclass(frozen=True)
class Comparison:
    """Two sets of verdicts compared item by item."""

    compared: int
    """Ids present on both sides."""
    flips: int
    """Compared ids whose verdict differs."""
    flip_rate: float | None
    only_before: list[str]
    only_after: list[str]
    directions: dict[str, int]
    """Flip counts by "kind_before->kind_after" (kinds: correct, wrong, idea (no gold), tie, none)."""
    accuracy_before: float | None = None
    """Strict accuracy on the compared ids that have gold (tie and none are wrong)."""
    accuracy_after: float | None = None
    mcnemar_p: float | None = None
    """Exact McNemar p on correctness over the compared ids with gold (statsmodels mcnemar, exact=True)."""
    accuracy_difference: float | None = None
    """accuracy_after − accuracy_before on the compared ids with gold."""
    difference_ci: Interval | None = None
    """Paired bootstrap interval of the difference (the same resampled ids on both sides)."""
    flipped_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AlignedVerdicts:
    """One side's verdicts over a shared universe of ids (arrays indexed like the universe)."""

    present: np.ndarray
    codes: np.ndarray
    """Verdict codes from a vocabulary shared by both sides (-1 where absent)."""
    kinds: np.ndarray
    """Index into KINDS."""
    has_gold: np.ndarray
    correct: np.ndarray


def verdict_map(rows: Sequence[tuple[str, str]], *, where: str) -> dict[str, str]:
    """{id: verdict} from (id, verdict) rows; a duplicated id is an error naming it."""
    out: dict[str, str] = {}
    for i, (key, verdict) in enumerate(rows):
        if key in out:
            raise BadInputError(
                f"{where}: id {key!r} appears more than once (again at row {i + 1})",
                hint="each id must have exactly one verdict; remove or merge the duplicates",
            )
        out[key] = verdict
    return out


def align_verdicts(
    verdicts: Mapping[str, str], universe: Sequence[str], vocab: dict[str, int], gold: Mapping[str, str] | None = None
) -> AlignedVerdicts:
    """Place `verdicts` on `universe`; `vocab` (verdict → code) is extended in place so codes stay shared."""
    n = len(universe)
    present = np.zeros(n, dtype=bool)
    codes = np.full(n, -1, dtype=np.int64)
    kinds = np.zeros(n, dtype=np.int64)
    has_gold = np.zeros(n, dtype=bool)
    correct = np.zeros(n, dtype=bool)
    for i, key in enumerate(universe):
        v = verdicts.get(key)
        g = gold.get(key) if gold is not None else None
        has_gold[i] = g is not None
        if v is None:
            continue
        present[i] = True
        codes[i] = vocab.setdefault(v, len(vocab))
        correct[i] = g is not None and v == g
        kinds[i] = _KIND[v if v in (TIE, NONE) else ("idea" if g is None else "correct" if v == g else "wrong")]
    return AlignedVerdicts(present, codes, kinds, has_gold, correct)


@lru_cache(maxsize=65536)
def mcnemar_exact_p(only_before: int, only_after: int) -> float:
    """Exact McNemar p on correctness from the discordant counts (statsmodels mcnemar, exact=True).

    The exact test is a binomial test on the discordant pairs only, so the concordant cells do not
    enter (and the result can be cached by the two counts).
    """
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar([[0, only_before], [only_after, 0]], exact=True).pvalue)


def compare_aligned(universe: Sequence[str] | np.ndarray, a: AlignedVerdicts, b: AlignedVerdicts) -> Comparison:
    """Compare two aligned sides: flips, directions and, over common ids with gold, accuracy and McNemar."""
    ids = np.asarray(universe, dtype=object)
    both = a.present & b.present
    flipped = both & (a.codes != b.codes)
    compared, flips = int(both.sum()), int(flipped.sum())
    counts = np.bincount(a.kinds[flipped] * len(KINDS) + b.kinds[flipped], minlength=len(KINDS) ** 2)
    directions = {
        f"{KINDS[i // len(KINDS)]}->{KINDS[i % len(KINDS)]}": int(c) for i, c in enumerate(counts) if c
    }
    result = Comparison(
        compared=compared,
        flips=flips,
        flip_rate=flips / compared if compared else None,
        only_before=ids[a.present & ~b.present].tolist(),
        only_after=ids[b.present & ~a.present].tolist(),
        directions=dict(sorted(directions.items())),
        flipped_ids=ids[flipped].tolist(),
    )
    scored = both & a.has_gold
    n = int(scored.sum())
    if not n:
        return result
    ca, cb = a.correct[scored], b.correct[scored]
    acc_a, acc_b = float(ca.mean()), float(cb.mean())
    return replace(
        result,
        accuracy_before=acc_a,
        accuracy_after=acc_b,
        mcnemar_p=mcnemar_exact_p(int((ca & ~cb).sum()), int((~ca & cb).sum())),
        accuracy_difference=acc_b - acc_a,
    )


def compare_verdicts(
    before: Mapping[str, str],
    after: Mapping[str, str],
    gold: Mapping[str, str] | None = None,
    *,
    resamples: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> Comparison:
    """Compare verdicts aligned by id.

    With `gold`: accuracies and exact McNemar over the compared ids that have a gold verdict and, when
    `resamples` > 0, a paired bootstrap interval of the accuracy difference seeded by `seed`.
    """
    universe = sorted(set(before) | set(after))
    vocab: dict[str, int] = {}
    a = align_verdicts(before, universe, vocab, gold)
    b = align_verdicts(after, universe, vocab, gold)
    result = compare_aligned(universe, a, b)
    if resamples <= 0 or result.accuracy_difference is None:
        return result
    scored = a.present & b.present & a.has_gold
    d = (b.correct[scored].astype(np.float64) - a.correct[scored].astype(np.float64))
    w = bootstrap_weights(len(d), resamples, seeded_rng(seed, "compare"))
    lo, hi = percentile_interval((w @ d) / len(d), confidence)
    return replace(result, difference_ci=Interval(lo, hi, f"paired bootstrap percentile ({resamples} resamples, seed {seed})"))
