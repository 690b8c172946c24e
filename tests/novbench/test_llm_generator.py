"""API review generators through the judges' call engine, against the mock OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest

from novelty_audit.config import GeneratorSpec, JudgeParams
from novelty_audit.errors import ConfigError
from novelty_audit.novbench._genbase import few_shot_examples
from novelty_audit.novbench._llmgen import build_llm_generator
from novelty_audit.novbench._papers import load_papers
from novelty_audit.novbench._tables import TABLE_KEYS, normalize_novbench

from mock_llm import MockLLM

SHARED = Path(__file__).resolve().parents[2] / "data" / "novbench" / "Final_data_change.json"
ANSWER = "Positive Novelty Evaluations\n- The framework jointly trains two related tasks for the first time.\n\n" \
         "Neutral Novelty Evaluations\n\nNegative Novelty Evaluations\n- The baseline is not novel enough."


def answer(body: dict, nth: int) -> str:
    text = str(body.get("messages"))
    return "I cannot say." if "JUNKPAPER" in text else ANSWER


@pytest.fixture(scope="module")
def papers(tmp_path_factory: pytest.TempPathFactory) -> list:
    pin = tmp_path_factory.mktemp("pin")
    t = normalize_novbench(SHARED, "nb")
    for name in TABLE_KEYS:
        (pin / "nb").mkdir(exist_ok=True)
        getattr(t, name).write_parquet(pin / "nb" / f"{name}.parquet")
    return load_papers(pin, "nb")[:6]


@pytest.fixture
def mock(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test")
    with MockLLM(answer=answer) as m:
        yield m


def gen(tmp_path: Path, mock: MockLLM, **args):
    spec = GeneratorSpec(backend="openai", args={"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY",
                                                 "local": True, "max_retries": 1, "backoff_s": 0.001, **args})
    return build_llm_generator("gpt-mock", spec, JudgeParams(seed=7, progress=False), store_root=tmp_path, budget=None)


def test_zero_shot_rows_are_parsed_and_a_rerun_is_answered_from_the_call_cache(tmp_path: Path, mock: MockLLM, papers) -> None:
    rows = gen(tmp_path, mock).generate(papers)
    assert mock.count == len(papers)
    assert all(r["valid"] for r in rows) and rows[0]["label_counts"] == "positive=1 neutral=0 negative=1"
    assert rows[0]["provider_model"] and len(rows[0]["call_digests"]) == 1
    again = gen(tmp_path, mock).generate(papers)
    assert mock.count == len(papers)  # no new call
    assert [r["text"] for r in again] == [r["text"] for r in rows]


def test_an_unreadable_answer_is_an_invalid_row_with_its_text_kept(tmp_path: Path, mock: MockLLM, papers) -> None:
    p0 = papers[0]
    papers = [p0.__class__(**{**p0.__dict__, "sentences": ("JUNKPAPER sentence",)})] + papers[1:]
    rows = gen(tmp_path, mock).generate(papers)
    assert (rows[0]["valid"], rows[0]["text"]) == (False, "I cannot say.")
    assert all(r["valid"] for r in rows[1:])


def test_few_shot_examples_are_seeded_other_papers_of_the_dataset(papers) -> None:
    for p in papers:
        ex = few_shot_examples(p, papers, 3, seed=7)
        assert len(ex) == 3 and p.paper_id not in {q.paper_id for q in ex}
        assert ex == few_shot_examples(p, list(reversed(papers)), 3, seed=7)  # order of the pool does not matter
    assert any(few_shot_examples(p, papers, 3, 7) != few_shot_examples(p, papers, 3, 8) for p in papers)


def test_prompt_modes_record_their_evidence_and_config(tmp_path: Path, mock: MockLLM, papers) -> None:
    import json

    zero = gen(tmp_path, mock).generate(papers[:2])
    few = gen(tmp_path, mock, mode="few", k=2).generate(papers[:4])
    rag = gen(tmp_path, mock, mode="rag").generate(papers[:2])
    assert set(json.loads(zero[0]["evidence_parts"])) == {"novelty_sentences"}
    assert set(json.loads(few[0]["evidence_parts"])) == {"novelty_sentences", "few_shot"}
    assert set(json.loads(rag[0]["evidence_parts"])) == {"novelty_sentences", "retrieved"}
    assert len({zero[0]["config_digest"], few[0]["config_digest"], rag[0]["config_digest"]}) == 3
    prompts = [str(r.body["messages"]) for r in mock.requests]
    assert any("Related papers" in t and papers[0].retrieved[0].title in t for t in prompts)
    assert any("Example 2" in t for t in prompts)


def test_failed_calls_are_counted_and_rows_kept(tmp_path: Path, mock: MockLLM, papers) -> None:
    mock.add_rule(papers[1].sentences[0][:30], "500")
    g = gen(tmp_path, mock)
    rows = g.generate(papers[:3])
    assert len(rows) == 3 and not rows[1]["valid"] and rows[1]["text"] == ""
    assert g.failed == {"HTTP 500": 1}


def test_judge_only_args_are_refused_naming_the_field(tmp_path: Path, mock: MockLLM) -> None:
    with pytest.raises(ConfigError, match=r"judge.generators.gpt-mock.args.votes"):
        gen(tmp_path, mock, votes=3)
    with pytest.raises(ConfigError, match=r"judge.generators.gpt-mock.args.mode"):
        gen(tmp_path, mock, mode="two-shot")


PINNED_ZERO_PROMPT_SHA256 = "3bf879bc581573336c74494a357772ff307c5f0885a587e3f604876db30cecc8"
PINNED_SAMPLING = {"temperature": 1.0, "top_p": None, "max_tokens": 512, "seed": None, "reasoning_effort": None, "extra": {}}


def test_a_zero_shot_call_sends_the_pinned_prompt_bytes_under_the_judges_call_key(tmp_path: Path, mock: MockLLM, papers) -> None:
    from novelty_audit.artifacts import canonical_bytes, digest_bytes
    from novelty_audit.judges import CallCache, call_key

    rows = gen(tmp_path, mock).generate(papers[:1])
    (req,) = mock.requests
    messages = req.body["messages"]
    # The template's bytes and the rendering decide the prompt; a loader change must not move them.
    assert digest_bytes(canonical_bytes(messages)) == PINNED_ZERO_PROMPT_SHA256
    key = call_key(backend="openai", model="mock", endpoint=mock.base_url, sampling=PINNED_SAMPLING,
                   prompt_bytes=canonical_bytes(messages), vote_index=0)
    assert rows[0]["call_digests"] == [key]
    assert CallCache(tmp_path / "cache" / "calls").get(key) is not None
