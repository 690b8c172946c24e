"""The voting protocol: orders × votes per pair, k votes per idea, every call one explicit outcome.

Pairwise: each requested presentation order (`forward` = published slot order, `reverse` = swapped)
is asked `votes` times. Each answer names a *shown* slot; it is mapped back to the idea id shown
there. An idea's score is the mean over orders of its vote share within that order, where the share's
denominator counts every call of the order — failed calls (invalid, truncated, refusal, error) are nobody's vote,
so they can lower both ideas' shares but never make a winner. Equal scores tie; no valid vote at all
gives `none`. Pointwise: majority of the k valid answers; equal or none valid gives `none`; the score
is the share of POSITIVE answers over all k calls.

Rows record counts per outcome and, per failed call, its short error reason; never run facts such as
latency (they go to `JudgeOutput.facts`), so identical answers give identical rows.

See docs/design/judging.md for why failed calls stay in the denominator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._base import (
    NEGATIVE,
    NONE,
    OUTCOMES,
    POSITIVE,
    TIE,
    UNSPECIFIED_REASON,
    AgentEffort,
    Idea,
    Judge,
    JudgeContext,
    JudgeOutput,
    PairItem,
    PointItem,
    pairwise_row,
    pointwise_row,
)

__all__ = ["ORDERS", "Call", "CallResult", "Outcome", "VoteJudge"]

Outcome = Literal["valid", "invalid", "refusal", "error", "truncated", "undecided"]
"""`truncated`: the answer was cut at max_tokens (finish_reason `length`/`max_tokens`) with no verdict read.
`undecided`: a search agent's last round passed without a decision (judges/agents)."""
ORDERS: dict[str, tuple[str, ...]] = {"both": ("forward", "reverse"), "forward": ("forward",), "reverse": ("reverse",)}


@dataclass(frozen=True)
class Call:
    """One question to a judge backend."""

    task: Literal["pairwise", "pointwise"]
    dataset: str
    item_id: str
    """pair_id (pairwise) or idea_id (pointwise)."""
    order: Literal["forward", "reverse"] | None
    """None for pointwise calls."""
    vote_index: int
    """Replicate index 0..k-1: part of the call's cache key so sampled votes are distinct calls."""
    shown: tuple[Idea, ...]
    """Ideas in the order the judge is shown them (two for pairwise, one for pointwise)."""
    context: str | None = None


@dataclass(frozen=True)
class CallResult:
    """How one call ended. Exactly one outcome; failed calls are kept and counted."""

    outcome: Outcome
    choice: int | str | None = None
    """valid pairwise: the shown slot chosen (0 or 1) or `tie`; valid pointwise: POSITIVE or NEGATIVE."""
    probs: tuple[float, ...] | None = None
    """Optional: probability per shown slot (pairwise) or (P(POSITIVE),) (pointwise); replaces 0/1 shares."""
    call_digest: str | None = None
    provider_model: str | None = None
    cost_usd: float | None = 0.0
    """What the call cost at the judge's price; None: unknown (an API model without a price), never 0."""
    latency_s: float = 0.0
    """A run fact (summed into the judge's facts for the run log); never written to a verdict row."""
    cached: bool = False
    detail: str | None = None
    """Why a call was not valid (parser note, refusal text, last error class and message); goes to the call
    cache and the run facts, never to the rows."""
    error_reason: str | None = None
    """For outcome `error`: a short, stable category ("connection refused", "timeout", "HTTP 500", "HTTP 429",
    "malformed response", "circuit open", "budget"), the same for the same fault and free of keys, hosts,
    ports, pids and times. Rows carry it (`error_reasons`); None is recorded as `unspecified`."""
    rounds: int | None = None
    """Search agents only (None for every other judge): LLM calls this decision made, searches it ran, tokens
    it used, and the prior paper it cited ({title, doc_id, retrieved}) — the rows' agent columns."""
    queries: int | None = None
    tokens: int | None = None
    citation: Mapping[str, Any] | None = None
    truncated_chars: int | None = None
    """Search agents only: characters of fetched text its prompt bounds cut (the row's `evidence_truncated_chars`)."""


