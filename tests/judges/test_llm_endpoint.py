"""API judges against different kinds of endpoint: completions mode for base models, answers cut at
max_tokens, and local or unpriced models under the shipped budget."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from judge_items import make_pairs, make_points
from mock_llm import _prompt_text

from novelty_audit.errors import ConfigError
from novelty_audit.judges import CallCache, JudgeParams, build_judges
from novelty_audit.params import load_params

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-SECRET123")


def api(build, mock, **kw):
    args = {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.001, "max_retries": 1}
    args.update(kw)
    return build("openai", **args)


def cache_entries(tmp_path: Path) -> list[dict]:
    root = tmp_path / "store" / "cache" / "calls"
    cache = CallCache(root)
    return [cache.get(p.stem) for p in sorted(root.glob("??/*.json"))]


def test_completions_mode_sends_one_plain_prompt_that_ends_where_the_answer_begins(build, mock_llm):
    judge = api(build, mock_llm, api="completions", tasks=("pairwise",))
    rows = judge.judge(make_pairs(2), []).pairwise
    assert {r.path for r in mock_llm.requests} == {"/v1/completions"}
    prompts = [r.body.get("prompt") for r in mock_llm.requests]
    assert all(isinstance(p, str) and "messages" not in r.body for p, r in zip(prompts, mock_llm.requests))
    system = judge.templates["pairwise"].system
    assert all(p.startswith(system.strip()) and p.endswith("\n\nAnswer:") for p in prompts)
    assert any("Idea A:\nIdea number 0 " in p for p in prompts)
    assert all(r["n_valid"] == 6 for r in rows)
    assert judge.config()["api"] == "completions"


def test_chat_and_completions_calls_never_share_cached_answers(build, mock_llm):
    pairs = make_pairs(2)
    chat = api(build, mock_llm, tasks=("pairwise",))
    chat.judge(pairs, [])
    n = mock_llm.count
    completions = api(build, mock_llm, api="completions", tasks=("pairwise",))
    rows = completions.judge(pairs, []).pairwise
    assert mock_llm.count == 2 * n and completions.facts()["cache_hits"] == 0
    assert chat.config_digest != completions.config_digest
    assert not set(rows[0]["call_digests"]) & set(chat.judge(pairs, []).pairwise[0]["call_digests"])


def test_the_anthropic_backend_has_no_completions_mode(build, mock_llm):
    with pytest.raises(ConfigError, match=r"args\.api: the anthropic backend has no 'completions' API"):
        build("anthropic", model="m", base_url=mock_llm.root_url, api_key_env="MOCK_API_KEY", api="completions")


@pytest.mark.parametrize("api_mode", ["chat", "completions"])
def test_an_answer_cut_at_max_tokens_without_a_verdict_is_truncated_not_invalid(build, mock_llm, tmp_path, api_mode):
    mock_llm.add_rule("Idea number 0 ", "length")
    mock_llm.add_rule("Idea number 2 ", "malformed")
    rows = api(build, mock_llm, api=api_mode, votes=1, tasks=("pairwise",)).judge(make_pairs(3), []).pairwise
    assert [(r["n_truncated"], r["n_invalid"], r["n_valid"]) for r in rows] == [(2, 0, 0), (0, 2, 0), (0, 0, 2)]
    assert rows[0]["votes_forward"] == ["truncated"] and rows[0]["verdict"] == "none"
    entries = cache_entries(tmp_path)
    assert sorted(e["finish_reason"] for e in entries) == ["length", "length", "stop", "stop", "stop", "stop"]
    cut = [e for e in entries if e["outcome"] == "truncated"]
    assert len(cut) == 2 and all("cut at max_tokens=512 (finish_reason=length)" in e["note"] for e in cut)


def test_an_anthropic_answer_stopped_at_max_tokens_is_truncated(build, mock_llm):
    mock_llm.add_rule("Idea number 0 ", "length")
    rows = build(
        "anthropic", model="claude-mock", base_url=mock_llm.root_url, api_key_env="MOCK_API_KEY", votes=1, tasks=("pairwise",)
    ).judge(make_pairs(2), []).pairwise
    assert [r["n_truncated"] for r in rows] == [2, 0]


def test_an_unpriced_model_under_a_budget_fails_naming_both_fixes(build, mock_llm):
    with pytest.raises(ConfigError) as err:
        api(build, mock_llm, budget_usd=5.0)
    text = str(err.value)
    assert "model 'mock' has no price" in text
    assert "judge.prices" in text and "local: true" in text and "price: {input_per_mtok: 0, output_per_mtok: 0}" in text


def test_a_local_model_runs_under_the_budget_and_costs_nothing(build, mock_llm):
    judge = api(build, mock_llm, budget_usd=0.000001, local=True, tasks=("pairwise",))
    rows = judge.judge(make_pairs(3), []).pairwise
    assert all(r["n_valid"] == 6 and r["cost_usd"] == 0.0 for r in rows)
    assert judge.facts()["cost_usd"] == 0.0


def test_a_judge_price_overrides_the_shared_price_list(build, mock_llm):
    prices = {"mock": {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}}
    free = api(build, mock_llm, budget_usd=0.001, prices=prices, price={"input_per_mtok": 0, "output_per_mtok": 0}, tasks=("pairwise",))
    assert all(r["cost_usd"] == 0.0 for r in free.judge(make_pairs(2), []).pairwise)
    own = api(build, mock_llm, prices=prices, price={"input_per_mtok": 1.0, "output_per_mtok": 0.0}, tasks=("pairwise",), refresh=True)
    (row,) = own.judge(make_pairs(1), []).pairwise
    tokens = sum(max(1, len(_prompt_text(r.body)) // 4) for r in mock_llm.requests[-6:])  # the mock's token count
    assert row["cost_usd"] == pytest.approx(tokens * 1.0 / 1e6)


def test_local_with_a_nonzero_price_is_refused_when_params_load(build, mock_llm):
    with pytest.raises(ConfigError, match="local: true means the calls cost nothing"):
        api(build, mock_llm, local=True, price={"input_per_mtok": 1.0, "output_per_mtok": 1.0})


def test_the_shipped_local_example_builds_under_the_shipped_budget(tmp_path):
    params = load_params(REPO / "params.yaml")
    jp = params.judge
    assert jp.budget_usd is not None
    spec = jp.judges["ollama-llama3-reference"]
    assert spec.backend == "openai" and spec.args.get("local") is True
    assert spec.args["model"] not in jp.prices
    (judge,) = build_judges(jp, store_root=tmp_path / "store", names=["ollama-llama3-reference"]).judges
    assert judge.price is not None and judge.price.input_per_mtok == 0 == judge.price.output_per_mtok


def test_progress_can_be_switched_off(mock_llm, tmp_path: Path, capsys):
    jp = JudgeParams.model_validate(
        {"tasks": ["pointwise"], "progress": False,
         "judges": {"j": {"backend": "openai", "args": {"model": "mock", "base_url": mock_llm.base_url, "api_key_env": "MOCK_API_KEY"}}}}
    )  # fmt: skip
    (judge,) = build_judges(jp, store_root=tmp_path / "store").judges
    assert len(judge.judge([], make_points(3)).pointwise) == 3
    assert "calls," not in capsys.readouterr().err
    assert orjson.loads(orjson.dumps(judge.facts()))["calls"] == 9


@pytest.mark.parametrize("backend, env, default", [
    ("openai", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
    ("anthropic", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
])
def test_no_environment_variable_redirects_a_judge_without_base_url(build, monkeypatch, backend, env, default):
    # The call key says `<backend>:default` when base_url is None; the client must then really talk to the default.
    monkeypatch.setenv(env, "http://127.0.0.1:9/elsewhere")
    judge = build(backend, model="mock", api_key_env="MOCK_API_KEY")
    client = judge._client()
    assert str(client.base_url).rstrip("/") == default


def test_in_completions_mode_the_continuation_completes_the_answer_line(build, mock_llm):
    # The prompt ends with "Answer:"; a base model that continues with " B" has answered "Answer: B".
    mock_llm.answer = lambda body, nth: " B"
    rows = api(build, mock_llm, api="completions", votes=1, tasks=("pairwise",)).judge(make_pairs(2), []).pairwise
    assert [r["n_valid"] for r in rows] == [2, 2]
    assert rows[0]["votes_forward"] == [rows[0]["idea_1"]] and rows[0]["votes_reverse"] == [rows[0]["idea_0"]]


def test_a_continuation_that_rambles_past_its_label_is_not_a_vote(build, mock_llm):
    mock_llm.answer = lambda body, nth: ' A\n\nAnswer with your verdict as a JSON object: {"answer": "<A or B>"}'
    rows = api(build, mock_llm, api="completions", votes=1, tasks=("pairwise",)).judge(make_pairs(2), []).pairwise
    assert all(r["n_valid"] == 0 and r["n_invalid"] == 2 for r in rows)


def test_cached_answers_are_read_with_the_current_parser(build, mock_llm, tmp_path):
    # The cache keeps what the provider said; the verdict read out of it is harness code. An entry whose stored
    # outcome an older parser decided (an echoed example counted as a vote) is judged again on reading.
    echo = '{"answer": "A"}  (or {"answer": "B"})'
    mock_llm.answer = lambda body, nth: echo
    judge = api(build, mock_llm, votes=1, tasks=("pairwise",))
    judge.judge(make_pairs(1), [])
    cache = CallCache(tmp_path / "store" / "cache" / "calls")
    for p in sorted((tmp_path / "store" / "cache" / "calls").glob("??/*.json")):
        entry = cache.get(p.stem)
        assert entry["response"] == echo and entry["outcome"] == "invalid"
        cache.put(p.stem, {**entry, "outcome": "valid", "choice": 1, "note": None})  # what the 0.1 parser stored
    n = mock_llm.count
    rows = api(build, mock_llm, votes=1, tasks=("pairwise",)).judge(make_pairs(1), []).pairwise
    assert mock_llm.count == n, "answered from the cache"
    assert rows[0]["n_valid"] == 0 and rows[0]["n_invalid"] == 2
