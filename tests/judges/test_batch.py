"""Provider batch APIs (`batch: true`): a batch run gives the interactive run's verdicts at the batch price; the
batch id is in the store before polling, so a run killed after submission resumes the same batch and never
pays twice; requests the provider failed are recorded per call and retried as configured."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest
from judge_items import make_pairs, make_points
from mock_batch import MockBatch
from mock_llm import MockLLM

from novelty_audit.errors import BudgetExceededError
from novelty_audit.judges import JudgeParams, build_judges

PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0}
TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-batch")


@pytest.fixture
def mock_batch():
    with MockBatch() as mock:
        yield mock


def params(backend: str, base_url: str, *, budget_usd=None, **over) -> JudgeParams:
    args = {"model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.001, "max_retries": 1,
            "votes": 2, "price": PRICE, "batch_poll_s": 0.01}  # fmt: skip
    args.update(over)
    return JudgeParams.model_validate(
        {"tasks": ["pairwise", "pointwise"], "progress": False, "budget_usd": budget_usd, "judges": {"j": {"backend": backend, "args": args}}}
    )


def judge_of(jp: JudgeParams, store: Path):
    return build_judges(jp, store_root=store).judges[0]


def urls(backend: str, mock) -> str:
    return mock.root_url if backend == "anthropic" else mock.base_url


def rows(out) -> list[tuple]:
    """The verdicts (call digests differ between two servers: the endpoint is part of the call key)."""
    return [(r["pair_id"], r["verdict"], tuple(r["votes_forward"]), tuple(r["votes_reverse"])) for r in out.pairwise] + [
        (r["idea_id"], r["predicted"], r["score"]) for r in out.pointwise
    ]


def cost(out) -> float:
    return sum(r["cost_usd"] for r in out.pairwise)


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_batch_run_equals_the_interactive_run_at_the_batch_price(backend, mock_batch, tmp_path):
    pairs, points = make_pairs(3), make_points(2)
    with MockLLM() as live:
        live_judge = judge_of(params(backend, urls(backend, live)), tmp_path / "live")
        interactive = live_judge.judge(pairs, points)
        n_calls = live.count
    # the same endpoint identity for both runs would share the cache; separate stores keep them independent
    judge = judge_of(params(backend, urls(backend, mock_batch), batch=True, budget_usd=10.0), tmp_path / "batch")
    batched = judge.judge(pairs, points)
    assert judge.budget.spent == pytest.approx(judge.facts()["cost_usd"]) and judge.budget.reserved == 0

    assert mock_batch.counters["batches_created"] == 1
    assert mock_batch.counters["requests_answered"] == n_calls == 3 * 2 * 2 + 2 * 2
    assert rows(batched) == rows(interactive)
    assert judge.facts()["cost_usd"] == pytest.approx(0.5 * live_judge.facts()["cost_usd"]) and judge.facts()["cost_usd"] > 0
    assert cost(batched) == pytest.approx(0.5 * cost(interactive))  # the rows carry the batch price too
    assert judge.facts()["batches_submitted"] == 1 and judge.facts()["calls"] == n_calls

    again = judge_of(params(backend, urls(backend, mock_batch), batch=True), tmp_path / "batch").judge(pairs, points)
    assert mock_batch.counters["batches_created"] == 1, "a cached call went into a second batch"
    assert rows(again) == rows(batched)
    assert [r["call_digests"] for r in again.pairwise] == [r["call_digests"] for r in batched.pairwise]


def test_batch_answers_are_the_interactive_cache_entries(mock_batch, tmp_path):
    """Same keys: a later interactive run over the batch run's store asks nothing."""
    pairs = make_pairs(2)
    store = tmp_path / "store"
    first = judge_of(params("openai", mock_batch.base_url, batch=True), store).judge(pairs, [])
    with MockLLM() as live:
        # the batch answers are keyed by the batch server's endpoint: point the interactive judge there too
        second = judge_of(params("openai", mock_batch.base_url), store).judge(pairs, [])
        assert live.count == 0
    assert rows(second) == rows(first)


