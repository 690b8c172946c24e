"""429, 5xx, timeouts and dropped connections are retried with backoff; a search that still fails is a failure
result naming why (never an exception, never cached), and a rejected key is a user error."""

from __future__ import annotations

import itertools

import httpx
import pytest

from novelty_audit.errors import ConfigError
from novelty_audit.search import S2SearchArgs, fetch, s2_data


def test_a_429_with_retry_after_is_waited_out_and_then_the_search_succeeds(s2, searcher):
    s2.add_fault("alpha", "429", times=2, retry_after=0.05)
    search = searcher(s2)
    r = search.search("alpha")
    assert r.ok and len(r.papers) == 3
    assert s2.count == 3 and search.stats == {"requests": 3, "cache_hits": 0, "retries": 2, "failures": 0}
    times = [req.at for req in s2.requests]
    assert all(b - a >= 0.05 for a, b in itertools.pairwise(times)), times  # Retry-After beats the 1 ms backoff


def test_retry_after_wins_over_a_shorter_backoff_and_the_backoff_doubles_up_to_its_cap(s2):
    waits: list[float] = []
    policy = S2SearchArgs(source="semantic-scholar", backoff_s=1.0, max_backoff_s=3.0, max_retries=4)
    s2.add_fault("slow", "429", times=1, retry_after=30)
    s2.add_fault("dead", "500")
    with httpx.Client() as client:
        def get(query: str):
            return fetch(client, f"{s2.base_url}/paper/search", {"query": query}, policy, headers={},
                         wait_turn=lambda: None, parse=s2_data, sleep=waits.append)  # fmt: skip

        assert get("slow").ok and waits == [30.0]
        waits.clear()
        dead = get("dead")
    assert (dead.failure, dead.attempts, dead.transient) == ("HTTP 500", 5, True)
    bounds = [(0.5, 1.0), (1.0, 2.0), (1.5, 3.0), (1.5, 3.0)]  # 1, 2, 4→3, 8→3 seconds, jittered down to half
    assert len(waits) == 4 and all(lo <= w <= hi for w, (lo, hi) in zip(waits, bounds)), waits


def test_a_persistent_500_is_a_failure_result_and_is_asked_again_next_run(s2, searcher, tmp_path):
    s2.add_fault("alpha", "500")
    search = searcher(s2, max_retries=2)
    r = search.search("alpha")
    assert not r.ok and r.failure == "HTTP 500" and r.papers == () and r.digest is None
    assert s2.count == 3 and search.stats == {"requests": 3, "cache_hits": 0, "retries": 2, "failures": 1}
    assert not list((tmp_path / "cache/search").rglob("??/*.json"))  # a failure is not an answer: nothing cached
    s2.faults.clear()
    assert searcher(s2).search("alpha").ok and s2.count == 4


@pytest.mark.parametrize("kind", ["503", "malformed", "drop"])
def test_a_transient_arxiv_fault_is_retried(arxiv, searcher, kind):
    arxiv.add_fault("alpha", kind, times=1)
    search = searcher(arxiv)
    assert search.search("alpha").ok
    assert arxiv.count == 2 and search.stats["retries"] == 1


@pytest.mark.parametrize(("kind", "failure"), [("429", "HTTP 429"), ("503", "HTTP 503"), ("malformed", "malformed response"),
                                               ("drop", "connection dropped")])  # fmt: skip
def test_a_fault_that_outlasts_the_retries_names_itself(arxiv, searcher, kind, failure):
    arxiv.add_fault("alpha", kind)
    r = searcher(arxiv, max_retries=1).search("alpha")
    assert r.failure == failure and arxiv.count == 2


def test_no_answer_within_the_timeout_is_a_timeout_failure(arxiv, searcher):
    arxiv.add_fault("alpha", "hang")
    assert searcher(arxiv, max_retries=0, timeout_s=0.2).search("alpha").failure == "timeout"


def test_a_server_that_is_down_is_a_connection_refused_failure(s2, searcher):
    s2.stop()
    assert searcher(s2, max_retries=1).search("alpha").failure == "connection refused"


def test_arxivs_error_entry_is_a_rejected_query_not_a_paper(arxiv, searcher):
    arxiv.add_fault("alpha", "rejected")
    r = searcher(arxiv).search("alpha")
    assert r.failure == "query rejected" and r.papers == () and arxiv.count == 1


def test_a_rejected_semantic_scholar_key_is_a_config_error_naming_the_variable(s2, searcher):
    s2.add_fault("alpha", "403")
    with pytest.raises(ConfigError, match="refused") as err:
        searcher(s2).search("alpha")
    assert "S2_API_KEY" in str(err.value) and s2.count == 1
