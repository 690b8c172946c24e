"""Small synthetic ideas, pairs and pointwise items for judge tests."""

from __future__ import annotations

from novelty_audit.judges import Idea, PairItem, PointItem


def idea(n: int, text: str | None = None) -> Idea:
    return Idea(f"i-{n:016x}", f"Title {n}", text or f"Idea number {n} proposes something.", f"d{n:063x}", "area")


def make_pairs(n: int, dataset: str = "toy", texts: dict[int, str] | None = None) -> list[PairItem]:
    """n pairs of distinct ideas; the gold idea alternates between slots."""
    texts = texts or {}
    out = []
    for k in range(n):
        a, b = idea(2 * k, texts.get(2 * k)), idea(2 * k + 1, texts.get(2 * k + 1))
        out.append(PairItem(dataset, f"p-{k:016x}", a, b, (a if k % 2 == 0 else b).idea_id))
    return out


def make_points(n: int, dataset: str = "toy") -> list[PointItem]:
    return [PointItem(dataset, idea(100 + k), "POSITIVE" if k % 2 == 0 else "NEGATIVE") for k in range(n)]
