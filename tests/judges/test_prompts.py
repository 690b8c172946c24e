"""Prompt templates are versioned package data; the parser is tolerant and says what it could not read."""

from __future__ import annotations

import pytest
from judge_items import idea

from novelty_audit.errors import ConfigError
from novelty_audit.judges import load_prompt, parse_verdict, prompt_names

PAIRWISE = ["reference-v1", "p1-v1", "p2-v1", "p3-v1", "p4-v1", "p5-v1"]


def test_every_published_variant_ships_for_pairwise_and_the_definitions_for_pointwise():
    names = set(prompt_names())
    assert {f"pairwise-{v}" for v in PAIRWISE} <= names
    assert {"pointwise-reference-v1", "pointwise-p1-v1", "pointwise-p2-v1"} <= names


@pytest.mark.parametrize("variant", PAIRWISE)
def test_each_variant_renders_both_ideas_and_the_output_contract(variant):
    msgs = load_prompt("pairwise", variant).render((idea(1, "FIRST TEXT"), idea(2, "SECOND TEXT")))
    user = msgs[-1]["content"]
    assert user.index("FIRST TEXT") < user.index("SECOND TEXT")
    assert '{"answer": "A"}' in user and "{{" not in user


def test_variants_differ_and_only_the_reference_carries_guardrails():
    digests = {v: load_prompt("pairwise", v).digest for v in PAIRWISE}
    assert len(set(digests.values())) == len(PAIRWISE)
    assert "guardrails" in load_prompt("pairwise", "reference-v1").system
    assert "guardrails" not in load_prompt("pairwise", "p1-v1").system
    assert "originality" not in load_prompt("pairwise", "p2-v1").system


def test_reasoning_setting_changes_the_contract_and_the_digest():
    brief, none = load_prompt("pairwise", "reference-v1", "brief"), load_prompt("pairwise", "reference-v1", "none")
    assert brief.digest != none.digest
    assert "briefly" in brief.answer_format and "only" in none.answer_format


def test_retrieval_and_plan_form_change_what_is_shown():
    t = load_prompt("pairwise", "reference-v1")
    shown = (idea(1), idea(2))
    plain = t.render(shown)[-1]["content"]
    with_ev = t.render(shown, evidence=("- Prior A (2020): x", "- Prior B (2021): y"))[-1]["content"]
    plan = t.render(shown, form="plan")[-1]["content"]
    assert "Related prior work for Idea A:\n- Prior A" in with_ev and "Prior" not in plain
    assert "Research plan" in plan and "Research plan" not in plain


def test_unknown_template_is_a_config_error_listing_known_ones():
    with pytest.raises(ConfigError) as exc:
        load_prompt("pairwise", "p9-v1")
    assert "pairwise-reference-v1" in exc.value.hint


@pytest.mark.parametrize(
    "text, outcome, choice",
    [
        ('Reasoning.\n{"answer": "B"}', "valid", 1),
        ('```json\n{"answer": "A"}\n```', "valid", 0),
        ("{'answer': 'Idea B',}", "valid", 1),
        ('The example {"answer": "A"} is wrong; mine: {"answer": "B"}', "valid", 1),
        ("Final answer: A", "valid", 0),
        ('{"answer": "C"}', "invalid", None),
        ('I think A. {"answer": A,, ', "invalid", None),
        ("", "invalid", None),
        ("I cannot help with evaluating these ideas.", "refusal", None),
    ],
)
def test_the_pairwise_parser(text, outcome, choice):
    p = parse_verdict("pairwise", text)
    assert (p.outcome, p.choice) == (outcome, choice)
    if outcome == "invalid":
        assert p.note  # what could not be parsed is recorded


def test_the_pointwise_parser():
    assert parse_verdict("pointwise", '{"answer": "yes"}').choice == "POSITIVE"
    assert parse_verdict("pointwise", '{"answer": "No"}').choice == "NEGATIVE"
    assert parse_verdict("pointwise", '{"answer": "maybe"}').outcome == "invalid"
