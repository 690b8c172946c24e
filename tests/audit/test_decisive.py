"""Every evidence change says what decided it, in words (docs/design/audit.md "Decisive evidence"): a neighbour's
density that moved an RND score, a move below the decimals shown, the pointwise threshold of a `--limit` run; and
changes of one cause share one group."""

from __future__ import annotations

import pytest
from corpus_world import CorpusWorld, bench_items, corpus_slice, default_distance_judges
from worlds import DocLedger, DocWorld, doc, write_params

from starlette.testclient import TestClient

from novelty_audit.audit import audit, audit_markdown, audit_project
from novelty_audit.review import create_app


@pytest.fixture
def ledger(tmp_path):
    return DocLedger(tmp_path)


def _rnd_world(n2_density: float, corpus: str, score: float) -> DocWorld:
    """Alpha (i-a) is ranked among two neighbours; its own density is 0.4."""
    alpha = [doc("n1", "Neighbour one", rank=0, similarity=0.7) | {"density": 0.3},
             doc("n2", "Neighbour two", rank=1, similarity=0.6) | {"density": n2_density}]
    entry = {"corpus": corpus, "corpus_docs": 10 if corpus == "c1" else 11, "embedder": "minilm@1"}
    return DocWorld(
        neighbours={"i-a": alpha, "i-b": [doc("n3", "Neighbour three", similarity=0.5) | {"density": 0.2}]},
        score_entries={"i-a": {**entry, "density": 0.4}, "i-b": {**entry, "density": 0.1}},
        scores={("judge-x", "p-ab"): (score, 0.6)},
    ).with_verdict("judge-x", "p-ab", "i-a" if score > 0.6 else "i-b")


def test_an_rnd_change_names_the_neighbour_whose_density_moved_and_the_score_it_moved(ledger, monkeypatch):
    # A document added elsewhere in the corpus entered Neighbour two's own neighbours: its density fell below
    # Alpha's, so Alpha now ranks sparser than both its neighbours (RND 0.5 → 1.0).
    ledger.record(_rnd_world(0.5, "c1", 0.5))
    ledger.record(_rnd_world(0.35, "c2", 1.0))
    (change,) = audit(ledger.store).changes
    assert (change.pair, change.cause, change.before, change.after) == ("p-ab", "evidence", "i-b", "i-a")
    (why,) = change.evidence.decisive
    assert (why.kind, why.doc_id, why.before, why.after, why.effect) == ("density", "n2", 0.5, 0.35, 0.5)
    assert why.text == ('the density of neighbour "Neighbour two" (2021, id n2) moved 0.500000 → 0.350000 (-0.1500), now below '
                        "Alpha's own (0.400000): RND +0.5000")
    moved = [(d.doc_id, d.movement, d.density_before, d.density_after) for d in change.evidence.docs]
    assert moved == [("n2", "moved", 0.5, 0.35)]
    assert change.group_label == "corpus changed (10 → 11 documents)"
    # The review page's evidence card: the reason in words, the densities, the document id on demand.
    write_params(ledger.root)
    monkeypatch.chdir(ledger.root)
    page = TestClient(create_app("params.yaml"), base_url="http://127.0.0.1:8765").get("/")
    assert page.status_code == 200, page.text[-2000:]
    card = page.text[page.text.index(f'data-change="{change.id}"'):]
    card = card[: card.index("</article>")]
    assert "Why it changed" in card and "now below Alpha&#39;s own (0.400000): RND +0.5000" in card
    assert "<th>density</th>" in card and "0.500 → 0.350" in card
    assert '<details class="doc-text">' in card and "<code>n2</code>" in card and "abstract not available" in card


def test_a_score_move_below_the_decimals_shown_is_said_in_words(ledger):
    tied = DocWorld(neighbours={"i-a": [doc("n1", "Kept", similarity=0.4)]}, scores={("judge-x", "p-ab"): (0.6, 0.6)})
    ledger.record(tied.with_verdict("judge-x", "p-ab", "tie"))
    nudged = tied.edit(neighbours={"i-a": [doc("n1", "Kept", similarity=0.399997)]}, scores={("judge-x", "p-ab"): (0.600003, 0.6)})
    ledger.record(nudged.with_verdict("judge-x", "p-ab", "i-a"))
    (change,) = audit(ledger.store).changes
    kinds = [d.kind for d in change.evidence.decisive]
    assert kinds == ["similarity", "score"]
    assert change.evidence.decisive[1].text == ("Alpha's score moved 0.600000 → 0.600003 (+0.000003), below the 4 decimals shown; "
                                                "the margin it reversed was 0.000000")
    assert "below the 4 decimals shown" in audit_markdown(audit(ledger.store))


def test_a_limited_run_against_a_full_run_counts_pairs_outside_the_subset_as_not_judged(tmp_path, monkeypatch):
    write_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    world = CorpusWorld(DocLedger(tmp_path), tmp_path / "corpus.json", default_distance_judges(tfidf_only=True))
    pairs, points = bench_items(12)
    docs = corpus_slice(60)
    full = world.run(docs, pairs, points)
    limited = world.run(docs, pairs, points, limit=3)
    for a, b in ((full, limited), (limited, full)):
        report = audit_project("params.yaml", a, b)
        res = report.result
        # 9 pairs and their 18 ideas were judged in one run only: not `dataset` changes, not compared.
        assert res.summary["dataset"] == 0 and res.not_judged == 9 + 18
        assert res.compared == 3 + 6 and len(res.changes) <= res.compared
        assert f"{res.compared} verdicts compared; {len(res.changes)} changed;" in report.markdown
        assert "27 item(s) not judged in one run" in report.markdown and "(judge.limit 3) judged a subset" in report.markdown
        # Same corpus, same scores: only pointwise predictions moved, because the median is over 6 ideas, not 24.
        assert res.changes and {(c.kind, c.cause) for c in res.changes} == {("pointwise", "evidence")}
        for c in res.changes:
            (why,) = c.evidence.decisive
            assert why.kind == "threshold" and "the runs judged different ideas (judge.limit)" in why.text
            assert c.outcome_before.scores == c.outcome_after.scores
        assert len({c.group for c in res.changes}) == 1 and "judge.limit" in res.groups[0].label
