"""Every metric, each one function registered with its direction and uncertainty.

Denominators (one convention for all pairwise shares): a pair the judge returned a row for counts once
in `n_pairs`; strict accuracy, soft accuracy, tie rate and verdict rate divide by `n_pairs`, so a `none`
verdict (no valid vote) is a wrong answer that stays in the denominator. `coverage` divides the pairs the
judge was asked about (`covered`) by all pairs of the dataset; `accuracy_on_covered` divides by `covered`. Failed calls (invalid,
truncated, refusal, error) are counted on their own and are nobody's vote; errors are also broken down
by reason (`n_error_by_reason`, computed with the metrics tables, not here: it is not one number).
Run facts such as latency are not metrics: they live in the run log, never in metrics.json.

Search agents (judges/agents) are also measured per decision — one decision is one call made (valid, invalid,
refusal, error, truncated or undecided): their cost, queries, rounds and tokens per decision, how many decisions
ended undecided, and how many "not novel" decisions cite a paper their own searches returned (`grounded_rate`).
These are reported only for judges whose rows carry the agent columns; every other judge has no entry.
Pointwise they carry the plain names (the agents are pointwise judges first, and the study's figures are
pointwise); pairwise (search-agent) the same metrics are prefixed `pairwise_`.
"""

from __future__ import annotations

import numpy as np

from ._estimates import AUROCEstimate, Count, LinearEstimate, Ratio, Total
from ._registry import metric
from ._views import NEGATIVE, POSITIVE, AgentEffort, PairwiseView, PointwiseView

__all__: list[str] = []

# -- pairwise ------------------------------------------------------------------------------------------


@metric("n_pairs", table="pairwise", direction="none")
def n_pairs(v: PairwiseView) -> Count:
    """Pairs the judge returned a row for."""
    return Count(int(v.present.sum()))


