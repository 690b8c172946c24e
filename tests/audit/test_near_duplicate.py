"""Near-duplicate evidence, with the real default distance judges (MiniLM Yin/kNN/RND, TF-IDF kNN, args as shipped)
on benchmark ideas and a slice of the default corpus: one paraphrase of a benchmark idea is added to the corpus.
Every evidence change names what decided it, all of them form one group, and the audit names the judges whose
leakage filter dropped the paraphrase (the MiniLM ones: cosine ≥ 0.95) and those that kept it (TF-IDF)."""

from __future__ import annotations

import html

import orjson
import pytest
from corpus_world import CorpusWorld, bench_items, corpus_slice, default_distance_judges
from starlette.testclient import TestClient
from worlds import DocLedger, write_params

from novelty_audit.review import create_app

# Light rewording: MiniLM still finds it a near-duplicate (cosine ≈ 0.99), TF-IDF's word bigrams do not (≈ 0.92).
REWORDING = [("have the ability to", "can"), ("However, our study reveals", "Our study shows"), ("difficult", "hard"),
             ("Inspired by", "Motivated by"), ("we propose", "we introduce"), ("phenomenon", "effect")]


def paraphrase(text: str) -> str:
    for old, new in REWORDING:
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.mark.slow
def test_a_near_duplicate_added_to_the_corpus_is_one_group_of_explained_changes_naming_the_leakage_filter(tmp_path, monkeypatch, run_main):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    judges = default_distance_judges()
    world = CorpusWorld(DocLedger(tmp_path), tmp_path / "corpus.json", judges)
    pairs, points = bench_items(40)
    source = pairs[0].idea_0
    docs = corpus_slice(56)  # >= RND's 50 neighbours; each run embeds them all (a slice is no shipped shard)
    text = paraphrase(source.text)
    world.run(docs, pairs, points)
    world.run([*docs, {"key": "zz-paraphrase", "title": "Peer reasoning", "abstract": text, "year": 2025}], pairs, points)

    code, out, err = run_main("audit", "--json")
    assert code == 0, err
    audit = orjson.loads(out)
    changes = audit["changes"]
    assert changes and {c["cause"] for c in changes} == {"evidence"}
    for c in changes:
        assert c["evidence"]["decisive"] and all(d["text"] for d in c["evidence"]["decisive"]), c
    assert len({c["group"] for c in changes}) == 1 and len(audit["groups"]) == 1

    (corpus,) = audit["corpus"]
    assert (corpus["docs_before"], corpus["docs_after"]) == (56, 57) and sorted(corpus["judges"]) == sorted(judges)
    (added,) = corpus["added"]
    assert (added["doc_id"], added["title"], added["abstract"]) == ("zz-paraphrase", "Peer reasoning", text)
    minilm = {n for n, c in judges.items() if c["args"].get("embedder") != "tfidf"}
    tfidf = set(judges) - minilm
    assert minilm and tfidf
    assert {d["judge"] for d in added["dropped_by"]} == minilm
    for d in added["dropped_by"]:
        assert d["reason"] == "near-duplicate" and d["ideas"] == [source.idea_id] and d["similarity"] >= 0.95
    assert tfidf <= set(added["kept_by"])
    assert 'added "Peer reasoning" (id zz-paraphrase)' in audit["groups"][0]["label"]

    # TF-IDF kept it: the paraphrased idea's nearest prior work is now its paraphrase, which decides its verdict.
    (own,) = [c for c in changes if c["judge"] in tfidf and c["kind"] == "pairwise" and c["pair"] == pairs[0].pair_id]
    why = own["evidence"]["decisive"][0]
    assert (why["kind"], why["doc_id"], why["abstract"]) == ("document", "zz-paraphrase", text)
    assert "it is now the nearest prior work of" in why["text"]
    # The MiniLM judges' drops are named with the rule and the cosine.
    code, out, err = run_main("audit", "--markdown")
    assert code == 0, err
    for judge in sorted(minilm):
        assert f"{judge} (near-duplicate, cosine 0.99" in out
    # The review page's evidence card says why, and shows the document's id and abstract on demand.
    page = TestClient(create_app("params.yaml"), base_url="http://127.0.0.1:8765").get("/")
    assert page.status_code == 200, page.text[-2000:]
    card = page.text[page.text.index(f'data-change="{own["id"]}"'):]
    card = card[: card.index("</article>")]
    assert "Why it changed" in card and "it is now the nearest prior work of" in card
    assert '<details class="doc-text">' in card and "<code>zz-paraphrase</code>" in card and html.escape(text[:60], quote=False) in card
