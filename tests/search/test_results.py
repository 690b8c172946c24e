"""What a search returns: papers with every field, in the API's order, and what the filters left out, recorded."""

from __future__ import annotations

import dataclasses

import pytest
from mock_arxiv import entry
from mock_s2 import paper
from pydantic import TypeAdapter, ValidationError

from novelty_audit.search import NO_PAPERS, Paper, SearchArgs, same_title


def test_semantic_scholar_results_carry_every_field_in_the_apis_rank_order(s2, searcher):
    s2.script("graph attention", [
        paper("p2", "Graph  Attention\nNetworks", 2018, "Attention over   neighbours.", "2018-02-03", authors=("Petar V", "Yoshua B"), venue="ICLR", citations=9000),
        paper("p1", "Semi-supervised GCN", 2017, None, None, authors=(), venue="", citations=None),
    ])  # fmt: skip
    r = searcher(s2, limit=5).search("  graph   attention ")
    assert r.ok and r.failure is None and r.query == "graph attention" and r.source == "semantic-scholar"
    assert r.papers[0] == Paper(
        doc_id="s2:p2", title="Graph Attention Networks", authors=("Petar V", "Yoshua B"), venue="ICLR", year=2018, date="2018-02-03",
        citations=9000, abstract="Attention over neighbours.", url="https://www.semanticscholar.org/paper/p2", source="semantic-scholar",
    )  # fmt: skip
    second = r.papers[1]
    assert (second.doc_id, second.authors, second.venue, second.date, second.citations) == ("s2:p1", (), None, None, None)
    (req,) = s2.requests
    assert req.path == "/graph/v1/paper/search"
    assert req.params == {"query": "graph attention", "limit": "5", "fields": "paperId,title,abstract,year,publicationDate,authors,venue,citationCount"}


def test_arxiv_results_are_read_from_the_atom_feed_with_ids_without_their_version(arxiv, searcher):
    arxiv.script("attention", [
        entry("1706.03762", "Attention Is\n  All You Need", "2017-06-12", "We propose the Transformer.", authors=("Ashish V",),
              journal_ref="NeurIPS 2017", version=7),
        entry("hep-th/9901001", "An old-style id", "1999-01-04"),
    ])  # fmt: skip
    r = searcher(arxiv, limit=3).search("attention")
    assert r.papers[0] == Paper(
        doc_id="arxiv:1706.03762", title="Attention Is All You Need", authors=("Ashish V",), venue="NeurIPS 2017", year=2017,
        date="2017-06-12", citations=None, abstract="We propose the Transformer.", url="http://arxiv.org/abs/1706.03762v7", source="arxiv",
    )  # fmt: skip
    assert (r.papers[1].doc_id, r.papers[1].venue) == ("arxiv:hep-th/9901001", None)
    (req,) = arxiv.requests
    assert req.path == "/api/query" and req.params == {"search_query": "all:attention", "start": "0", "max_results": "3"}


def test_cutoff_and_own_paper_exclusions_are_recorded_with_their_reasons(s2, searcher):
    me = "Graph Attention Networks"
    s2.script("graph", [
        paper("own", "<i>Graph</i> attention networks!", 2025),            # the idea's own paper: normalized title matches
        paper("late", "A later paper", 2025, date="2025-10-01"),             # after the cutoff
        paper("ok1", "Earlier paper one", 2019),
        paper("nodate", "Paper without a date", None),                       # neither date nor year: cannot predate the cutoff
        paper("yearonly", "Same year, date unknown", 2025),                  # a bare year counts as Dec 31
        {"paperId": None, "title": "No id"},                                 # incomplete
        paper("ok2", "Earlier paper two", 2025, date="2025-09-19"),          # on the cutoff day: kept
    ])  # fmt: skip
    r = searcher(s2, cutoff="2025-09-19").search("graph", exclude_title=me)
    assert [p.doc_id for p in r.papers] == ["s2:ok1", "s2:ok2"]
    assert list(r.excluded) == [
        {"doc_id": "s2:own", "title": "<i>Graph</i> attention networks!", "reason": "own paper"},
        {"doc_id": "s2:late", "title": "A later paper", "reason": "after cutoff"},
        {"doc_id": "s2:nodate", "title": "Paper without a date", "reason": "no date"},
        {"doc_id": "s2:yearonly", "title": "Same year, date unknown", "reason": "after cutoff"},
        {"doc_id": None, "title": "No id", "reason": "incomplete"},
    ]
    assert "publicationDateOrYear" not in s2.requests[0].params  # the cutoff filters the cached answer


