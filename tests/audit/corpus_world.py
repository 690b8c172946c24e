"""The default distance judges on benchmark ideas and a slice of the default prior-work corpus, recorded as runs.

`CorpusWorld` judges the first pairs of `data/novelty-judge-bench/human-only` (pairwise, and their ideas
pointwise) with the four distance judges of the shipped params.yaml (MiniLM Yin/kNN/RND and TF-IDF kNN, their
args as shipped; only the corpus path is the test's) and records pin + judge outputs through `DocLedger`, so
`novelty-audit audit` compares real verdict tables. A run may judge a subset (`limit`), recorded in the judge
manifest summary as the judge stage does."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml
from worlds import DocLedger

from novelty_audit.artifacts import digest_obj
from novelty_audit.judges import PAIRWISE_SCHEMA, POINTWISE_SCHEMA, Idea, JudgeParams, PairItem, PointItem, build_judges
from novelty_audit.judges._base import judges_row

REPO = Path(__file__).resolve().parents[2]
DATASET = "human-only"
CORPUS = REPO / "data/prior-work/llm-paper-abstracts.json"


def default_distance_judges(*, tfidf_only: bool = False) -> dict[str, dict[str, Any]]:
    """The distance judges of the shipped params.yaml (backend and args as shipped)."""
    raw = yaml.safe_load((REPO / "params.yaml").read_text())["judge"]["judges"]
    out = {name: dict(cfg) for name, cfg in raw.items() if str(cfg.get("backend", "")).startswith("distance-")}
    assert out, "params.yaml has no distance judge"
    for cfg in out.values():
        # The shipped vectors' path is relative to the repository; the world runs elsewhere.
        if cfg["args"].get("vectors"):
            cfg["args"] = {**cfg["args"], "vectors": {**cfg["args"]["vectors"], "path": str(REPO / cfg["args"]["vectors"]["path"])}}
    if tfidf_only:
        out = {n: c for n, c in out.items() if c["args"].get("embedder") == "tfidf"}
    return out


def bench_items(n_pairs: int) -> tuple[list[PairItem], list[PointItem]]:
    """The first `n_pairs` benchmark pairs (by source key) and their ideas as pointwise items (gold from the
    reviews' type)."""
    raw = yaml.safe_load((REPO / f"data/novelty-judge-bench/{DATASET}/pairwise.yaml").read_text())
    pairs, points = [], []
    for key in sorted(raw, key=str)[:n_pairs]:
        r = raw[key]
        ideas = [Idea(f"i-{key}-{s}", str(r["metadata"][s]["title"]), str(r["ideas"][s]), digest_obj(str(r["ideas"][s])))
                 for s in (0, 1)]
        pairs.append(PairItem(DATASET, f"p-{key}", ideas[0], ideas[1], ideas[int(r["expected_winners"][0])].idea_id))
        points += [PointItem(DATASET, i, str(r["metadata"][s]["type"])) for s, i in enumerate(ideas)]
    return pairs, points


def corpus_slice(n_docs: int) -> list[dict[str, Any]]:
    """The first `n_docs` records of the default corpus, as shipped."""
    return json.loads(CORPUS.read_text())[:n_docs]


@dataclass
class CorpusWorld:
    """A project with a corpus file whose content each run sets, judged by the default distance judges."""

    ledger: DocLedger
    corpus: Path
    judges: dict[str, dict[str, Any]]

    def run(self, records: list[dict[str, Any]], pairs: list[PairItem], points: list[PointItem], *,
            limit: int | None = None) -> str:
        """Judge with the corpus holding `records` (same path: only the evidence moves); `limit`: judge only
        the first `limit` pairs and their ideas, the rest listed in the manifest's `subset` summary. Returns the run id."""
        self.corpus.write_text(json.dumps(records))
        cfg = {n: {**c, "args": {**c["args"], "corpus": str(self.corpus)}} for n, c in self.judges.items()}
        jp = JudgeParams.model_validate({"tasks": ["pairwise", "pointwise"], "progress": False, "judges": cfg})
        built = build_judges(jp, store_root=self.ledger.root / "store").judges
        judged_pairs = pairs if limit is None else pairs[:limit]
        chosen = {i.idea_id for p in judged_pairs for i in p.ideas}
        judged_points = [pt for pt in points if pt.idea.idea_id in chosen]
        rows_p, rows_q = [], []
        for judge in built:
            out = judge.judge(judged_pairs, judged_points)
            rows_p += out.pairwise
            rows_q += out.pointwise
        ideas = {i.idea_id: i for p in pairs for i in p.ideas}
        idea_table = pl.DataFrame([{"dataset": DATASET, "idea_id": i.idea_id, "title": i.title, "text": i.text,
                                    "text_digest": i.text_digest} for i in ideas.values()]).sort("idea_id")
        tables = {"verdicts.parquet": pl.DataFrame(rows_p, schema=PAIRWISE_SCHEMA).sort("dataset", "judge", "pair_id"),
                  "pointwise.parquet": pl.DataFrame(rows_q, schema=POINTWISE_SCHEMA).sort("dataset", "judge", "idea_id"),
                  "judges.parquet": pl.DataFrame([judges_row(j) for j in built]).sort("judge")}
        summary = {} if limit is None else {"subset": {"limit": limit, "seed": 0, "datasets": {DATASET: {
            "pairs": len(judged_pairs), "of_pairs": len(pairs), "pointwise": len(judged_points)}}}}
        return self.ledger.record_stages({"pin": ({f"{DATASET}/ideas.parquet": idea_table}, {}), "judge": (tables, summary)})
