"""Responses are cached by content: a re-run sends nothing, refresh shows drift, damage is set aside, keys stay out."""

from __future__ import annotations

import asyncio

import pytest
from mock_arxiv import entry
from mock_s2 import paper

from novelty_audit.search import verify_search_cache

S2_KEY = "s2-test-KEY-987"


def cache_files(tmp_path, source="semantic-scholar"):
    return sorted((tmp_path / "cache/search" / source).glob("??/*.json"))


def test_a_rerun_sends_no_request_and_returns_the_same_results(s2, arxiv, searcher, tmp_path):
    first = [searcher(s2).search(q, exclude_title="x") for q in ("alpha", "beta")] + [searcher(arxiv).search("gamma")]
    assert (s2.count, arxiv.count) == (2, 1) and len(cache_files(tmp_path)) == 2 and len(cache_files(tmp_path, "arxiv")) == 1
    again_s2, again_arxiv = searcher(s2), searcher(arxiv)
    again = [again_s2.search(q, exclude_title="x") for q in ("alpha", "beta")] + [again_arxiv.search("gamma")]
    assert again == first and [r.digest for r in again] == [r.digest for r in first]
    assert (s2.count, arxiv.count) == (2, 1)
    assert again_s2.stats == {"requests": 0, "cache_hits": 2, "retries": 0, "failures": 0}


def test_other_request_parameters_are_another_cache_entry(s2, searcher):
    searcher(s2).search("alpha")
    searcher(s2, limit=3).search("alpha")
    assert [r.params["limit"] for r in s2.requests] == ["10", "3"]


def test_refresh_asks_again_and_only_a_changed_answer_changes_its_digest(s2, arxiv, searcher, tmp_path):
    s2.script("stable", [paper("s", "Stable paper", 2019)])
    s2.script("drifting", [paper("d", "Old paper", 2019)])
    before = {q: searcher(s2).search(q) for q in ("stable", "drifting")}
    s2.script("drifting", [paper("d", "Old paper", 2019), paper("n", "A paper that appeared since", 2023)])
    assert searcher(s2).search("drifting") == before["drifting"] and s2.count == 2  # cached: the drift is not seen
    fresh = searcher(s2, refresh=True)
    after = {q: fresh.search(q) for q in ("stable", "drifting")}
    assert s2.count == 4 and fresh.stats["requests"] == 2
    assert after["stable"].digest == before["stable"].digest
    assert after["drifting"].digest != before["drifting"].digest
    assert [p.doc_id for p in after["drifting"].papers] == ["s2:d", "s2:n"]
    assert len(list((tmp_path / "cache/search/semantic-scholar/history").glob("*.json"))) == 2
    assert fresh.search("drifting") == after["drifting"] and s2.count == 4  # asked again once per run, not per query
    assert searcher(s2).search("drifting") == after["drifting"] and s2.count == 4  # the refreshed answer is the cached one now


def test_a_refreshed_arxiv_entry_with_a_new_version_is_a_changed_paper(arxiv, searcher):
    arxiv.script("q", [entry("2101.00001", "Paper", version=1)])
    before = searcher(arxiv).search("q")
    arxiv.script("q", [entry("2101.00001", "Paper", version=2)])
    after = searcher(arxiv, refresh=True).search("q")
    assert before.papers[0].doc_id == after.papers[0].doc_id == "arxiv:2101.00001"
    assert before.papers[0].digest != after.papers[0].digest and before.digest != after.digest


def test_a_damaged_cache_entry_is_moved_to_corrupt_and_asked_again(s2, searcher, tmp_path, caplog):
    first = searcher(s2).search("alpha")
    (entry_file,) = cache_files(tmp_path)
    entry_file.write_bytes(entry_file.read_bytes().replace(b"Earlier work 0", b"Earlier work X"))
    again = searcher(s2)
    assert again.search("alpha") == first
    assert s2.count == 2 and again.stats["requests"] == 1
    assert len(list((tmp_path / "cache/search/semantic-scholar/corrupt").glob("*.json"))) == 1
    assert "discarded" in caplog.text


def test_verify_lists_a_damaged_response_and_reads_nothing_else(s2, arxiv, searcher, tmp_path):
    searcher(s2).search("alpha")
    searcher(arxiv).search("alpha")
    assert verify_search_cache(tmp_path / "cache") == [] and verify_search_cache(tmp_path / "nowhere") == []
    (entry_file,) = cache_files(tmp_path, "arxiv")
    entry_file.write_bytes(entry_file.read_bytes()[:-5])
    assert [path for path, _ in verify_search_cache(tmp_path / "cache")] == [str(entry_file)]
    assert entry_file.exists()


def test_the_api_key_is_sent_as_a_header_and_never_stored(s2, searcher, tmp_path, monkeypatch):
    searcher(s2).search("alpha")
    assert "x-api-key" not in s2.requests[-1].headers  # optional: no key, no header
    monkeypatch.setenv("S2_API_KEY", S2_KEY)
    searcher(s2, refresh=True).search("alpha")
    searcher(s2).search("beta")
    assert [r.headers.get("x-api-key") for r in s2.requests] == [None, S2_KEY, S2_KEY]
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert any("history" in p.parts for p in files)
    for p in files:
        assert S2_KEY.encode() not in p.read_bytes(), p


def test_a_key_read_from_another_variable_is_sent_and_an_unset_one_is_no_key(s2, searcher, monkeypatch):
    monkeypatch.setenv("MY_S2", S2_KEY)
    monkeypatch.delenv("S2_API_KEY", raising=False)
    searcher(s2, api_key_env="MY_S2").search("alpha")
    searcher(s2, api_key_env=None).search("beta")
    assert [r.headers.get("x-api-key") for r in s2.requests] == [S2_KEY, None]


def test_concurrent_identical_queries_send_one_request(s2, searcher):
    search = searcher(s2)

    async def many():
        return await asyncio.gather(*(search.search_async(q) for q in ["alpha"] * 8 + ["beta"]))

    results = asyncio.run(many())
    assert len({r.digest for r in results[:8]}) == 1 and s2.count == 2
    assert search.stats["requests"] == 2 and search.stats["cache_hits"] == 7


@pytest.mark.parametrize("query", ["", "   \n "])
def test_an_empty_query_is_a_failure_without_a_request(s2, searcher, query):
    r = searcher(s2).search(query)
    assert r.failure == "empty query" and r.digest is None and s2.count == 0
