"""The verdict-change audit: every changed verdict between two ledger runs gets a cause from the digests."""

from __future__ import annotations

import pytest
from synthetic_runs import DATASET, World

from novelty_audit.artifacts import digest_obj
from novelty_audit.audit import CAUSES, CURRENT, append_adjudication, audit, audit_markdown, classify_changes
from novelty_audit.errors import BadInputError, NoveltyAuditError


def _by_pair(result):
    return {c.pair: c for c in result.changes}


def test_a_forced_rerun_with_unchanged_inputs_is_the_same_run_and_lists_zero_changes(ledger):
    first = ledger.record(World())
    assert ledger.record(World()) == first  # equal content, equal run id: no second run
    res = audit(ledger.store, first, CURRENT, artifacts=ledger.root / "artifacts")
    assert (res.from_run, res.to_run) == (first, CURRENT)
    assert res.changes == []
    assert res.compared == 3
    assert res.to_json()["summary"] == {**{c: 0 for c in CAUSES}, "unchanged_with_changed_digests": 0}


def test_an_edited_idea_text_lists_evidence_changes_only_on_pairs_holding_that_idea(ledger):
    before = World()
    ledger.record(before)
    # i-a is in p-ab and p-ac; the judge changes its mind on both, and not on p-cd.
    edited = before.edit(texts={**before.texts, "i-a": "text of Alpha, rewritten"})
    edited = edited.with_verdict("judge-x", "p-ab", "i-b").with_verdict("judge-x", "p-ac", "i-c")
    ledger.record(edited)
    res = audit(ledger.store)
    changes = _by_pair(res)
    assert set(changes) == {"p-ab", "p-ac"}
    assert {c.cause for c in res.changes} == {"evidence"}
    assert {c.status for c in res.changes} == {"unadjudicated"}
    ab = changes["p-ab"]
    assert (ab.before, ab.after, ab.titles) == ("i-a", "i-b", ("Alpha", "Beta"))
    assert [(d.name, d.before, d.after) for d in ab.inputs] == [
        ("idea_0_text", digest_obj("text of Alpha"), digest_obj("text of Alpha, rewritten"))
    ]
    js = res.to_json()
    assert set(js) == {"from", "to", "summary", "compared", "not_judged", "subsets", "corpus", "membership", "groups", "filters",
                       "hidden", "changes"}
    assert js["summary"]["evidence"] == 2
    entry = js["changes"][0]
    assert {"dataset", "judge", "pair", "titles", "before", "after", "cause", "inputs", "status"} <= set(entry)
    assert "knobs" not in entry
    assert "idea_0_text (Alpha)" in audit_markdown(res)


def test_an_unchanged_verdict_with_moved_digests_is_counted_not_listed(ledger):
    before = World()
    ledger.record(before)
    ledger.record(before.edit(texts={**before.texts, "i-a": "edited"}))
    res = audit(ledger.store)
    assert res.changes == []
    assert res.summary["unchanged_with_changed_digests"] == 2


def _bound(row: dict, change) -> dict:
    """An adjudication row bound to `change`'s evidence, as `adjudicate` writes it."""
    before, after = change.evidence_digests
    return {**row, "evidence_before": before, "evidence_after": after, "group": ""}


def test_an_adjudication_row_marks_the_change_and_a_later_row_supersedes_keeping_the_prior(ledger, tmp_path):
    before = World()
    ledger.record(before)
    edited = before.edit(texts={**before.texts, "i-a": "rewritten"}).with_verdict("judge-x", "p-ab", "i-b")
    ledger.record(edited)
    adj = tmp_path / "adjudications.csv"
    change = _by_pair(audit(ledger.store, adjudications=adj))["p-ab"]
    row = _bound({"dataset": DATASET, "judge": "judge-x", "pair": "p-ab", "from": "i-a", "to": "i-b",
                  "decision": "incorrect", "reason": "the rewrite kept the method", "who": "ana", "when": "2026-11-28"}, change)
    append_adjudication(adj, row)
    first = _by_pair(audit(ledger.store, adjudications=adj))["p-ab"]
    assert first.status == "incorrect"
    append_adjudication(adj, {**row, "decision": "correct", "reason": "rewrite removed the novel part", "when": "2026-11-29"})
    res = audit(ledger.store, adjudications=adj)
    change = _by_pair(res)["p-ab"]
    assert change.status == "correct"
    assert [r.decision for r in change.adjudication.superseded] == ["incorrect"]
    assert adj.read_text().count("incorrect") == 1  # append-only: the prior row is still in the file
    entry = res.to_json()["changes"][0]
    assert entry["adjudication"]["superseded"][0]["decision"] == "incorrect"
    md = audit_markdown(res)
    assert "superseded: incorrect by ana" in md and "**correct**" in md


def test_yaml_adjudications_work_like_csv(ledger, tmp_path):
    before = World()
    ledger.record(before)
    ledger.record(before.edit(texts={**before.texts, "i-a": "x"}).with_verdict("judge-x", "p-ab", "i-b"))
    ev_before, ev_after = _by_pair(audit(ledger.store))["p-ab"].evidence_digests
    adj = tmp_path / "adj.yaml"
    adj.write_text(
        "- {dataset: human-only, judge: judge-x, pair: p-ab, from: i-a, to: i-b, decision: unclear,"
        f" reason: both readings hold, who: bo, when: 2026-11-29, evidence_before: {ev_before}, evidence_after: {ev_after}}}\n"
    )
    assert _by_pair(audit(ledger.store, adjudications=adj))["p-ab"].status == "unclear"


