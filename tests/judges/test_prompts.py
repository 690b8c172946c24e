"""Prompt templates are versioned package data; the parser reads a verdict only where the output contract
puts it, never from an echoed format example or an answer naming both labels, and says what it could not read."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from judge_items import idea, make_pairs, make_points

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
    assert '{"answer": "<A or B>"}' in user and "{{" not in user


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
        ('The form is {"answer": "<A or B>"}; mine:\n{"answer": "B"}', "valid", 1),
        ('{\n  "answer": "B"\n}', "valid", 1),
        ('Both have merit.\n**Final answer:** {"answer": "A"}', "valid", 0),
        ("Final answer: A", "valid", 0),
        ('{"answer": "A"}\nOn reflection the second idea is close to prior work.', "invalid", None),
        ('The example {"answer": "A"} is wrong; mine: {"answer": "B"}', "invalid", None),
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

    assert parse_verdict("pointwise", '{"answer": "<yes or no>"}').outcome == "invalid"
    assert parse_verdict("pointwise", 'Novel.\n{"answer": "yes"}  (or {"answer": "no"})').outcome == "invalid"


@pytest.mark.parametrize(
    "text, task, choice",
    [
        ("Answer:\nA", "pairwise", 0),
        ("Answer:\n\nA.", "pairwise", 0),
        ("Answer:\n  Idea B", "pairwise", 1),
        ("Final answer:\n\nB", "pairwise", 1),
        ("Answer:\nyes", "pointwise", "POSITIVE"),
        ("Answer:\n\nNo.", "pointwise", "NEGATIVE"),
        ("Answer:\nnot novel", "pointwise", "NEGATIVE"),
        ("Answer:\nB, because it is new", "pairwise", 1),  # one label, and nothing after it that could be a vote
    ],
)
def test_a_label_on_the_line_below_a_bare_answer_line_is_the_verdict(text, task, choice):
    # What a base model writes after a completions prompt ending "Answer:": a newline first, then the label.
    p = parse_verdict(task, text)
    assert (p.outcome, p.choice, p.note) == ("valid", choice, None)


@pytest.mark.parametrize(
    "text, task",
    [
        ("Answer:\n<A or B>", "pairwise"),
        ("Answer:\n<yes or no>", "pointwise"),
        ("Answer:\nA or B", "pairwise"),
        ("Answer:\nA\nIdea A is more novel because", "pairwise"),
        ("Answer: B\nAnswer:\nA", "pairwise"),
        ("Answer:\nmaybe", "pointwise"),
        ("Answer:\n\n", "pairwise"),
        ("We compare them.\nA", "pairwise"),
    ],
)
def test_what_stands_below_a_bare_answer_line_must_be_one_label_and_the_last_line(text, task):
    p = parse_verdict(task, text)
    assert (p.outcome, p.choice) == ("invalid", None) and p.note, p


@pytest.mark.parametrize(
    "continuation, choice",
    [
        (' "A"', 0),
        (' "B".', 1),
        ('"B". This answer is the most novel because it proposes a new benchmark.', 1),
        (" 'A'.", 0),
        (" “B”", 1),
        (" **A**", 0),
        (" Idea B. It reuses no prior method.", 1),
        (' "B" (a.k.a. B)', 1),  # the same label again: still one vote
    ],
)
def test_a_completion_that_is_one_label_and_nothing_else_that_could_be_a_vote_counts(continuation, choice):
    """What Gemma 3 270M writes after a completions prompt ending "Answer:" (the engine parses lead-in + text)."""
    p = parse_verdict("pairwise", "Answer:" + continuation)
    assert (p.outcome, p.choice) == ("valid", choice), p


@pytest.mark.parametrize(
    "continuation",
    [
        ' "A" or "B"',  # the format's placeholder, echoed
        " <A or B>",
        " A/B",
        ' "A" (or "B")',
        ' {"answer": "A"} (or {"answer": "B"})',
        ' "A". Idea B is less novel.',  # a second label in the sentence: which is the vote?
        " a new benchmark for robots",  # the article, not a label
        ' "B". A new approach.',  # "A" as a word: could be a vote
        " [A]",
        " <A>",  # a placeholder's markup around a label
        ' "A" (a.k.a. B)',
        ' "C"',
        "",
    ],
)
def test_a_completion_with_anything_else_that_could_be_a_vote_or_a_placeholder_is_refused(continuation):
    p = parse_verdict("pairwise", "Answer:" + continuation)
    assert (p.outcome, p.choice) == ("invalid", None) and p.note, p


# -- no invented votes ---------------------------------------------------------------------------------

PROMPTS = resources.files("novelty_audit").joinpath("prompts")
LEGACY_EXAMPLES = ['{"answer": "A"}  (or {"answer": "B"})', '{"answer": "yes"}  (or {"answer": "no"})']
"""The v1 format examples a real model echoed back, read as a vote by the old parser."""


def packaged_examples() -> list[tuple[str, str]]:
    """(where, text) for every answer-format example in the packaged prompt files, found by reading them:
    every line holding a JSON-like object, as shipped and as rendered into every judge prompt, and each
    rendered output contract and user message whole (a model that repeats its prompt)."""
    found: list[tuple[str, str]] = []
    for f in sorted(PROMPTS.iterdir(), key=lambda f: f.name):
        if not f.name.endswith(".txt"):
            continue
        text = f.read_text(encoding="utf-8")
        found += [(f.name, line) for line in text.splitlines() if re.search(r"\{.*\}", line) and "{{" not in line]
        m = re.match(r"(pairwise|pointwise)-(.+)\.txt$", f.name)
        if m:
            for reasoning in ("brief", "none"):
                t = load_prompt(m.group(1), m.group(2), reasoning)
                user = t.render(tuple(idea(k) for k in range(2 if t.task == "pairwise" else 1)))[-1]["content"]
                where = f"{f.name} ({reasoning})"
                found += [(where, line) for line in t.answer_format.splitlines() if "{" in line]
                found += [(f"{where} contract", t.answer_format), (f"{where} whole prompt", user)]
    return found


def test_the_packaged_prompts_hold_answer_format_examples_to_check():
    examples = packaged_examples()
    names = {w.split(" ")[0] for w, _ in examples}
    assert {"verdict-pairwise-v1.txt", "verdict-pointwise-v1.txt", "pairwise-reference-v1.txt", "pointwise-reference-v1.txt"} <= names
    assert any('"answer"' in text for _, text in examples)


@pytest.mark.parametrize("where, text", packaged_examples())
def test_no_packaged_answer_format_example_parses_as_a_verdict(where, text):
    for task in ("pairwise", "pointwise"):
        p = parse_verdict(task, text)
        assert p.outcome == "invalid", (where, task, p)
        # echoed after some reasoning, or after a real verdict line: still no vote
        assert parse_verdict(task, f"Both ideas are close.\n{text}").outcome == "invalid", (where, task)
        assert parse_verdict(task, f'{{"answer": "A"}}\n{{"answer": "yes"}}\n{text}').outcome == "invalid", (where, task)


@pytest.mark.parametrize(
    "text",
    [
        *LEGACY_EXAMPLES,
        *(f"Reasoning first.\n{e}" for e in LEGACY_EXAMPLES),
        '{"answer": "A"}\n{"answer": "B"}',
        '{"answer": "B"} or {"answer": "A"}',
        '{"answer": "A", "verdict": "B"}',
        'Answer: A\n{"answer": "B"}',
        "Answer: A or B",
        "Final answer: A (or B)",
        '{"answer": "A or B"}',
        '{"answer": "yes"}\n{"answer": "no"}',
        '```json\n{"answer": "no"}\n```\n{"answer": "yes"}',
    ],
)
def test_answers_holding_both_labels_are_invalid(text):
    for task in ("pairwise", "pointwise"):
        p = parse_verdict(task, text)
        assert (p.outcome, p.choice) == ("invalid", None), (task, p)
        assert p.note


def echo_the_format_example(body, nth):
    """A model that ends its answer with the verdict form its prompt shows (the last line of the prompt)."""
    user = body["messages"][-1]["content"]
    example = [line for line in user.splitlines() if line.strip()][-1]
    return f"Both ideas have merit; the form asks for\n{example}" if nth % 2 else example


def echo_the_legacy_example(body, nth):
    user = body["messages"][-1]["content"]
    return f"Let me answer.\n{LEGACY_EXAMPLES[0] if 'Idea B:' in user else LEGACY_EXAMPLES[1]}"


@pytest.mark.parametrize("answer", [echo_the_format_example, echo_the_legacy_example])
def test_a_model_that_echoes_the_format_example_gets_no_valid_vote_in_a_whole_run(build, mock_llm, answer, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-echo")
    mock_llm.answer = answer
    pairs, points = make_pairs(6), make_points(4)
    for reasoning in ("brief", "none"):
        judge = build("openai", f"echo-{reasoning}", model="mock", base_url=mock_llm.base_url, api_key_env="MOCK_API_KEY",
                      reasoning=reasoning, votes=2, backoff_s=0.001)
        out = judge.judge(pairs, points)
        assert sum(r["n_valid"] for r in out.pairwise + out.pointwise) == 0
        assert all(r["n_invalid"] == 4 for r in out.pairwise) and all(r["n_invalid"] == 2 for r in out.pointwise)
        assert {r["verdict"] for r in out.pairwise} == {"none"} and {r["predicted"] for r in out.pointwise} == {"none"}
    assert mock_llm.count == 2 * (6 * 4 + 4 * 2)  # every call was asked and answered, none replayed
