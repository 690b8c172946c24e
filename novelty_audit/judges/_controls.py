"""Control judges: the floor every real judge must beat.

- `always-first` votes for whichever idea is shown first; with both orders it must tie every pair.
  Pointwise it answers the first label offered (POSITIVE).
- `always-second` votes for the idea shown second; pointwise NEGATIVE.
- `random` draws each vote from a `random.Random` seeded by (params seed, item id, order, vote index).
- `abstain` declines every call (outcome `refusal`): verdict `none`, never a win.

The `import` backend (verdicts made elsewhere) lives in `_import.py`.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import Field

from ..artifacts import digest_obj
from ..config import Frozen
from ._base import NEGATIVE, POSITIVE, Judge, JudgeContext, parse_args
from ._protocol import Call, CallResult, VoteJudge

__all__ = ["ControlArgs", "ControlJudge", "always_first", "always_second", "random_votes", "abstain"]


class ControlArgs(Frozen):
    """Arguments of the always-first, always-second, random and abstain controls."""

    votes: int = Field(3, ge=1)
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


# The factories of the four control backends (named in the backend table, _backends.py).
always_first = _control("always-first")
always_second = _control("always-second")
random_votes = _control("random")
abstain = _control("abstain")
