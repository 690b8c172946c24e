"""API LLM judges against the mock OpenAI-compatible server: outcomes, retries, cache, budget, secrets."""

from __future__ import annotations

import time

import orjson
import pytest
from judge_items import make_pairs, make_points

from novelty_audit.errors import BudgetExceededError, ConfigError
from novelty_audit.judges import NONE, TIE

KEY = "sk-test-SECRET123"


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)


def marked_answer(body, nth):
    """A judge that reads: picks the shown idea whose text contains NOVEL; pointwise yes iff NOVEL."""
    user = body["messages"][-1]["content"]
    if "Idea A:" in user:
        a = user.split("Idea A:", 1)[1].split("Idea B:", 1)[0]
        return 'Reasoning.\n{"answer": "%s"}' % ("A" if "NOVEL" in a else "B")
    return '{"answer": "%s"}' % ("yes" if "NOVEL" in user else "no")


def api(build, mock, **kw):
    args = {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.001, "max_retries": 2}
    args.update(kw)
    return build("openai", **args)


def test_every_call_ends_as_exactly_one_counted_outcome(build, mock_llm):
    texts = {0: "MALFORMED idea", 2: "REFUSEFIELD idea", 4: "REFUSETEXT idea", 6: "FAIL500 idea", 8: "RATE429 idea", 10: "HANG idea"}
    pairs = make_pairs(7, texts=texts)
    mock_llm.add_rule("MALFORMED", "malformed")
    mock_llm.add_rule("REFUSEFIELD", "refusal")
    mock_llm.add_rule("REFUSETEXT", "refusal_text")
    mock_llm.add_rule("FAIL500", "500")
    mock_llm.add_rule("RATE429", "429", times=1, retry_after=0.01)
    mock_llm.add_rule("HANG", "timeout", times=1, hang_s=4.0)
    # A timeout far above a normal answer's time: at 0.5 s an ordinary call on a loaded machine sometimes timed
    # out too, and the counts below moved.
    rows = api(build, mock_llm, max_retries=1, timeout_s=2.0, tasks=("pairwise",)).judge(pairs, []).pairwise
    counts = [(r["n_valid"], r["n_invalid"], r["n_refusal"], r["n_error"]) for r in rows]
    assert counts == [(0, 6, 0, 0), (0, 0, 6, 0), (0, 0, 6, 0), (0, 0, 0, 6), (6, 0, 0, 0), (6, 0, 0, 0), (6, 0, 0, 0)]
    assert [r["verdict"] for r in rows[:4]] == [NONE] * 4
    assert rows[3]["votes_forward"] == ["error"] * 3 and rows[0]["votes_reverse"] == ["invalid"] * 3
    assert rows[3]["error_reasons"] == ["HTTP 500"] * 6 and all(r["error_reasons"] == [] for r in rows[4:])
    # 6 calls per pair; the 500 pair is asked twice per call; 429 and timeout hit the first request of
    # each order's body once (the three votes of an order send identical bodies).
    assert mock_llm.count == 7 * 6 + 6 + 2 + 2


def test_votes_are_mapped_to_ideas_so_a_reading_judge_is_order_consistent(build, mock_llm):
    mock_llm.answer = marked_answer
    pairs = make_pairs(4, texts={1: "NOVEL one", 2: "NOVEL two", 5: "NOVEL three", 6: "NOVEL four"})
    rows = api(build, mock_llm, tasks=("pairwise",)).judge(pairs, []).pairwise
    winners = [p.idea_1.idea_id if "NOVEL" in p.idea_1.text else p.idea_0.idea_id for p in pairs]
    assert [r["verdict"] for r in rows] == winners
    assert all(r["verdict_forward"] == r["verdict_reverse"] == r["verdict"] for r in rows)


def test_a_rerun_makes_zero_calls_and_reproduces_rows_byte_for_byte(build, mock_llm):
    pairs, points = make_pairs(5), make_points(3)
    first = api(build, mock_llm).judge(pairs, points)
    n = mock_llm.count
    assert n == 5 * 6 + 3 * 3
    second = api(build, mock_llm).judge(pairs, points)
    assert mock_llm.count == n
    assert second.facts["cache_hits"] == n and second.facts["calls"] == 0
    dump = lambda out: orjson.dumps([out.pairwise, out.pointwise], option=orjson.OPT_SORT_KEYS)
    assert dump(first) == dump(second)
    assert all(len(r["call_digests"]) == 6 and r["provider_model"] == "mock-mock" for r in first.pairwise)