def test_a_legacy_row_without_evidence_digests_loads_but_is_shown_unbound_and_never_applied(ledger, tmp_path):
    before = World()
    ledger.record(before)
    ledger.record(before.edit(texts={**before.texts, "i-a": "x"}).with_verdict("judge-x", "p-ab", "i-b"))
    adj = tmp_path / "adj.csv"
    adj.write_text("dataset,judge,pair,from,to,decision,reason,who,when\n"
                   "human-only,judge-x,p-ab,i-a,i-b,incorrect,about another paper,ana,2026-11-20\n")
    res = audit(ledger.store, adjudications=adj)
    change = _by_pair(res)["p-ab"]
    assert change.status == "unadjudicated"
    assert [r.reason for r in change.unbound] == ["about another paper"]
    assert res.to_json()["changes"][0]["unbound_adjudications"][0]["decision"] == "incorrect"
    assert "not bound to evidence (not applied; decide again)" in audit_markdown(res)
    # Appending to the legacy file keeps its header; the binding values are read back by position.
    append_adjudication(adj, _bound({"dataset": DATASET, "judge": "judge-x", "pair": "p-ab", "from": "i-a", "to": "i-b",
                                     "decision": "correct", "reason": "checked", "who": "bo", "when": "2026-11-30"}, change))
    assert adj.read_text().splitlines()[0] == "dataset,judge,pair,from,to,decision,reason,who,when"
    again = _by_pair(audit(ledger.store, adjudications=adj))["p-ab"]
    assert (again.status, again.adjudication.current.who) == ("correct", "bo")


def test_a_bad_adjudication_row_is_an_error_naming_file_row_and_field(ledger, tmp_path):
    ledger.record(World())
    ledger.record(World().with_verdict("judge-x", "p-cd", "tie"))
    adj = tmp_path / "adj.csv"
    adj.write_text("dataset,judge,pair,from,to,decision,reason,who,when\nhuman-only,judge-x,p-ab,i-a,i-b,maybe,,ana,2026-11-29\n")
    with pytest.raises(BadInputError, match=r"adj.csv: row 1, field 'decision'"):
        audit(ledger.store, adjudications=adj)


def test_a_config_change_names_the_knob(ledger):
    before = World()
    ledger.record(before)
    cfg = {**before.configs["judge-x"], "prompt": "p3", "prompt_digest": "pd-3"}
    ledger.record(before.edit(configs={"judge-x": cfg}).with_verdict("judge-x", "p-cd", "i-d"))
    res = audit(ledger.store)
    (change,) = res.changes
    assert change.cause == "config" and change.status == "not-adjudicable"
    assert [(k.name, k.before, k.after) for k in change.knobs] == [("prompt", "reference", "p3"), ("prompt_digest", "pd-1", "pd-3")]
    assert "knobs" in res.to_json()["changes"][0]


def test_a_nested_config_knob_is_named_with_a_dotted_path(ledger):
    before = World()
    ledger.record(before)
    cfg = {**before.configs["judge-x"], "retrieval": {"enabled": True, "k": 5}}
    ledger.record(before.edit(configs={"judge-x": cfg}).with_verdict("judge-x", "p-cd", "i-d"))
    (change,) = audit(ledger.store).changes
    assert [k.name for k in change.knobs] == ["retrieval.enabled"]


def test_a_code_only_change_is_harness(ledger):
    before = World()
    ledger.record(before)
    ledger.record(before.edit(code="code-2").with_verdict("judge-x", "p-cd", "i-d"))
    (change,) = audit(ledger.store).changes
    assert change.cause == "harness"
    assert [(d.name, d.before, d.after) for d in change.inputs] == [("code", "code-1", "code-2")]


def test_same_call_keys_and_inputs_but_another_verdict_is_spurious(ledger):
    before = World()
    ledger.record(before)
    ledger.record(before.with_verdict("judge-x", "p-cd", "tie"))  # e.g. after a cache refresh
    (change,) = audit(ledger.store).changes
    assert (change.cause, change.before, change.after, change.inputs) == ("spurious", "i-c", "tie", [])


def test_a_moved_provider_model_is_provider_not_spurious(ledger):
    before = World()
    ledger.record(before)
    ledger.record(before.edit(provider_model="m-1-2026-06").with_verdict("judge-x", "p-cd", "i-d"))
    (change,) = audit(ledger.store).changes
    assert change.cause == "provider"
    assert [(d.name, d.after) for d in change.inputs] == [("provider_model", "m-1-2026-06")]


def test_a_pair_on_one_side_only_is_dataset(ledger):
    before = World()
    ledger.record(before)
    after = before.edit(pairs={**before.pairs, "p-bd": ("i-b", "i-d")}).with_verdict("judge-x", "p-bd", "i-d")
    ledger.record(after)
    (change,) = audit(ledger.store).changes
    assert (change.cause, change.pair, change.before, change.after) == ("dataset", "p-bd", None, "i-d")
    assert change.titles == ("Beta", "Delta")


def test_duplicate_verdict_keys_are_an_error():
    table = World().verdict_table()
    dup = table.vstack(table.head(1))
    with pytest.raises(BadInputError, match="duplicate verdict key"):
        classify_changes(table, dup)


def test_runs_are_named_by_id_prefix_and_current_is_the_working_outputs(ledger):
    first = ledger.record(World())
    ledger.record(World().with_verdict("judge-x", "p-cd", "tie"))
    ledger.write(World().with_verdict("judge-x", "p-ab", "i-b"))  # not recorded
    res = audit(ledger.store, first[:8], CURRENT, artifacts=ledger.root / "artifacts")
    assert (res.from_run, res.to_run) == (first, CURRENT)
    assert sorted(c.pair for c in res.changes) == ["p-ab"]


def test_an_audit_needs_two_runs(ledger):
    ledger.record(World())
    with pytest.raises(NoveltyAuditError, match="holds 1 run"):
        audit(ledger.store)
