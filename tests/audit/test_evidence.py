"""Each change carries what a person needs to decide it: titles, gold, before/after as titles with correct/wrong and
scores, and the decisive evidence (documents in/out of the neighbour set, a word diff of an edited idea)."""

from __future__ import annotations

import pytest
from worlds import DocLedger, DocWorld, base_docs, doc

from novelty_audit.audit import audit, audit_markdown, word_diff


@pytest.fixture
def ledger(tmp_path):
    return DocLedger(tmp_path)


def _arrival(world: DocWorld, title: str, doc_id: str = "d-new", ideas=("i-a",)) -> DocWorld:
    """A new prior-work document becomes the nearest neighbour of `ideas`; the judge flips p-ab and p-ac."""
    neighbours = {**world.neighbours, **{i: [doc(doc_id, title, similarity=0.93, year=2024)] for i in ideas}}
    w = world.edit(neighbours=neighbours, scores={("judge-x", "p-ab"): (0.07, 0.4), ("judge-x", "p-ac"): (0.07, 0.3)})
    return w.with_verdict("judge-x", "p-ab", "i-b").with_verdict("judge-x", "p-ac", "i-c")


def _by_pair(result):
    return {c.pair: c for c in result.changes}


def test_a_new_nearest_document_is_named_as_decisive_evidence_with_year_and_similarity(ledger):
    before = DocWorld(scores={("judge-x", "p-ab"): (0.5, 0.4), ("judge-x", "p-ac"): (0.5, 0.3)})
    ledger.record(before)
    ledger.record(_arrival(before, "Composing music from radar weather"))
    res = audit(ledger.store)
    ab = _by_pair(res)["p-ab"]
    assert ab.cause == "evidence" and ab.status == "unadjudicated"
    assert (ab.titles, ab.gold, ab.gold_title) == (("Alpha", "Beta"), "i-a", "Alpha")
    assert ab.outcome_before.model_dump() == {"verdict": "i-a", "label": "Alpha", "correct": True, "scores": [0.5, 0.4]}
    assert ab.outcome_after.model_dump() == {"verdict": "i-b", "label": "Beta", "correct": False, "scores": [0.07, 0.4]}
    entered = [d for d in ab.evidence.docs if d.movement == "entered"]
    left = [d for d in ab.evidence.docs if d.movement == "left"]
    assert [(d.title, d.year, d.slot, d.rank_after, d.similarity_before, d.similarity_after, d.decisive) for d in entered] == [
        ("Composing music from radar weather", 2024, "idea_0", 0, None, 0.93, True)
    ]
    assert [(d.title, d.similarity_before, d.decisive) for d in left] == [("Prior work near i-a", 0.5, False)]
    js = res.to_json()["changes"][0]
    (why,) = js["evidence"]["decisive"]
    assert {k: why[k] for k in ("kind", "slot", "doc_id", "title", "year", "after")} == {
        "kind": "document", "slot": "idea_0", "doc_id": "d-new", "title": "Composing music from radar weather", "year": 2024,
        "after": 0.93}
    # Alpha's score fell from 0.5 to 0.07 (Beta's held): the new nearest neighbour of Alpha decides, in words.
    assert why["text"] == ('"Composing music from radar weather" (2024, id d-new) entered Alpha\'s neighbours (at rank 0, '
                           'similarity 0.9300); it is now the nearest prior work of Alpha')
    assert js["outcome_after"]["correct"] is False and js["gold_title"] == "Alpha"
    md = audit_markdown(res)
    assert 'decisive: "Composing music from radar weather" (2024) entered idea_0\'s evidence' in md
    assert "before: Alpha ✓ correct (scores 0.5000 / 0.4000) → after: Beta ✗ wrong (scores 0.0700 / 0.4000)" in md


def test_changes_from_one_arriving_document_share_a_stable_group_and_an_idea_edit_forms_another(ledger):
    before = DocWorld()
    ledger.record(before)
    arrived = _arrival(before, "Composing music from radar weather")
    ledger.record(arrived)
    first = audit(ledger.store)
    groups = {c.group for c in first.changes}
    assert len(groups) == 1 and None not in groups
    (group,) = first.groups
    assert len(group.changes) == 2 and '"Composing music from radar weather"' in group.label
    # The same delta gives the same id in a later audit: ids depend on content only.
    edited = arrived.edit(texts={**arrived.texts, "i-c": "text of Gamma with a new twist"}).with_verdict("judge-x", "p-cd", "i-d")
    ledger.record(edited)
    second = audit(ledger.store)
    (cd,) = second.changes
    assert cd.group not in groups and cd.group.startswith("g-")
    assert [t.ops for t in cd.evidence.text_diffs] == [[("=", "text of Gamma"), ("+", "with a new twist")]]
    assert "text edit (Gamma): text of Gamma **with a new twist**" in audit_markdown(second)