def test_transport_settings_are_not_in_the_call_key_but_sampling_is(build, mock_llm):
    pairs = make_pairs(2)
    api(build, mock_llm, concurrency=1, tasks=("pairwise",)).judge(pairs, [])
    n = mock_llm.count
    api(build, mock_llm, concurrency=7, timeout_s=9, max_retries=0, tasks=("pairwise",)).judge(pairs, [])
    assert mock_llm.count == n
    api(build, mock_llm, sampling={"temperature": 0.2}, tasks=("pairwise",)).judge(pairs, [])
    assert mock_llm.count == 2 * n


def test_the_same_prompt_in_two_datasets_is_asked_once(build, mock_llm):
    pairs = make_pairs(3, dataset="a") + make_pairs(3, dataset="b")
    rows = api(build, mock_llm, tasks=("pairwise",)).judge(pairs, []).pairwise
    assert mock_llm.count == 3 * 6
    assert len(rows) == 6 and [r["dataset"] for r in rows] == ["a"] * 3 + ["b"] * 3


@pytest.mark.slow
def test_concurrency_is_bounded_per_judge(build, mock_llm):
    mock_llm.latency = 0.5  # long enough for the next calls to be sent while one is answered, even on a busy machine
    api(build, mock_llm, concurrency=4, tasks=("pairwise",)).judge(make_pairs(6), [])
    assert 2 <= mock_llm.max_inflight <= 4


def test_retry_after_is_honoured(build, mock_llm):
    mock_llm.add_rule("Idea", "429", times=1, retry_after=0.4)
    started = time.perf_counter()
    (row,) = api(build, mock_llm, votes=1, orders="forward", tasks=("pairwise",)).judge(make_pairs(1), []).pairwise
    assert time.perf_counter() - started >= 0.4
    assert row["n_valid"] == 1 and mock_llm.count == 2


def test_errors_are_not_cached_so_the_next_run_asks_again(build, mock_llm):
    mock_llm.add_rule("Idea", "500")
    api(build, mock_llm, votes=1, orders="forward", max_retries=0, tasks=("pairwise",)).judge(make_pairs(1), [])
    mock_llm.reset()
    (row,) = api(build, mock_llm, votes=1, orders="forward", tasks=("pairwise",)).judge(make_pairs(1), []).pairwise
    assert mock_llm.count == 1 and row["n_valid"] == 1


def test_refresh_asks_again_and_keeps_the_replaced_answers(build, mock_llm, tmp_path):
    pairs = make_pairs(2)
    api(build, mock_llm, tasks=("pairwise",)).judge(pairs, [])
    n = mock_llm.count
    api(build, mock_llm, refresh=True, tasks=("pairwise",)).judge(pairs, [])
    assert mock_llm.count == 2 * n
    assert len(list((tmp_path / "store" / "cache" / "calls" / "history").glob("*.json"))) == n


def test_the_key_is_sent_but_never_written(build, mock_llm, tmp_path, capsys, caplog):
    mock_llm.add_rule("Idea number 0 ", "500")
    mock_llm.add_rule("Idea number 2 ", "malformed")
    api(build, mock_llm, max_retries=0).judge(make_pairs(3), make_points(2))
    assert mock_llm.requests[0].headers["authorization"] == f"Bearer {KEY}"
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files, "the cache should hold answers"
    for p in files:
        assert KEY.encode() not in p.read_bytes(), p
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err + caplog.text


def test_a_missing_key_fails_before_any_request(build, mock_llm, monkeypatch):
    monkeypatch.delenv("MOCK_API_KEY")
    judge = api(build, mock_llm)
    with pytest.raises(ConfigError, match="MOCK_API_KEY"):
        judge.judge(make_pairs(1), [])
    assert mock_llm.count == 0