def test_the_batch_id_is_recorded_before_polling_and_a_restart_resumes_it(mock_batch, tmp_path):
    """A run killed while its batch is in progress: the restarted run submits nothing and polls the same batch."""
    store = tmp_path / "store"
    mock_batch.hold = True
    script = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = [{str(TESTS)!r}, {str(TESTS / 'judges')!r}]
        from judge_items import make_pairs, make_points
        from novelty_audit.judges import JudgeParams, build_judges
        import orjson
        jp = JudgeParams.model_validate(orjson.loads({orjson.dumps(params('openai', mock_batch.base_url, batch=True).model_dump(mode='json')).decode()!r}))
        build_judges(jp, store_root={str(store)!r}).judges[0].judge(make_pairs(2), make_points(1))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ}, stderr=subprocess.PIPE)
    records = store / "cache" / "batches" / "open"
    try:
        deadline = time.monotonic() + 120
        while not list(records.glob("*.json")):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the batch was never recorded"
            time.sleep(0.02)
        while mock_batch.counters["polls"] == 0:  # it is polling now: the id was on disk before
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    (rec_path,) = list(records.glob("*.json"))
    rec = orjson.loads(rec_path.read_bytes())
    assert rec["batch_id"] == "batch_1" and len(rec["keys"]) == 2 * 2 * 2 + 1 * 2
    assert b"sk-test-batch" not in rec_path.read_bytes()  # the journal holds no key
    assert mock_batch.counters["batches_created"] == 1

    mock_batch.hold = False
    judge = judge_of(params("openai", mock_batch.base_url, batch=True), store)
    out = judge.judge(make_pairs(2), make_points(1))
    assert mock_batch.counters["batches_created"] == 1 and mock_batch.counters["files_uploaded"] == 1
    assert judge.facts()["batches_resumed"] == 1 and judge.facts()["batches_submitted"] == 0
    assert all(r["verdict"] != "none" for r in out.pairwise)
    assert not list(records.glob("*.json")) and list((store / "cache" / "batches" / "done").glob("*.json"))


def test_a_batch_still_running_at_max_wait_ends_as_pending_and_is_resumed_next_run(mock_batch, tmp_path):
    store = tmp_path / "store"
    mock_batch.hold = True
    out = judge_of(params("openai", mock_batch.base_url, batch=True, batch_max_wait_s=0.05), store).judge(make_pairs(1), [])
    assert out.pairwise[0]["n_error"] == 4 and "batch pending" in out.pairwise[0]["error_reasons"]
    mock_batch.hold = False
    out = judge_of(params("openai", mock_batch.base_url, batch=True), store).judge(make_pairs(1), [])
    assert out.pairwise[0]["n_error"] == 0
    assert mock_batch.counters["batches_created"] == 1


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_failed_requests_are_recorded_and_asked_interactively(backend, mock_batch, tmp_path):
    pairs = make_pairs(2, texts={0: "An idea XFAIL that the batch fails."})
    mock_batch.fail_match = "XFAIL"
    judge = judge_of(params(backend, urls(backend, mock_batch), batch=True, votes=1), tmp_path / "s")
    out = judge.judge(pairs, [])
    facts = judge.facts()
    assert facts["batch_failed"] == 2  # pair 0, both orders: failed in the batch, then asked one by one
    assert mock_batch.counters["interactive_requests"] == 2
    assert [r["n_error"] for r in out.pairwise] == [0, 0]
    assert mock_batch.counters["batches_created"] == 1
    # the interactive retries are paid at the full price, the batch answers at half
    assert out.pairwise[0]["cost_usd"] == pytest.approx(2 * out.pairwise[1]["cost_usd"], rel=0.2)


def test_failed_requests_go_to_the_next_batch_when_configured(mock_batch, tmp_path):
    store = tmp_path / "s"
    pairs = make_pairs(2, texts={0: "An idea XFAIL that the batch fails."})
    mock_batch.fail_match = "XFAIL"
    jp = params("openai", mock_batch.base_url, batch=True, votes=1, batch_failures="next-batch")
    out = judge_of(jp, store).judge(pairs, [])
    assert out.pairwise[0]["n_error"] == 2 and "batch: HTTP 500" in out.pairwise[0]["error_reasons"]
    assert mock_batch.counters["requests_answered"] == 4
    mock_batch.fail_match = None
    out = judge_of(jp, store).judge(pairs, [])
    assert out.pairwise[0]["n_error"] == 0
    assert mock_batch.counters["batches_created"] == 2 and mock_batch.counters["requests_answered"] == 6  # only the 2 failed