def test_another_paper_with_another_title_is_another_group_and_another_change_id(ledger):
    before = DocWorld()
    one = ledger.record(before)
    mid = ledger.record(_arrival(before, "Weather sonification", doc_id="n1"))
    two = ledger.record(_arrival(before, "Radar songs", doc_id="n2"))
    a = _by_pair(audit(ledger.store, one, mid))["p-ab"]
    b = _by_pair(audit(ledger.store, one, two))["p-ab"]
    assert (a.before, a.after) == (b.before, b.after)
    assert a.group != b.group and a.id != b.id


def test_word_diff_marks_removed_and_added_words_in_order():
    assert word_diff("we learn graphs from text", "we learn trees from text quickly") == [
        ("=", "we learn"), ("-", "graphs"), ("+", "trees"), ("=", "from text"), ("+", "quickly"),
    ]


def test_a_judge_added_is_one_membership_line_not_a_change_per_verdict(ledger):
    before = DocWorld()
    ledger.record(before)
    configs = {**before.configs, "judge-y": {"backend": "distance-yin", "corpus": "c.json"}}
    verdicts = {**before.verdicts, **{("judge-y", p): "i-a" if p != "p-cd" else "i-c" for p in before.pairs}}
    ledger.record(before.edit(configs=configs, verdicts=verdicts))
    res = audit(ledger.store)
    assert res.changes == []
    assert [m.line() for m in res.membership] == ["judge added: judge-y (3 verdicts)"]
    assert "judge added: judge-y (3 verdicts)" in audit_markdown(res)


def test_pointwise_predictions_are_audited_like_pairwise_verdicts(ledger):
    before = DocWorld(pointwise={("judge-x", "i-a"): "POSITIVE", ("judge-x", "i-b"): "NEGATIVE"})
    ledger.record(before)
    neighbours = {**base_docs(), "i-a": [doc("d-new", "Music from radar", similarity=0.9)]}
    after = before.edit(neighbours=neighbours, pointwise={**before.pointwise, ("judge-x", "i-a"): "NEGATIVE"})
    # p-ab and p-ac keep their verdicts: only the pointwise prediction of i-a changed.
    ledger.record(after)
    res = audit(ledger.store)
    (change,) = res.changes
    assert (change.kind, change.pair, change.before, change.after, change.cause) == ("pointwise", "i-a", "POSITIVE", "NEGATIVE", "evidence")
    assert change.outcome_before.correct is True and change.outcome_after.correct is False
    assert [d.title for d in change.evidence.decisive] == ["Music from radar"]
    assert res.summary["unchanged_with_changed_digests"] == 2  # p-ab and p-ac saw the new document, verdict held


def test_the_reviews_table_is_audited_with_text_diff_and_label_counts(ledger):
    before = DocWorld(reviews={("gpt-gen", "paper-1"): ("The method is new.", "positive=1 neutral=0 negative=0")})
    ledger.record(before)
    after = before.edit(reviews={("gpt-gen", "paper-1"): ("The method is not new.", "positive=0 neutral=0 negative=1")},
                        code="code-2")
    ledger.record(after)
    (change,) = audit(ledger.store).changes
    assert (change.kind, change.pair, change.titles, change.cause) == ("review", "paper-1", ("Paper paper-1",), "harness")
    assert (change.before, change.after) == ("positive=1 neutral=0 negative=0", "positive=0 neutral=0 negative=1")
    assert change.evidence.text_diffs[0].ops == [("=", "The method is"), ("+", "not"), ("=", "new.")]


def test_a_dataset_newly_judged_by_a_judge_is_one_membership_line(ledger):
    before = DocWorld()
    ledger.record(before)
    after = before.edit(verdicts={**before.verdicts, ("judge-x", "p-bd"): "i-b"}, pairs={**before.pairs, "p-bd": ("i-b", "i-d")})
    ledger.record(after)
    res = audit(ledger.store)
    # One new pair in an existing dataset is a `dataset` change; a whole dataset would be one line (below).
    assert [c.cause for c in res.changes] == ["dataset"] and res.membership == []
    from novelty_audit.audit import classify_changes

    table = after.verdict_table()
    other = table.with_columns(dataset=table["dataset"].str.replace("human-only", "human-generated"))
    moved = classify_changes(table, table.vstack(other))
    assert moved.changes == []
    assert [m.line() for m in moved.membership] == ["dataset added for judge judge-x: human-generated (4 verdicts)"]


def test_retrieved_documents_added_and_removed_are_listed_with_their_source(ledger):
    kept = doc("s2-1", "Kept paper", rank=0, similarity=None, source="semantic-scholar")
    before = DocWorld(neighbours={**base_docs(), "i-c": [kept, doc("s2-2", "Dropped paper", rank=1, similarity=None, source="semantic-scholar")]})
    ledger.record(before)
    after = before.edit(neighbours={**before.neighbours, "i-c": [kept, doc("s2-3", "New paper", rank=1, similarity=None, source="semantic-scholar")]})
    ledger.record(after.with_verdict("judge-x", "p-cd", "i-d"))
    (change,) = audit(ledger.store).changes
    moves = [(d.movement, d.title, d.source, d.decisive) for d in change.evidence.docs]
    assert moves == [("entered", "New paper", "semantic-scholar", True), ("left", "Dropped paper", "semantic-scholar", False)]
