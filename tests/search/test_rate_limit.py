"""Requests to one API are spaced to its rate, across every search object of the process."""

from __future__ import annotations

from novelty_audit.search import RateLimiter, process_limiter


def test_each_reservation_waits_one_interval_after_the_one_before():
    now = [100.0]
    limiter = RateLimiter(clock=lambda: now[0])
    assert [limiter.reserve(0.5) for _ in range(3)] == [0.0, 0.5, 1.0]
    now[0] = 100.75  # a caller arriving later waits only for what is left of the queue
    assert limiter.reserve(0.5) == 0.75
    now[0] = 200.0  # idle long enough: no wait
    assert limiter.reserve(3.0) == 0.0 and limiter.reserve(3.0) == 3.0


def test_search_objects_of_one_api_share_the_limiter_and_other_apis_do_not(s2, arxiv, searcher):
    a, b, c = searcher(s2), searcher(s2, limit=3), searcher(arxiv)
    assert process_limiter(a.endpoint) is process_limiter(b.endpoint) is not process_limiter(c.endpoint)


def test_requests_arrive_spaced_to_the_rate(s2, searcher):
    first, second = searcher(s2, requests_per_second=10), searcher(s2, requests_per_second=10, limit=3)
    for q in ("a", "b"):
        first.search(q)
        second.search(q)
    times = [r.at for r in s2.requests]
    assert times[-1] - times[0] >= 0.2, times  # 3 intervals of 0.1 s; generous for a busy loopback
