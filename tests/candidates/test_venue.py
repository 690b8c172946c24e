"""A new venue from reviews: an OpenReview API v2 dump (a small synthetic one, written here) goes through signals →
pools with the published rules, and the pools stage's D+ / D- pairs are judged as the dataset
`constructed-human-only`, with accuracy like a pinned split."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from novelty_audit.artifacts import read_json
from novelty_audit.pipeline import run_stage

pytestmark = pytest.mark.slow  # runs five stages

REPO = Path(__file__).resolve().parents[2]
VENUE = "NeurIPS.cc/2027/Conference"
AREAS = {"reinforcement learning": ["credit graphs", "reward sketches", "option discovery"],
         "generative models": ["noise schedules", "guidance distillation", "latent flows"]}  # fmt: skip


def _review(n: int, rating: int, contribution: int, strengths: str, weaknesses: str) -> dict:
    v = lambda x: {"value": x}  # noqa: E731
    return {"id": f"r{n}", "invitations": [f"{VENUE}/Submission{n}/-/Official_Review"], "content": {
        "summary": v("The paper studies a method."), "strengths": v(strengths), "weaknesses": v(weaknesses),
        "rating": v(rating), "contribution": v(contribution), "confidence": v(4), "soundness": v(3), "presentation": v(3)}}  # fmt: skip


def _paper(number: int, area: str, topic: str, accepted: bool) -> dict:
    title = f"{'Learning' if accepted else 'Revisiting'} {topic.title()} for {area.title()}"
    abstract = f"We {'introduce' if accepted else 'revisit'} {topic} for {area}, a {'new' if accepted else 'known'} approach."
    if accepted:
        reviews = [_review(number * 10 + i, 8, 4 - i, f"- The idea of {topic} is novel.", "- The compute cost is not reported.") for i in range(2)]
        decision = "Accept (Poster)"
    else:
        reviews = [_review(number * 10 + i, 2, 1 + i, "- Clearly written.", f"- The novelty is limited: {topic} is well known.") for i in range(2)]
        decision = "Reject"
    replies = reviews + [{"id": f"d{number}", "invitations": [f"{VENUE}/Submission{number}/-/Decision"], "content": {"decision": {"value": decision}}}]
    return {"id": f"n{number}", "forum": f"n{number}", "number": number, "invitations": [f"{VENUE}/-/Submission"],
            "content": {"title": {"value": title}, "abstract": {"value": abstract}, "primary_area": {"value": area},
                        "venueid": {"value": VENUE if accepted else f"{VENUE}/Rejected_Submission"}},
            "details": {"replies": replies}}  # fmt: skip


def write_dump(path: Path) -> Path:
    notes, n = [], 1
    for area, topics in AREAS.items():
        for topic in topics:
            for accepted in (True, False):
                notes.append(_paper(n, area, topic, accepted))
                n += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"notes": notes, "count": len(notes)}, indent=1), encoding="utf-8")
    return path


def test_a_dump_of_a_new_venue_becomes_d_plus_d_minus_pairs_that_the_judge_stage_judges(project: Path) -> None:
    for sub in ("raw-reviews", "review-sentences", "prior-work"):
        shutil.copytree(REPO / "data" / sub, project / "data" / sub)
    for p in (project / "data").rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    dump = write_dump(Path("data/openreview/venue.json"))
    raw = yaml.safe_load(Path("params.yaml").read_text())
    raw["signals"]["openreview"] = [{"path": dump.as_posix(), "sha256": hashlib.sha256(dump.read_bytes()).hexdigest()}]
    raw["signals"].update(markdown=[], markdown_dir=None, markdown_index=None)  # only the new venue's reviews
    raw["pools"]["percentile"] = {"top": 50, "bottom": 50, "method": "linear"}
    raw["judge"].update(datasets=["constructed-human-only"], probe_datasets=[], tasks=["pairwise"], progress=False)
    raw["judge"]["judges"] = {k: v for k, v in raw["judge"]["judges"].items() if v["backend"] in ("always-first", "random")}
    raw["judge"]["judges"]["distance-knn-tfidf"] = {"backend": "distance-knn", "args": {"corpus": "data/prior-work", "embedder": "tfidf", "k": 10}}
    Path("params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
    dvc = yaml.safe_load(Path("dvc.yaml").read_text())
    dvc["stages"]["signals"]["deps"].append("data/openreview")
    Path("dvc.yaml").write_text(yaml.safe_dump(dvc, sort_keys=False))

    for name in ("pin", "signals", "pools", "judge", "metrics"):
        run_stage(name)

    info = read_json("artifacts/pools/datasets.json")["constructed-human-only"]
    assert info["kind"] == "gold" and info["pairs"] == 6  # each accepted paper meets a rejected one of its area
    pairs = pl.read_parquet("artifacts/pools/datasets/constructed-human-only/pairs.parquet")
    pool = pl.read_parquet("artifacts/pools/pool.parquet")
    dplus = set(pool.filter(pl.col("pool") == "D+")["paper_id"].to_list())
    assert set(pairs["gold_idea_id"].to_list()) == dplus and len(dplus) == 6
    verdicts = pl.read_parquet("artifacts/judge/verdicts.parquet")
    assert set(verdicts["dataset"].unique().to_list()) == {"constructed-human-only"}
    assert verdicts.filter(pl.col("judge") == "distance-knn-tfidf").height == 6
    m = read_json("artifacts/metrics/metrics.json")["constructed-human-only"]["distance-knn-tfidf"]
    got = verdicts.filter(pl.col("judge") == "distance-knn-tfidf")
    assert m["strict_accuracy"] == pytest.approx((got["verdict"] == got["gold_idea_id"]).sum() / 6)