class VoteJudge(Judge):
    """Base for judges that answer calls: controls, API LLMs, local logprob models.

    Subclasses implement `answer(call)` (synchronous) or override `run_calls(calls)` (e.g. to run
    them concurrently); either way exactly one `CallResult` per `Call`, in order.
    """

    def __init__(self, ctx: JudgeContext, *, votes: int = 3, orders: str = "both"):
        super().__init__(ctx)
        if votes < 1:
            raise ValueError(f"judge {ctx.name}: votes must be ≥ 1")
        if orders not in ORDERS:
            raise ValueError(f"judge {ctx.name}: orders must be one of {', '.join(ORDERS)}")
        self.votes = votes
        self.orders = orders

    # -- what subclasses provide ------------------------------------------------------------------
    def answer(self, call: Call) -> CallResult:
        raise NotImplementedError(f"{type(self).__name__} implements neither answer() nor run_calls()")

    def run_calls(self, calls: Sequence[Call]) -> list[CallResult]:
        return [self.answer(c) for c in calls]

    def extra_evidence(self, shown: Sequence[Idea]) -> dict[str, str]:
        """Evidence beyond the idea texts, as {part: digest} (e.g. retrieved abstracts)."""
        return {}

    def evidence_docs(self, ideas: Sequence[Idea]) -> list[dict[str, Any]]:
        """The documents behind `extra_evidence` for ideas in pair slot order (slots idea_0, idea_1) or one
        idea (slot idea): the `evidence_docs` column entries (judges._base.EVIDENCE_DOC_KEYS)."""
        return []

    def item_evidence(self, ideas: Sequence[Idea], answered: Sequence[tuple[Call, CallResult]]) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """(evidence parts beyond the idea texts, `evidence_docs` entries) of one item, given its answered calls.
        Default: `extra_evidence` and `evidence_docs`, which depend on the ideas only; a judge whose evidence
        differs per call (a search agent's queries) overrides this."""
        return self.extra_evidence(ideas), self.evidence_docs(ideas)

    def facts(self) -> dict[str, Any]:
        """Run facts for the log (calls made, cache hits, cost)."""
        return {}

    # -- the protocol -----------------------------------------------------------------------------
    def plan(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> list[Call]:
        calls: list[Call] = []
        for p in pairs:
            for order in ORDERS[self.orders]:
                shown = p.ideas if order == "forward" else (p.idea_1, p.idea_0)
                calls.extend(Call("pairwise", p.dataset, p.pair_id, order, v, shown, p.context) for v in range(self.votes))  # type: ignore[arg-type]
        for pt in points:
            calls.extend(Call("pointwise", pt.dataset, pt.idea.idea_id, None, v, (pt.idea,)) for v in range(self.votes))
        return calls

    def judge(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> JudgeOutput:
        calls = self.plan(pairs, points)
        results = self.run_calls(calls)
        if len(results) != len(calls):
            raise RuntimeError(f"judge {self.name}: {len(calls)} calls but {len(results)} results")
        by_item: dict[tuple[str, str, str], list[tuple[Call, CallResult]]] = {}
        for c, r in zip(calls, results):
            by_item.setdefault((c.task, c.dataset, c.item_id), []).append((c, r))
        out = JudgeOutput(facts=self.facts())
        for c, r in zip(calls, results):
            if r.outcome == "error":
                # one entry per distinct call: a call answering two rows (deduplicated) failed once
                key = r.call_digest or f"{c.task}/{c.dataset}/{c.item_id}/{c.order}/{c.vote_index}"
                out.failed_calls[key] = r.error_reason or UNSPECIFIED_REASON
        for p in pairs:
            out.pairwise.append(self._pair_row(p, by_item[("pairwise", p.dataset, p.pair_id)]))
        for pt in points:
            out.pointwise.append(self._point_row(pt, by_item[("pointwise", pt.dataset, pt.idea.idea_id)]))
        return out

    def _pair_row(self, pair: PairItem, answered: list[tuple[Call, CallResult]]) -> dict[str, Any]:
        ids = (pair.idea_0.idea_id, pair.idea_1.idea_id)
        votes: dict[str, list[str]] = {}
        shares: dict[str, list[float]] = {}
        counts: Counter[str] = Counter()
        for c, r in answered:
            _check_outcome(self.name, r)
            counts[r.outcome] += 1
            assert c.order is not None
            share = shares.setdefault(c.order, [0.0, 0.0])
            if r.outcome != "valid":
                votes.setdefault(c.order, []).append(r.outcome)
                continue
            if r.choice not in (0, 1, TIE):
                raise RuntimeError(f"judge {self.name}: valid answer with choice {r.choice!r} for pair {pair.pair_id}")
            if r.choice == TIE:
                # A tie answer is half a vote for each idea: shares move equally, no winner is made.
                votes.setdefault(c.order, []).append(TIE)
                probs = r.probs or (0.5, 0.5)
            else:
                votes.setdefault(c.order, []).append(c.shown[int(r.choice)].idea_id)
                probs = r.probs or tuple(1.0 if i == r.choice else 0.0 for i in range(2))
            for slot, idea in enumerate(c.shown):
                share[ids.index(idea.idea_id)] += probs[slot]
        k = {o: len(v) for o, v in votes.items()}
        per_order = {o: (s[0] / k[o], s[1] / k[o]) for o, s in shares.items()}
        order_verdicts = {o: _decide(ids, per_order[o], any(v in ids or v == TIE for v in votes[o])) for o in per_order}
        score_0 = sum(s[0] for s in per_order.values()) / len(per_order)
        score_1 = sum(s[1] for s in per_order.values()) / len(per_order)
        verdict = _decide(ids, (score_0, score_1), counts["valid"] > 0)
        extra, docs = self.item_evidence(pair.ideas, answered)
        parts = {"idea_0_text": pair.idea_0.text_digest, "idea_1_text": pair.idea_1.text_digest, **extra}
        rs = [r for _, r in answered]
        return pairwise_row(
            self,
            pair,
            verdict=verdict,
            verdict_forward=order_verdicts.get("forward"),
            verdict_reverse=order_verdicts.get("reverse"),
            votes_forward=votes.get("forward"),
            votes_reverse=votes.get("reverse"),
            counts=counts,
            score_0=score_0,
            score_1=score_1,
            evidence_parts=parts,
            call_digests=[r.call_digest for r in rs if r.call_digest],
            provider_model=_models(rs),
            cost_usd=total_cost(rs),
            error_reasons=_error_reasons(rs),
            evidence_docs=docs,
            agent=_effort(answered, negative_only=False),
        )

    def _point_row(self, item: PointItem, answered: list[tuple[Call, CallResult]]) -> dict[str, Any]:
        counts: Counter[str] = Counter()
        tally: Counter[str] = Counter()
        positive = 0.0
        for _, r in answered:
            _check_outcome(self.name, r)
            counts[r.outcome] += 1
            if r.outcome != "valid":
                continue
            if r.choice not in (POSITIVE, NEGATIVE):
                raise RuntimeError(f"judge {self.name}: valid pointwise answer {r.choice!r} for idea {item.idea.idea_id}")
            tally[str(r.choice)] += 1
            positive += r.probs[0] if r.probs else (1.0 if r.choice == POSITIVE else 0.0)
        if tally[POSITIVE] > tally[NEGATIVE]:
            predicted = POSITIVE
        elif tally[NEGATIVE] > tally[POSITIVE]:
            predicted = NEGATIVE
        else:
            predicted = NONE
        extra, docs = self.item_evidence((item.idea,), answered)
        parts = {"idea_text": item.idea.text_digest, **extra}
        return pointwise_row(
            self, item, predicted=predicted, score=positive / len(answered), counts=counts, evidence_parts=parts,
            error_reasons=_error_reasons([r for _, r in answered]),
            evidence_docs=docs,
            cost_usd=total_cost([r for _, r in answered]),
            agent=_effort(answered, negative_only=True),
        )


def total_cost(results: list[CallResult]) -> float | None:
    """The calls' summed cost; None when any call's cost is unknown (a model without a price is never free)."""
    costs = [r.cost_usd for r in results]
    return None if any(c is None for c in costs) else float(sum(costs))  # type: ignore[arg-type]


def _decide(ids: tuple[str, str], scores: tuple[float, float], any_valid: bool) -> str:
    if not any_valid:
        return NONE
    if scores[0] > scores[1]:
        return ids[0]
    if scores[1] > scores[0]:
        return ids[1]
    return TIE


def _check_outcome(judge: str, r: CallResult) -> None:
    # An unknown outcome would be counted in no column: the row would silently lose a call.
    if r.outcome != "valid" and r.outcome not in OUTCOMES:
        raise RuntimeError(f"judge {judge}: call outcome {r.outcome!r} is not valid or one of {', '.join(OUTCOMES)}")


def _effort(answered: Sequence[tuple[Call, CallResult]], *, negative_only: bool) -> AgentEffort | None:
    """The agent columns of one row, or None when no call came from a search agent (`rounds` unset).

    Citations: pointwise, one per NEGATIVE decision (a NEGATIVE without a citation is recorded as ungrounded,
    title null); pairwise, one per decision that cites."""
    if all(r.rounds is None for _, r in answered):
        return None
    cites = []
    for c, r in answered:
        if negative_only and not (r.outcome == "valid" and r.choice == NEGATIVE):
            continue
        if not negative_only and r.citation is None:
            continue
        cited = r.citation or {}
        cites.append({"order": c.order, "vote": c.vote_index, "title": cited.get("title"),
                      "doc_id": cited.get("doc_id"), "retrieved": bool(cited.get("retrieved", False))})  # fmt: skip
    return AgentEffort(
        rounds=sum(r.rounds or 0 for _, r in answered),
        queries=sum(r.queries or 0 for _, r in answered),
        tokens=sum(r.tokens or 0 for _, r in answered),
        citations=tuple(cites),
        truncated_chars=sum(r.truncated_chars or 0 for _, r in answered),
    )


def _error_reasons(results: Sequence[CallResult]) -> list[str]:
    return sorted(r.error_reason or UNSPECIFIED_REASON for r in results if r.outcome == "error")


def _models(results: Sequence[CallResult]) -> str | None:
    models = sorted({r.provider_model for r in results if r.provider_model})
    return ",".join(models) if models else None


def counts_of(results: Sequence[CallResult]) -> Mapping[str, int]:
    return Counter(r.outcome for r in results)
