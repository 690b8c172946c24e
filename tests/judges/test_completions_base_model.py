"""Completions mode as a real base model answers it.

A completions prompt ends with "Answer:". A small base model (Gemma 3 270M behind llama.cpp) continues it
with a newline first and the label on the next line ('\\nA', '\\nA.'), and a blank line after it, or with the
label and a sentence on one line. The mock server returns such continuations and cuts them at the request's `stop`
as a real server does. The README's recipe (`api: completions` and a grammar for one non-empty line, no stop) is
tested as sent; a real server's grammar is not imitated here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml
from judge_items import make_pairs, make_points

from novelty_audit.judges import Sampling

REPO = Path(__file__).resolve().parents[2]
RECIPE_STOP = ["\n\n"]


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-SECRET123")


def base_model(build, mock, *, tasks, stop=None):
    sampling = {"max_tokens": 8, "temperature": 1.0}
    if stop is not None:
        sampling["extra"] = {"stop": stop}
    return build("openai", model="gemma-3-270m", base_url=mock.base_url, api_key_env="MOCK_API_KEY", api="completions",
                 reasoning="none", votes=1, sampling=sampling, backoff_s=0.001, max_retries=1, tasks=tasks)  # fmt: skip


@pytest.mark.parametrize("continuation", ["\nA", " B", "\n\nA.", "\nA. Idea A is more novel because it"])
def test_a_label_after_a_newline_or_a_space_is_a_vote(build, mock_llm, continuation):
    mock_llm.answer = lambda body, nth: continuation
    rows = base_model(build, mock_llm, tasks=("pairwise",)).judge(make_pairs(2), []).pairwise
    assert [(r["n_valid"], r["n_invalid"]) for r in rows] == [(2, 0), (2, 0)], rows
    slot = 0 if "A" in continuation else 1
    for r in rows:
        # Forward shows idea_0 as A; reverse shows idea_1 as A: the same label names the other idea.
        assert r["votes_forward"] == [r[f"idea_{slot}"]] and r["votes_reverse"] == [r[f"idea_{1 - slot}"]]


@pytest.mark.parametrize("continuation", ["\n<A or B>", "\nA or B", "\nA. Idea B is less novel because it"])
def test_an_echoed_placeholder_or_a_label_with_another_label_is_no_vote(build, mock_llm, continuation):
    mock_llm.answer = lambda body, nth: continuation
    rows = base_model(build, mock_llm, tasks=("pairwise",)).judge(make_pairs(2), []).pairwise
    assert all(r["n_valid"] == 0 and r["n_invalid"] == 2 and r["verdict"] == "none" for r in rows), rows


@pytest.mark.parametrize(
    "continuation, predicted",
    [("\nyes", "POSITIVE"), (" no", "NEGATIVE"), ("\n\nNo.", "NEGATIVE"), ("\n<yes or no>", "none")],
)
def test_pointwise_continuations_read_the_same_way(build, mock_llm, continuation, predicted):
    mock_llm.answer = lambda body, nth: continuation
    rows = base_model(build, mock_llm, tasks=("pointwise",)).judge([], make_points(2)).pointwise
    assert {r["predicted"] for r in rows} == {predicted}, rows
    assert all(r["n_valid"] == (predicted != "none") for r in rows)


def whole_continuation(body, nth):
    """What the base model would go on writing without a stop: the label line, a blank line, more text."""
    label = "yes" if "<yes or no>" in body["prompt"] else "B"
    return f"\n{label}.\n\nIdea A: a further idea the model makes up\n"


def test_a_stop_at_a_blank_line_gets_votes_from_a_base_model_and_a_single_newline_stop_does_not(build, mock_llm):
    mock_llm.answer = whole_continuation
    out = base_model(build, mock_llm, tasks=("pairwise", "pointwise"), stop=RECIPE_STOP).judge(make_pairs(2), make_points(2))
    assert all(r["n_valid"] == 2 for r in out.pairwise) and all(r["n_valid"] == 1 for r in out.pointwise)
    assert {r["predicted"] for r in out.pointwise} == {"POSITIVE"}
    assert all(r.body["stop"] == RECIPE_STOP for r in mock_llm.requests)
    # With stop "\n" the server stops at the newline the model writes first: nothing is left to read.
    mock_llm.reset()
    out = base_model(build, mock_llm, tasks=("pairwise",), stop=["\n"]).judge(make_pairs(2), [])
    assert all(r["n_valid"] == 0 and r["n_invalid"] == 2 for r in out.pairwise)


def readme_recipe() -> dict:
    """The README's local-model judge (`gemma3-270m-server`), parsed from its YAML block."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(    gemma3-270m-server:.*?)```", readme, re.DOTALL)
    assert block, "README: the local-model judge's YAML"
    return yaml.safe_load(block.group(1))["gemma3-270m-server"]


def test_the_readme_recipe_sends_a_grammar_for_one_non_empty_line_and_no_stop(build, mock_llm):
    """A stop at "\\n\\n" ends an answer that begins with a blank line before it says anything (26% of Gemma 3 270M's
    answers behind llama.cpp); the recipe's grammar lets the server write one line whose first character is no
    blank, and each answer that is one label counts."""
    spec = readme_recipe()
    args = {**spec["args"], "base_url": mock_llm.base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.001, "max_retries": 1}
    assert spec["backend"] == "openai" and args["api"] == "completions" and "stop" not in args["sampling"]["extra"]
    grammar = args["sampling"]["extra"]["grammar"]
    assert grammar == 'root ::= " "? [^ \\n] [^\\n]*'  # GBNF: the escape \\n is the newline
    answers = iter([' "A"', ' "B".', '"B". This answer is the most novel because it', " A"] * 10)
    mock_llm.answer = lambda body, nth: next(answers)
    judge = build("openai", model=args["model"], base_url=args["base_url"], api_key_env="MOCK_API_KEY", api="completions",
                  reasoning="none", votes=2, sampling=args["sampling"], local=True, backoff_s=0.001, max_retries=1,
                  tasks=("pairwise",))  # fmt: skip
    rows = judge.judge(make_pairs(2), []).pairwise
    assert all(r["n_valid"] == 4 and r["n_invalid"] == 0 for r in rows), rows
    assert all(r.body["grammar"] == grammar and "stop" not in r.body for r in mock_llm.requests)


def test_the_readme_and_the_sampling_docstring_recommend_the_same_grammar():
    doc = re.search(r"\{grammar: '([^']*)'\} for a base model", inspect.getsource(Sampling))
    assert doc, "Sampling.extra: the grammar for a base model"
    # The docstring is Python source ("\\\\n"); the README's YAML holds "\\n": compare what each means.
    assert doc.group(1).replace("\\\\", "\\") == readme_recipe()["args"]["sampling"]["extra"]["grammar"]