def test_the_budget_cap_stops_before_it_is_exceeded_and_a_rerun_repeats_no_paid_call(build, mock_llm):
    prices = {"mock": {"input_per_mtok": 10.0, "output_per_mtok": 10.0}}
    pairs = make_pairs(10)
    judge = api(build, mock_llm, budget_usd=0.05, prices=prices, concurrency=2, sampling={"max_tokens": 16}, tasks=("pairwise",))
    with pytest.raises(BudgetExceededError, match="budget cap"):
        judge.judge(pairs, [])
    assert 0 < judge.budget.spent <= 0.05
    paid = mock_llm.count
    assert 0 < paid < 60
    rest = api(build, mock_llm, budget_usd=10.0, prices=prices, concurrency=2, sampling={"max_tokens": 16}, tasks=("pairwise",))
    rows = rest.judge(pairs, []).pairwise
    assert mock_llm.count == 60  # every call answered exactly once across both runs
    assert sum(r["cost_usd"] for r in rows) > 0.05


def test_the_anthropic_backend(build, mock_llm):
    mock_llm.answer = marked_answer
    mock_llm.add_rule("Idea number 2 ", "refusal")
    pairs = make_pairs(2, texts={1: "NOVEL"})
    rows = build(
        "anthropic", model="claude-mock", base_url=mock_llm.root_url, api_key_env="MOCK_API_KEY", tasks=("pairwise",)
    ).judge(pairs, []).pairwise
    assert rows[0]["verdict"] == pairs[0].idea_1.idea_id and rows[0]["n_valid"] == 6
    assert rows[1]["verdict"] == NONE and rows[1]["n_refusal"] == 6
    assert mock_llm.requests[0].path == "/v1/messages"
    headers = mock_llm.requests[0].headers
    assert KEY in headers.get("x-api-key", "") + headers.get("authorization", "")  # SDK versions differ
    assert "system" in mock_llm.requests[0].body


def test_retrieval_shows_related_abstracts_and_enters_the_evidence(build, mock_llm, tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(orjson.dumps([
        {"key": "k1", "title": "Graph transformers for molecules", "abstract": "<p>We propose graph attention for molecules.</p>", "year": 2021},
        {"key": "k2", "title": "Speech recognition at scale", "abstract": "<p>Large speech corpora.</p>", "year": 2019},
    ]).decode())  # fmt: skip
    pairs = make_pairs(1, texts={0: "Graph attention for molecules property prediction", 1: "Speech corpora at scale"})
    judge = api(build, mock_llm, retrieval={"corpus": str(corpus), "k": 1}, tasks=("pairwise",))
    (row,) = judge.judge(pairs, []).pairwise
    # Both presentation orders are asked, concurrently: take the calls that show the molecule idea first.
    users = [r.body["messages"][-1]["content"] for r in mock_llm.requests]
    first = [u for u in users if "Idea A:\nGraph attention for molecules" in u]
    related = "\n- Graph transformers for molecules (2021): We propose graph attention"
    quoted = "Related prior work for Idea A:\nQuoted material follows: related papers"  # quoted as data (judges/_guard.py)
    assert first and all(related in u and quoted in u for u in first)
    assert all("<p>" not in u for u in users)
    parts = {"idea_0_text", "idea_1_text", "retrieval", "corpus", "idea_0_retrieved_0", "idea_1_retrieved_0"}  # one part per abstract shown
    assert set(orjson.loads(row["evidence_parts"])) == parts
    docs = orjson.loads(row["evidence_docs"])
    assert [(d["slot"], d["rank"], d["doc_id"], d["source"]) for d in docs] == [("idea_0", 0, "k1", "corpus"), ("idea_1", 0, "k2", "corpus")]
    assert judge.input_files() == [corpus]
    assert row["verdict"] == TIE  # the mock always answers A


def test_the_request_rate_limit_spaces_calls(build, mock_llm):
    started = time.perf_counter()
    api(build, mock_llm, requests_per_minute=1200, concurrency=8, tasks=("pairwise",)).judge(make_pairs(2), [])
    # 12 calls at one per 50 ms: the last may start no earlier than 11 × 50 ms after the first
    assert time.perf_counter() - started >= 0.55
    assert mock_llm.count == 12