def test_a_pairs_two_titles_are_both_own_papers(arxiv, searcher):
    arxiv.script("q", [entry("1", "Idea A"), entry("2", "Prior"), entry("3", "idea  b")])
    r = searcher(arxiv).search("q", exclude_title=("Idea A", "Idea B"))
    assert [p.doc_id for p in r.papers] == ["arxiv:2"]
    assert [(e["doc_id"], e["reason"]) for e in r.excluded] == [("arxiv:1", "own paper"), ("arxiv:3", "own paper")]


def test_changing_the_cutoff_or_the_own_title_filters_the_cached_answer_without_a_request(s2, searcher):
    s2.script("graph", [paper("a", "Alpha", 2010), paper("b", "Beta", 2020)])
    assert [p.doc_id for p in searcher(s2).search("graph").papers] == ["s2:a", "s2:b"]
    r = searcher(s2, cutoff="2015-01-01").search("graph", exclude_title="alpha")
    assert r.papers == () and [e["reason"] for e in r.excluded] == ["own paper", "after cutoff"]
    assert s2.count == 1


def test_the_model_sees_numbered_ai_scientist_blocks_with_long_abstracts_cut(s2, searcher):
    s2.script("q", [paper("a", "Alpha", 2010, "x" * 50, authors=("A One", "B Two"), venue="ICML", citations=3),
                    paper("b", "Beta", None, "", authors=(), venue="", citations=None)])  # fmt: skip
    r = searcher(s2).search("q")
    assert r.text(max_chars=10) == (
        "0: Alpha. A One, B Two. ICML, 2010.\nNumber of citations: 3\nAbstract: xxxxxxxxxx…\n\n"
        "1: Beta. Unknown authors. n.d..\nAbstract: (no abstract)"
    )
    s2.script("nothing", [])
    empty = searcher(s2).search("nothing")
    assert empty.ok and empty.papers == () and empty.text() == NO_PAPERS and empty.digest is not None


def test_a_paper_digest_covers_every_field_and_a_result_digest_its_query_and_papers_in_order(s2, searcher):
    s2.script("q", [paper("a", "Alpha", 2010), paper("b", "Beta", 2011)])
    r = searcher(s2).search("q")
    a, b = r.papers
    changed = {"doc_id": "s2:z", "title": "Z", "authors": ("Z",), "venue": "Z", "year": 1999, "date": "1999-01-01",
               "citations": 13, "abstract": "Z", "url": "Z", "source": "arxiv"}  # fmt: skip
    assert set(changed) == {f.name for f in dataclasses.fields(Paper)}
    assert all(dataclasses.replace(a, **{k: v}).digest != a.digest for k, v in changed.items())
    swapped = type(r)(r.source, r.query, (b, a))
    assert len({r.digest, swapped.digest, type(r)(r.source, "other", r.papers).digest}) == 3


def test_own_titles_match_after_markup_punctuation_and_case_are_dropped():
    assert same_title("<b>Graph</b> Attention: Networks", "graph attention networks")
    assert not same_title("Graph Attention Networks 2", "graph attention networks")


def test_search_args_name_their_source_and_refuse_a_bad_cutoff_or_unknown_key():
    ta = TypeAdapter(SearchArgs)
    assert ta.validate_python({"source": "arxiv"}).requests_per_second == 0.34
    assert ta.validate_python({"source": "semantic-scholar"}).api_key_env == "S2_API_KEY"
    with pytest.raises(ValidationError, match="cutoff"):
        ta.validate_python({"source": "arxiv", "cutoff": "Sept 2025"})
    with pytest.raises(ValidationError, match="api_key_env"):
        ta.validate_python({"source": "arxiv", "api_key_env": "X"})
    with pytest.raises(ValidationError):
        ta.validate_python({"source": "google-scholar"})


def test_config_holds_what_decides_results_and_leaves_out_refresh_and_the_rate(s2, searcher):
    a = searcher(s2, limit=4, cutoff="2024-01-01", refresh=True, requests_per_second=50).config()
    assert a == {"source": "semantic-scholar", "base_url": s2.base_url, "limit": 4, "cutoff": "2024-01-01",
                 "fields": "paperId,title,abstract,year,publicationDate,authors,venue,citationCount"}  # fmt: skip
    assert searcher(s2, limit=4, cutoff="2024-01-01").config() == a
