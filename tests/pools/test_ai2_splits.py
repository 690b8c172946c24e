"""The further Ai2 splits (gpt-5.4 ideation backbone; ideas as plans) are pinned as datasets of their own."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from novelty_audit.datasets import load_dataset
from novelty_audit.params import load_params

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pins():
    return load_params(REPO / "params.yaml").pin.datasets


def load(pins, name: str):
    pin = pins[name]
    return load_dataset(name, pin.model_copy(update={"path": str(REPO / pin.path)}))


def positive_titles(norm) -> set[str]:
    return set(norm.ideas.filter(pl.col("label") == "POSITIVE")["title"])


def test_the_gpt_5_4_backbone_split_shares_the_human_ideas_and_regenerates_the_negatives(pins):
    base, variant = load(pins, "human-plus-generated"), load(pins, "human-plus-generated-gpt-5.4")
    assert (variant.pairs.height, variant.ideas.height, variant.exclusions.height) == (154, 308, 0)
    assert positive_titles(variant) == positive_titles(base)
    gen = lambda n: set(n.ideas.filter(pl.col("source") == "generated")["text"])  # noqa: E731
    assert not gen(variant) & gen(base)


@pytest.mark.parametrize(("name", "original", "ideas", "gold_first"), [
    ("human-only-plan", "human-only", 299, 84), ("human-plus-generated-plan", "human-plus-generated", 308, 80)])
def test_a_plan_split_rewrites_every_idea_of_its_original_pairs(pins, name, original, ideas, gold_first):
    base, plan = load(pins, original), load(pins, name)
    assert (plan.pairs.height, plan.ideas.height, plan.exclusions.height) == (154, ideas, 0)
    assert set(plan.ideas["title"]) == set(base.ideas["title"])
    assert all("**purpose**" in t and "**mechanism**" in t for t in plan.ideas["text"])
    assert plan.pairs["gold_slot"].to_list().count(0) == gold_first