def test_the_budget_reserves_the_batch_worst_case_before_submitting(mock_batch, tmp_path):
    with pytest.raises(BudgetExceededError, match="a batch of 8 calls"):
        jp = params("openai", mock_batch.base_url, batch=True, budget_usd=1e-6)
        build_judges(jp, store_root=tmp_path / "s").judges[0].judge(make_pairs(2), [])
    assert mock_batch.counters["batches_created"] == 0 and mock_batch.counters["files_uploaded"] == 0


def test_more_calls_than_batch_max_requests_go_out_as_several_batches(mock_batch, tmp_path):
    judge = judge_of(params("openai", mock_batch.base_url, batch=True, votes=1, batch_max_requests=3), tmp_path / "s")
    out = judge.judge(make_pairs(4), [])
    assert mock_batch.counters["batches_created"] == 3 and judge.facts()["batches_submitted"] == 3  # 8 calls
    assert all(r["n_valid"] == 2 for r in out.pairwise)


def test_the_judge_stage_sends_a_batch_judge_as_one_batch_and_replays_it_from_the_cache(project, mock_batch):
    """Wired end to end through params.yaml: one batch for the stage's 308 calls, a forced rerun sends nothing."""
    import polars as pl
    import yaml

    from novelty_audit.pipeline import run_stage

    raw = yaml.safe_load((project / "params.yaml").read_text())
    args = {"model": "mock", "base_url": mock_batch.base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "batch": True, "batch_poll_s": 0.01}
    raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "judges": {"mock": {"backend": "openai", "args": args}}}
    raw["pin"]["datasets"] = {"human-only": raw["pin"]["datasets"]["human-only"]}  # only what this test judges
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    run_stage("pin")
    manifest = run_stage("judge")
    assert manifest.complete
    assert mock_batch.counters["batches_created"] == 1 and mock_batch.counters["requests_answered"] == 154 * 2
    verdicts = pl.read_parquet(project / "artifacts/judge/verdicts.parquet")
    assert verdicts.height == 154 and verdicts["n_valid"].to_list() == [2] * 154
    run_stage("judge", force=True)
    assert mock_batch.counters["batches_created"] == 1 and mock_batch.counters["interactive_requests"] == 0
    assert pl.read_parquet(project / "artifacts/judge/verdicts.parquet").equals(verdicts)


def test_an_interactive_run_collects_a_batch_left_open_instead_of_paying_again(mock_batch, tmp_path):
    store = tmp_path / "store"
    mock_batch.hold = True
    judge_of(params("openai", mock_batch.base_url, batch=True, votes=1, batch_max_wait_s=0.05), store).judge(make_pairs(1), [])
    mock_batch.hold = False
    judge = judge_of(params("openai", mock_batch.base_url, votes=1), store)  # batch: false now
    out = judge.judge(make_pairs(2), [])
    assert judge.facts()["batches_resumed"] == 1
    assert mock_batch.counters["batches_created"] == 1
    assert mock_batch.counters["interactive_requests"] == 2  # only pair 1's calls, which no batch held
    assert [r["n_error"] for r in out.pairwise] == [0, 0]


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_refused_submission_is_not_paid_and_its_calls_are_asked_one_by_one(backend, mock_batch, tmp_path):
    mock_batch.refuse_batches = True
    judge = judge_of(params(backend, urls(backend, mock_batch), batch=True, votes=1), tmp_path / "s")
    out = judge.judge(make_pairs(1), [])
    assert mock_batch.counters["refused"] == 2  # the first attempt and max_retries=1 retry
    assert mock_batch.counters["interactive_requests"] == 2 and out.pairwise[0]["n_error"] == 0
    assert not list((tmp_path / "s" / "cache" / "batches" / "open").glob("*.json"))
