"""Small synthetic ideas, pairs and pointwise items for judge tests."""

from __future__ import annotations

import json
from pathlib import Path

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


TOY_DOCS = [
    ("d1", "Graph neural networks for molecules", "We learn molecular property prediction with message passing graph networks.", 2019),
    ("d2", "Protein folding with attention", "Attention models predict protein structure from sequence alignments.", 2021),
    ("d3", "Sparse attention for long documents", "Efficient sparse attention lets transformers read long documents.", 2020),
    ("d4", "Reinforcement learning for robots", "Robots learn locomotion policies with deep reinforcement learning.", 2018),
    ("d5", "Retrieval augmented generation", "Language models retrieve passages to ground generated answers.", 2022),
]
"""A tiny prior-work corpus (id, title, abstract, year) for distance-judge tests: two graph/molecule papers
are close to each other, the rest far apart."""


def toy_corpus_file(tmp_path: Path, docs: list[tuple[str, str, str, int]]) -> str:
    """`docs` as a JSON corpus file under `tmp_path` (key, title, abstract, year)."""
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps([{"key": k, "title": t, "abstract": a, "year": y} for k, t, a, y in docs]))
    return str(path)


def three_ideas() -> tuple[list[PairItem], list[PointItem]]:
    """Three unlike ideas (molecules, music, robots) as three pairs and three pointwise items."""
    def idea(n: int, text: str) -> Idea:
        return Idea(f"i-{n}", f"Idea {n}", text, f"{n:064x}", "ml")

    a = idea(1, "Message passing networks predict properties of molecules.")
    b = idea(2, "We compose music from weather radar time series.")
    c = idea(3, "Robots learn to cook from video demonstrations with attention.")
    pairs = [PairItem("toy", "p-1", a, b, b.idea_id), PairItem("toy", "p-2", c, a, c.idea_id), PairItem("toy", "p-3", b, c, b.idea_id)]
    return pairs, [PointItem("toy", x, "POSITIVE") for x in (a, b, c)]