@metric("strict_accuracy", table="pairwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def strict_accuracy(v: PairwiseView) -> Ratio:
    """Verdict names the gold idea / n_pairs; tie = wrong, none = wrong (stays in the denominator)."""
    return Ratio(v.correct, v.present)


@metric("soft_accuracy", table="pairwise", direction="higher", uncertainty=("bootstrap",))
def soft_accuracy(v: PairwiseView) -> Ratio:
    """(correct + ½ · ties) / n_pairs; none = wrong."""
    return Ratio(v.correct + 0.5 * v.tie, v.present)


@metric("accuracy_without_ties", table="pairwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def accuracy_without_ties(v: PairwiseView) -> Ratio | None:
    """Correct / pairs whose verdict names an idea (ties and none left out of both)."""
    return Ratio(v.correct, v.decisive) if v.decisive.any() else None


@metric("tie_rate", table="pairwise", direction="lower", uncertainty=("bootstrap", "wilson"))
def tie_rate(v: PairwiseView) -> Ratio:
    """Tie verdicts / n_pairs."""
    return Ratio(v.tie, v.present)


@metric("verdict_rate", table="pairwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def verdict_rate(v: PairwiseView) -> Ratio:
    """Pairs with a valid verdict (an idea or tie, not none) / n_pairs."""
    return Ratio(v.present - v.no_verdict, v.present)


@metric("covered", table="pairwise", direction="none")
def covered(v: PairwiseView) -> Count:
    """Pairs the judge was asked about: a verdict other than none, or at least one call of any outcome
    (an imported file without a row for a pair does not cover it)."""
    return Count(int(v.covered.sum()))


@metric("coverage", table="pairwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def coverage(v: PairwiseView) -> Ratio:
    """Covered pairs / all pairs of the dataset (every pair any judge returned a row for)."""
    return Ratio(v.covered, np.ones_like(v.covered))


@metric("accuracy_on_covered", table="pairwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def accuracy_on_covered(v: PairwiseView) -> Ratio | None:
    """Correct / covered pairs (tie and none among covered pairs are wrong); undefined without a covered pair."""
    return Ratio(v.correct * v.covered, v.covered) if v.covered.any() else None


@metric("n_no_verdict", table="pairwise", direction="lower")
def n_no_verdict(v: PairwiseView) -> Count:
    """Pairs whose verdict is none (no valid vote at all)."""
    return Count(int(v.no_verdict.sum()))


@metric("n_invalid", table="pairwise", direction="lower")
def n_invalid(v: PairwiseView) -> Count:
    """Calls whose output could not be parsed into a vote (summed over pairs, votes and orders)."""
    return Count(int(v.n_invalid.sum()))


@metric("n_refusal", table="pairwise", direction="lower")
def n_refusal(v: PairwiseView) -> Count:
    """Calls the model refused."""
    return Count(int(v.n_refusal.sum()))


@metric("n_error", table="pairwise", direction="lower")
def n_error(v: PairwiseView) -> Count:
    """Calls that failed (API or runtime error) after retries; by reason in n_error_by_reason."""
    return Count(int(v.n_error.sum()))


@metric("n_truncated", table="pairwise", direction="lower")
def n_truncated(v: PairwiseView) -> Count:
    """Calls whose answer was cut at max_tokens before a verdict (nobody's vote, like invalid)."""
    return Count(int(v.n_truncated.sum()))


@metric("n_order_pairs", table="pairwise", direction="none")
def n_order_pairs(v: PairwiseView) -> Count:
    """Pairs judged in both presentation orders with a valid verdict in each."""
    return Count(int(v.both_orders.sum()))


@metric("order_flip_rate", table="pairwise", direction="lower", uncertainty=("bootstrap", "wilson"))
def order_flip_rate(v: PairwiseView) -> Ratio | None:
    """Pairs whose forward-only and reverse-only verdicts differ / n_order_pairs."""
    return Ratio(v.orders_differ, v.both_orders) if v.both_orders.any() else None


@metric("first_position_rate", table="pairwise", direction="target", target=0.5, uncertainty=("bootstrap",))
def first_position_rate(v: PairwiseView) -> Ratio | None:
    """Votes for the idea shown first / votes naming an idea (0.5 = no position preference).

    Bootstrapped over pairs, not votes: the votes of one pair are not independent, so no Wilson interval.
    """
    return Ratio(v.first_votes, v.idea_votes) if v.idea_votes.any() else None


@metric("cost_usd", table="pairwise", direction="lower")
def cost_usd(v: PairwiseView) -> Total:
    """Total cost of the pairwise calls in USD (cached calls cost nothing); unknown (null in metrics.json) when a
    row's cost is, i.e. an API model without a price."""
    return Total(float(v.cost_usd.sum()))


# -- pointwise -----------------------------------------------------------------------------------------


@metric("n_ideas", table="pointwise", direction="none")
def n_ideas(v: PointwiseView) -> Count:
    """Ideas the judge returned a pointwise row for."""
    return Count(int(v.present.sum()))


@metric("pointwise_accuracy", table="pointwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def pointwise_accuracy(v: PointwiseView) -> Ratio:
    """Predicted label = gold label / n_ideas; none = wrong."""
    return Ratio(v.correct, v.present)


@metric("pointwise_coverage", table="pointwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def pointwise_coverage(v: PointwiseView) -> Ratio:
    """Ideas with a POSITIVE/NEGATIVE prediction / n_ideas."""
    return Ratio(v.answered, v.present)


_LABELS = (POSITIVE, NEGATIVE)


def _macro_f1(sums: np.ndarray) -> np.ndarray:
    # parts per label: tp, fp, fn; F1 = 2tp / (2tp + fp + fn), 0 when undefined (sklearn zero_division=0)
    f1s = []
    for k in range(len(_LABELS)):
        tp, fp, fn = sums[..., 3 * k], sums[..., 3 * k + 1], sums[..., 3 * k + 2]
        den = 2 * tp + fp + fn
        f1s.append(np.where(den > 0, 2 * tp / np.where(den > 0, den, 1), 0.0))
    return np.mean(f1s, axis=0)


class MacroF1(LinearEstimate):
    """Macro-F1 over POSITIVE/NEGATIVE; the point value is sklearn's f1_score, resamples use tp/fp/fn sums.

    A `none` prediction is a false negative for the gold class and a false positive for no class.
    """

    def __init__(self, v: PointwiseView):
        cols = []
        for lab in _LABELS:
            g = np.array([x == lab for x in v.gold], dtype=np.float64) * v.present
            p = np.array([x == lab for x in v.predicted], dtype=np.float64) * v.present
            cols += [g * p, (1 - g) * p, g * (1 - p)]
        object.__setattr__(self, "parts", np.column_stack(cols))
        object.__setattr__(self, "combine", _macro_f1)
        object.__setattr__(self, "_view", v)

    @property
    def value(self) -> float:
        from sklearn.metrics import f1_score

        v = self._view
        code = {lab: i for i, lab in enumerate(_LABELS)}  # integer labels: sklearn validates them ~2x faster
        idx = np.flatnonzero(v.present)
        gold = np.array([code.get(v.gold[i], -1) for i in idx])
        pred = np.array([code.get(v.predicted[i], -1) for i in idx])
        return float(f1_score(gold, pred, labels=[0, 1], average="macro", zero_division=0))


@metric("pointwise_macro_f1", table="pointwise", direction="higher", uncertainty=("bootstrap",))
def pointwise_macro_f1(v: PointwiseView) -> MacroF1 | None:
    """Unweighted mean of the POSITIVE and NEGATIVE F1 (sklearn f1_score, average='macro'); none = wrong."""
    return MacroF1(v) if v.present.any() else None


@metric("pointwise_n_invalid", table="pointwise", direction="lower")
def pointwise_n_invalid(v: PointwiseView) -> Count:
    """Pointwise calls whose output could not be parsed into an answer."""
    return Count(int(v.n_invalid.sum()))


@metric("pointwise_n_refusal", table="pointwise", direction="lower")
def pointwise_n_refusal(v: PointwiseView) -> Count:
    """Pointwise calls the model refused."""
    return Count(int(v.n_refusal.sum()))


@metric("pointwise_n_error", table="pointwise", direction="lower")
def pointwise_n_error(v: PointwiseView) -> Count:
    """Pointwise calls that failed after retries; by reason in pointwise_n_error_by_reason."""
    return Count(int(v.n_error.sum()))


@metric("pointwise_n_truncated", table="pointwise", direction="lower")
def pointwise_n_truncated(v: PointwiseView) -> Count:
    """Pointwise calls whose answer was cut at max_tokens before an answer."""
    return Count(int(v.n_truncated.sum()))


@metric("n_scored", table="pointwise", direction="none")
def n_scored(v: PointwiseView) -> Count | None:
    """Ideas with a numeric score (judges that emit scores only)."""
    n = int(np.isfinite(v.scores).sum())
    return Count(n) if n else None


@metric("pointwise_auroc", table="pointwise", direction="higher", uncertainty=("bootstrap",))
def pointwise_auroc(v: PointwiseView) -> AUROCEstimate | None:
    """AUROC of the score for POSITIVE over scored ideas (sklearn roc_auc_score; larger score = more novel)."""
    scored = np.isfinite(v.scores)
    if not scored.any():
        return None
    positive = np.array([x == POSITIVE for x in v.gold], dtype=np.float64)
    if positive[scored].all() or not positive[scored].any():
        return None
    return AUROCEstimate(positive, v.scores)


# -- search agents (both tables; None for judges without agent columns) ------------------------------------------


def _per_decision(a: AgentEffort | None, amount: str) -> Ratio | None:
    if a is None or not a.decisions.any():
        return None
    return Ratio(getattr(a, amount), a.decisions)


def _grounded(a: AgentEffort | None) -> Ratio | None:
    return Ratio(a.grounded, a.cited) if a is not None and a.cited.any() else None


def _undecided(a: AgentEffort | None) -> Count | None:
    return None if a is None else Count(int(a.undecided.sum()))


@metric("grounded_rate", table="pointwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def grounded_rate(v: PointwiseView) -> Ratio | None:
    """NEGATIVE decisions whose cited paper is among the papers their searches returned / NEGATIVE decisions."""
    return _grounded(v.agent)


@metric("cost_per_decision_usd", table="pointwise", direction="lower", uncertainty=("bootstrap",))
def cost_per_decision_usd(v: PointwiseView) -> Ratio | None:
    """USD of all the agent's LLM calls / decisions (a decision = one call made, of any outcome)."""
    return _per_decision(v.agent, "cost_usd")


@metric("queries_per_decision", table="pointwise", direction="none", uncertainty=("bootstrap",))
def queries_per_decision(v: PointwiseView) -> Ratio | None:
    """Search queries sent / decisions."""
    return _per_decision(v.agent, "queries")


@metric("rounds_per_decision", table="pointwise", direction="none", uncertainty=("bootstrap",))
def rounds_per_decision(v: PointwiseView) -> Ratio | None:
    """LLM calls (rounds) / decisions."""
    return _per_decision(v.agent, "rounds")


@metric("tokens_per_decision", table="pointwise", direction="lower", uncertainty=("bootstrap",))
def tokens_per_decision(v: PointwiseView) -> Ratio | None:
    """Tokens (input + output, all rounds) / decisions."""
    return _per_decision(v.agent, "tokens")


@metric("n_undecided", table="pointwise", direction="lower")
def n_undecided(v: PointwiseView) -> Count | None:
    """Decisions that ended after the last round without a decision (nobody's vote)."""
    return _undecided(v.agent)


@metric("pairwise_grounded_rate", table="pairwise", direction="higher", uncertainty=("bootstrap", "wilson"))
def pairwise_grounded_rate(v: PairwiseView) -> Ratio | None:
    """Pairwise decisions citing a paper among those their searches returned / pairwise decisions that cite one."""
    return _grounded(v.agent)


@metric("pairwise_cost_per_decision_usd", table="pairwise", direction="lower", uncertainty=("bootstrap",))
def pairwise_cost_per_decision_usd(v: PairwiseView) -> Ratio | None:
    """USD of the agent's pairwise LLM calls / pairwise decisions."""
    return _per_decision(v.agent, "cost_usd")


@metric("pairwise_queries_per_decision", table="pairwise", direction="none", uncertainty=("bootstrap",))
def pairwise_queries_per_decision(v: PairwiseView) -> Ratio | None:
    """Search queries sent / pairwise decisions."""
    return _per_decision(v.agent, "queries")


@metric("pairwise_rounds_per_decision", table="pairwise", direction="none", uncertainty=("bootstrap",))
def pairwise_rounds_per_decision(v: PairwiseView) -> Ratio | None:
    """LLM calls (rounds) / pairwise decisions."""
    return _per_decision(v.agent, "rounds")


@metric("pairwise_tokens_per_decision", table="pairwise", direction="lower", uncertainty=("bootstrap",))
def pairwise_tokens_per_decision(v: PairwiseView) -> Ratio | None:
    """Tokens (input + output, all rounds) / pairwise decisions."""
    return _per_decision(v.agent, "tokens")


@metric("pairwise_n_undecided", table="pairwise", direction="lower")
def pairwise_n_undecided(v: PairwiseView) -> Count | None:
    """Pairwise decisions that ended without a decision after the last round."""
    return _undecided(v.agent)
