"""Both review formats end as the same papers; bad records name file, record and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from novelty_audit.errors import BadInputError
from novelty_audit.signals import (
    SignalsParams,
    build_signals,
    classify_decision,
    paper_id_for,
    parse_markdown_reviews,
    parse_openreview_dump,
)

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / "data" / "raw-reviews" / "learning-from-peers-in-reasoning-models.md"
FIXTURE = Path(__file__).parent / "fixtures" / "openreview_v2_iclr2026.json"


def test_markdown_export_gives_title_decision_abstract_and_every_review_field() -> None:
    paper, problems = parse_markdown_reviews(PEERS)
    assert problems == []
    assert paper is not None
    assert paper.title == "Learning from Peers in Reasoning Models"
    assert paper.decision == "Withdrawn (Treated as Reject)" and paper.decision_class == "withdrawn"
    assert paper.avg_score == 2.67
    assert paper.abstract.startswith("Large Reasoning Models (LRMs)") and paper.abstract.endswith("Code will be open-sourced.")
    assert [(r.rating, r.confidence, r.soundness, r.presentation, r.contribution) for r in paper.reviews] == [
        (2, 3, 2, 2, 2),
        (2, 4, 1, 2, 1),
        (4, 2, 2, 2, 2),
    ]
    r2 = paper.reviews[1]
    assert r2.summary.startswith("The paper proposes LeaP")
    assert r2.strengths.startswith("* LeaP introduces a simple method")
    assert "lack of novelty" in r2.weaknesses
    assert r2.questions.startswith("* Unless I have missed it")
    assert not r2.questions.rstrip().endswith("---")


def test_paper_id_is_the_benchmark_idea_id_of_the_same_title() -> None:
    import polars as pl

    from novelty_audit.datasets import load_dataset
    from novelty_audit.params import load_params

    pin = load_params(REPO / "params.yaml").pin.datasets["human-only"]
    ideas = load_dataset("human-only", pin.model_copy(update={"path": str(REPO / pin.path)})).ideas
    row = ideas.filter(pl.col("title") == "Learning from Peers in Reasoning Models")
    assert row["idea_id"][0] == paper_id_for("Learning from  Peers in Reasoning Models ")


def test_markdown_review_with_a_bad_rating_is_named_and_excluded(tmp_path: Path) -> None:
    text = PEERS.read_text(encoding="utf-8").replace("### Rating Number\n4\n", "### Rating Number\nfour\n")
    text = text.replace("### Rating\n4\n", "### Rating\nfour\n")
    bad = tmp_path / "peers.md"
    bad.write_text(text, encoding="utf-8")
    paper, problems = parse_markdown_reviews(bad, label="peers.md")
    assert paper is not None and len(paper.reviews) == 2
    (p,) = problems
    assert (p.file, p.record, p.field, p.action) == ("peers.md", "Human Reviewer 3", "Rating", "review-excluded")
    assert "four" in p.reason


def test_markdown_without_title_excludes_the_paper(tmp_path: Path) -> None:
    bad = tmp_path / "x.md"
    bad.write_text("no heading here\n", encoding="utf-8")
    paper, problems = parse_markdown_reviews(bad, label="x.md")
    assert paper is None
    assert [(p.record, p.field, p.action) for p in problems] == [("paper", "title", "paper-excluded")]


def test_openreview_dump_gives_area_decision_and_official_reviews_only() -> None:
    papers, problems = parse_openreview_dump(FIXTURE)
    assert problems == []
    by_title = {p.title: p for p in papers}
    assert len(by_title) == 9
    oral = by_title["Temporal Credit Graphs for Sparse-Reward Exploration"]
    assert oral.area == "reinforcement learning"
    assert oral.decision == "Accept (Oral)" and oral.decision_class == "accepted"
    assert [r.rating for r in oral.reviews] == [8, 8, 6]  # the author comment is not a review
    assert [r.contribution for r in oral.reviews] == [4, 3, 3]
    assert oral.reviews[0].reviewer.startswith("Reviewer_")
    assert by_title["Yet Another Ensemble of Q-Networks"].decision_class == "withdrawn"
    assert by_title["Revisiting Entropy Bonuses in PPO"].decision_class == "rejected"


def test_openreview_decision_falls_back_to_the_venue() -> None:
    assert classify_decision("ICLR 2026 Poster") == "accepted"
    assert classify_decision("ICLR 2026 Conference Withdrawn Submission") == "withdrawn"
    assert classify_decision("Submitted to ICLR 2026") == "unknown"
    assert classify_decision(None) == "unknown"


def _dump(tmp_path: Path, edit) -> Path:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    edit(data["notes"])
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_openreview_review_without_rating_is_named(tmp_path: Path) -> None:
    def edit(notes):
        del notes[0]["details"]["replies"][1]["content"]["rating"]

    papers, problems = parse_openreview_dump(_dump(tmp_path, edit), label="dump.json")
    (p,) = problems
    rid = json.loads(FIXTURE.read_text())["notes"][0]["details"]["replies"][1]["id"]
    assert (p.file, p.record, p.field, p.action) == ("dump.json", rid, "rating", "review-excluded")
    assert len(papers) == 9 and len(papers[0].reviews) == 2


def test_openreview_submission_without_replies_is_excluded(tmp_path: Path) -> None:
    def edit(notes):
        del notes[2]["details"]

    papers, problems = parse_openreview_dump(_dump(tmp_path, edit), label="dump.json")
    assert len(papers) == 8
    (p,) = problems
    assert (p.record, p.field, p.action) == ("Zc5mB1qY4e", "details.replies", "paper-excluded")
    assert "details=replies" in p.reason


def test_bad_records_stop_the_run_unless_exclusion_is_configured(tmp_path: Path) -> None:
    def edit(notes):
        notes[0]["details"]["replies"][0]["content"]["contribution"] = {"value": "n/a"}

    dump = _dump(tmp_path, edit)
    files = {"markdown": [], "openreview": [dump], "sentences": []}
    with pytest.raises(BadInputError) as err:
        build_signals(SignalsParams(benchmark_datasets=[]), files=files, benchmark={}, cache_root=tmp_path / "c", root=tmp_path)
    assert "dump.json: record" in str(err.value) and "field contribution" in str(err.value)
    out = build_signals(
        SignalsParams(benchmark_datasets=[], on_bad_record="exclude"), files=files, benchmark={}, cache_root=tmp_path / "c", root=tmp_path
    )
    assert out.exclusions.filter(out.exclusions["action"] == "review-excluded").height == 1
    assert out.reviews.height == 26
