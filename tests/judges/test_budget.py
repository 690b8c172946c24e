"""The run budget: reserved before sending, one cap across the threads and processes of a run."""

from __future__ import annotations

import multiprocessing
import pickle
import threading
from concurrent.futures import ProcessPoolExecutor

import pytest

from novelty_audit.errors import BudgetExceededError
from novelty_audit.judges import Budget, JudgeParams, build_judges

CALL = 0.03  # worst case and actual cost of one call; a cap of 1.00 allows exactly 33 of them


def spend_until_refused(budget: Budget) -> int:
    """Reserve, 'send', settle — until the budget refuses; returns the number of calls made."""
    made = 0
    while True:
        try:
            budget.reserve(CALL, f"call {made}")
        except BudgetExceededError:
            return made
        budget.settle(CALL, CALL)
        made += 1


def test_two_processes_reserving_against_one_cap_never_exceed_it(tmp_path):
    budget = Budget.for_run(1.0, tmp_path / "store")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        made = list(pool.map(spend_until_refused, [budget, budget]))
    assert sum(made) == 33, f"one cap for both processes, not one each: {made}"
    assert budget.spent == pytest.approx(33 * CALL) and budget.spent <= 1.0
    assert budget.reserved == pytest.approx(0.0)


def test_threads_sharing_a_budget_never_exceed_it(tmp_path):
    for budget in (Budget(1.0), Budget.for_run(1.0, tmp_path)):
        made: list[int] = []
        threads = [threading.Thread(target=lambda: made.append(spend_until_refused(budget))) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert sum(made) == 33 and budget.spent <= 1.0


def test_a_pickled_budget_shares_the_state_of_the_original(tmp_path):
    original = Budget.for_run(0.10, tmp_path)
    copy = pickle.loads(pickle.dumps(original))
    copy.reserve(0.06, "first")
    assert original.reserved == pytest.approx(0.06)
    with pytest.raises(BudgetExceededError, match=r"in flight \$0.0600"):
        original.reserve(0.06, "second")
    copy.settle(0.06, 0.01)
    original.reserve(0.06, "second")
    assert copy.spent == pytest.approx(0.01) and copy.reserved == pytest.approx(0.06)


def test_a_reservation_is_refused_when_the_worst_case_could_cross_the_cap():
    budget = Budget(0.10)
    budget.reserve(0.04, "a")
    budget.settle(0.04, 0.02)  # cheaper than feared: the difference is free again
    budget.reserve(0.08, "b")
    with pytest.raises(BudgetExceededError) as exc:
        budget.reserve(0.01, "pairwise p-1")
    assert "pairwise p-1" in exc.value.message and "judge.budget_usd" in exc.value.hint


def test_without_a_cap_nothing_is_refused_or_stored(tmp_path):
    budget = Budget.for_run(None, tmp_path)
    for _ in range(1000):
        budget.reserve(1e6, "x")
    assert not (tmp_path / "budget").exists()


def test_a_call_that_cannot_cost_anything_is_never_refused_and_touches_no_state(tmp_path):
    budget = Budget.for_run(0.05, tmp_path)
    budget.reserve(0.05, "priced")
    budget.settle(0.05, 0.05)  # the cap is reached
    written = budget.state.read_bytes()
    budget.state.write_bytes(b"\x00garbage")  # a free call does not even read the state
    for i in range(100):
        budget.reserve(0.0, f"unpriced {i}")  # no price: counted as free, never stopped
        budget.settle(0.0, 0.0)
    budget.state.write_bytes(written)
    with pytest.raises(BudgetExceededError):
        budget.reserve(0.01, "priced again")


def test_an_unreadable_state_refuses_every_call_rather_than_guess(tmp_path):
    budget = Budget.for_run(1.0, tmp_path)
    budget.reserve(0.1, "a")
    budget.state.write_bytes(b"\x00garbage")
    with pytest.raises(BudgetExceededError, match="unreadable"):
        budget.reserve(0.1, "b")


def test_each_run_gets_its_own_budget_shared_by_all_its_judges(tmp_path):
    jp = JudgeParams.model_validate(
        {
            "budget_usd": 1.0,
            "prices": {"m": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}},
            "judges": {
                "a": {"backend": "openai", "args": {"model": "m", "api_key_env": None}},
                "b": {"backend": "anthropic", "args": {"model": "m", "api_key_env": None}},
            },
        }
    )
    first = build_judges(jp, store_root=tmp_path).judges
    assert first[0].budget is first[1].budget
    assert first[0].budget.state.parent == tmp_path / "budget"
    second = build_judges(jp, store_root=tmp_path).judges
    assert second[0].budget.state != first[0].budget.state, "a new run starts from nothing spent"
    shared = Budget.for_run(1.0, tmp_path)
    assert build_judges(jp, store_root=tmp_path, budget=shared).judges[0].budget is shared


def test_the_judges_budget_is_the_call_layers():
    from novelty_audit.llm import Budget as FromLayer

    assert FromLayer is Budget
