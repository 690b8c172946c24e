"""Fan-out chunks of one run draw on one budget, wherever they run (the budget's state lives in the store)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.judges import Budget, Idea, PairItem
from novelty_audit.orchestration import plan_chunks, run_chunk
from novelty_audit.params import load_params

REPO = Path(__file__).resolve().parents[2]


def _pairs(n: int) -> list[PairItem]:
    ideas = [Idea(f"i-{k:016x}", f"Title {k}", f"Idea number {k} proposes something.", f"d{k:063x}") for k in range(2 * n)]
    return [PairItem("toy", f"p-{k:016x}", ideas[2 * k], ideas[2 * k + 1], ideas[2 * k].idea_id) for k in range(n)]


def _judge_params(tmp_path: Path, mock: MockLLM):
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    raw["judge"]["judges"] = {
        "mock-gpt": {
            "backend": "openai",
            "args": {"model": "gpt-x", "base_url": mock.base_url, "api_key_env": None, "votes": 1, "orders": "forward",
                     "price": {"input_per_mtok": 0.0, "output_per_mtok": 1000.0}, "sampling": {"max_tokens": 10}},
        }
    }
    raw["judge"]["tasks"] = ["pairwise"]
    raw["judge"]["progress"] = False
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return load_params(tmp_path / "params.yaml").judge


def test_two_chunks_given_the_runs_budget_spend_from_one_cap(tmp_path: Path):
    store = tmp_path / "store"
    with MockLLM() as mock:
        jp = _judge_params(tmp_path, mock)
        budget = Budget.for_run(1.0, store)

        class _J:  # what plan_chunks reads of a judge
            name, backend = "mock-gpt", "openai"

        first, second = plan_chunks([_J()], _pairs(16), [], chunk_size=8)
        one = run_chunk(jp, store, first, budget)
        assert one.facts["cost_usd"] > 0 and budget.spent == pytest.approx(one.facts["cost_usd"])
        # The second chunk gets a pickled copy, as a Dask worker would: its spend lands on the same cap.
        two = run_chunk(jp, store, second, pickle.loads(pickle.dumps(budget)))
        assert budget.spent == pytest.approx(one.facts["cost_usd"] + two.facts["cost_usd"])
        assert mock.count == 16


def test_a_chunk_without_the_runs_budget_spends_from_a_cap_of_its_own(tmp_path: Path):
    store = tmp_path / "store"
    with MockLLM() as mock:
        jp = _judge_params(tmp_path, mock)
        budget = Budget.for_run(1.0, store)

        class _J:
            name, backend = "mock-gpt", "openai"

        (only,) = plan_chunks([_J()], _pairs(4), [], chunk_size=8)
        out = run_chunk(jp, store, only)
        assert out.facts["cost_usd"] > 0 and budget.spent == 0.0
