"""A search agent's evidence change names the query and the papers that entered or left its results.

Agents list each paper once per query whose results held it, with that `query` (docs/design/tables.md); the audit
reads one entry as one paper in one query's results. Rows without `query` (other judges, older agent rows) read
as before. The tables are hand-built (tests/audit/worlds.py), in the judge stage's schema.
"""

from __future__ import annotations

import pytest
from worlds import DocLedger, DocWorld, doc

from novelty_audit.audit import audit, audit_markdown

S2 = "semantic-scholar"


def found(doc_id: str, title: str, query: str, rank: int, year: int = 2021) -> dict:
    return {**doc(doc_id, title, rank=rank, similarity=None, year=year, source=S2), "query": query}


@pytest.fixture
def ledger(tmp_path):
    return DocLedger(tmp_path)


def searched(ledger: DocLedger, before_docs: list[dict], after_docs: list[dict]):
    """i-a is judged POSITIVE on `before_docs`, NEGATIVE on `after_docs`; nothing else moves."""
    before = DocWorld(neighbours={"i-a": before_docs}, pointwise={("agent", "i-a"): "POSITIVE", ("agent", "i-b"): "POSITIVE"})
    ledger.record(before)
    ledger.record(before.edit(neighbours={"i-a": after_docs}, pointwise={**before.pointwise, ("agent", "i-a"): "NEGATIVE"}))
    res = audit(ledger.store)
    (change,) = res.changes
    return res, change


def test_a_paper_that_entered_one_querys_results_is_named_with_that_query(ledger):
    kept = found("s2:k", "Weather to melody", "weather music", 0)
    res, change = searched(
        ledger,
        [kept, found("s2:old", "Old sonification", "weather music", 1), found("s2:z", "Radar art", "radar art", 0)],
        [kept, found("s2:new", "Radar sonification", "weather music", 1, year=2024), found("s2:z", "Radar art", "radar art", 0)],
    )
    assert (change.kind, change.pair, change.cause) == ("pointwise", "i-a", "evidence")
    moves = [(d.movement, d.doc_id, d.query, d.decisive) for d in change.evidence.docs]
    assert moves == [("entered", "s2:new", "weather music", True), ("left", "s2:old", "weather music", False)]
    (why,) = change.evidence.decisive
    assert (why.kind, why.doc_id, why.query) == ("document", "s2:new", "weather music")
    assert why.text == ('"Radar sonification" (2024, id s2:new) was returned by semantic-scholar search "weather music" '
                        "for Alpha (at rank 1)")
    js = res.to_json()["changes"][0]["evidence"]
    assert [d["query"] for d in js["docs"]] == ["weather music", "weather music"]
    assert js["decisive"][0]["query"] == "weather music"
    md = audit_markdown(res)
    assert 'decisive: "Radar sonification" (2024) entered idea\'s evidence (search "weather music")' in md
    assert "why: " + why.text in md


def test_the_same_paper_arriving_in_another_querys_results_is_an_entry_of_its_own(ledger):
    kept = found("s2:k", "Weather to melody", "weather music", 0)
    _, change = searched(ledger, [kept], [kept, found("s2:k", "Weather to melody", "melody from radar", 0)])
    assert [(d.movement, d.doc_id, d.query) for d in change.evidence.docs] == [("entered", "s2:k", "melody from radar")]
    assert "was returned by the new semantic-scholar search \"melody from radar\"" in change.evidence.decisive[0].text


def test_a_query_no_longer_asked_takes_its_papers_with_it(ledger):
    kept = found("s2:k", "Weather to melody", "weather music", 0)
    _, change = searched(ledger, [kept, found("s2:g", "Gone paper", "old query", 0)], [kept])
    assert [(d.movement, d.doc_id, d.query) for d in change.evidence.docs] == [("left", "s2:g", "old query")]
    assert change.evidence.decisive[0].text.startswith('"Gone paper" (2021, id s2:g) left with the no longer asked '
                                                       'semantic-scholar search "old query"')


def test_rows_without_a_query_read_as_before_and_carry_no_query_key(ledger):
    res, change = searched(ledger, [doc("s2-1", "Kept", source=S2, similarity=None)],
                           [doc("s2-1", "Kept", source=S2, similarity=None), doc("s2-2", "New", rank=1, source=S2, similarity=None)])
    assert [(d.movement, d.doc_id, d.query) for d in change.evidence.docs] == [("entered", "s2-2", None)]
    assert change.evidence.decisive[0].text.startswith('"New" (2021, id s2-2) entered Alpha\'s neighbours')
    js = res.to_json()["changes"][0]["evidence"]
    assert "query" not in js["docs"][0] and "query" not in js["decisive"][0]
    assert "(search " not in audit_markdown(res)


def test_the_same_drift_on_two_ideas_groups_by_query_and_paper(ledger):
    a_docs = [found("s2:k", "Kept", "q", 0)]
    b_docs = [found("s2:k2", "Kept too", "q", 0)]
    new = found("s2:new", "Radar sonification", "q", 1)
    before = DocWorld(neighbours={"i-a": a_docs, "i-b": b_docs},
                      pointwise={("agent", "i-a"): "POSITIVE", ("agent", "i-b"): "POSITIVE"})
    ledger.record(before)
    ledger.record(before.edit(neighbours={"i-a": a_docs + [new], "i-b": b_docs + [new]},
                              pointwise={("agent", "i-a"): "NEGATIVE", ("agent", "i-b"): "NEGATIVE"}))
    res = audit(ledger.store)
    assert len(res.changes) == 2 and len({c.group for c in res.changes}) == 1
    (group,) = res.groups
    assert group.label == 'entered: "Radar sonification" (search "q") (2 changes)'


def test_an_agent_added_counts_an_idea_whose_only_decision_was_undecided_as_covered():
    import polars as pl

    from novelty_audit.audit import classify_changes

    def row(judge: str, idea: str, predicted: str, **counts: int) -> dict:
        base = {c: 0 for c in ("n_valid", "n_invalid", "n_refusal", "n_error", "n_truncated", "n_undecided")}
        return {"dataset": "ds", "judge": judge, "idea_id": idea, "gold_label": "POSITIVE", "predicted": predicted,
                "score": None, "config_digest": "c", "evidence_digest": "e", "code_digest": "k", **base, **counts}

    prompted = [row("prompted", "i-a", "POSITIVE", n_valid=1)]
    agent = [row("agent", "i-a", "none", n_undecided=1), row("agent", "i-b", "NEGATIVE", n_valid=1),
             row("agent", "i-c", "none")]  # i-c: a row with no decision asked (not covered)
    res = classify_changes(pl.DataFrame(prompted), pl.DataFrame(prompted + agent), kind="pointwise")
    assert [m.line() for m in res.membership] == ["judge added: agent (2 pointwise predictions)"]


def test_a_paper_the_filters_now_leave_out_is_listed_as_dropped_with_its_query(ledger):
    kept = found("s2:k", "Weather to melody", "weather music", 0)
    own = {**found("s2:own", "Alpha", "weather music", 1), "role": "dropped", "reason": "own paper"}
    new = found("s2:new", "Radar sonification", "weather music", 1)
    _, change = searched(ledger, [kept, found("s2:own", "Alpha", "weather music", 1)], [kept, new, own])
    assert [(d.movement, d.doc_id, d.query) for d in change.evidence.docs] == [
        ("entered", "s2:new", "weather music"), ("left", "s2:own", "weather music")]
    assert [(d.movement, d.doc_id, d.reason, d.query) for d in change.evidence.dropped] == [
        ("entered", "s2:own", "own paper", "weather music")]
