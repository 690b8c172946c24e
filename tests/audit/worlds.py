"""Synthetic runs with evidence documents, pointwise predictions and reviews (extends tests/synthetic_runs.py).

`DocWorld` is a `World` whose verdict rows carry `evidence_docs` (the neighbour sets a distance judge used) and
whose neighbour digests are part of `evidence_parts`, like the real distance judges; it can also hold pointwise
predictions and a NovBench-style reviews table. `TableLedger` records runs from explicit tables (for verdicts
produced by a real judge)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import polars as pl
from synthetic_runs import DATASET, Ledger, World

from novelty_audit.artifacts import StageResult, digest_obj, digest_table, execute_stage, write_table
from novelty_audit.judges import PAIRWISE_SCHEMA, POINTWISE_SCHEMA


def doc(doc_id: str, title: str, *, rank: int = 0, similarity: float | None = 0.9, year: int | None = 2021, slot: str = "idea_0",
        source: str = "corpus") -> dict[str, Any]:
    """One evidence_docs entry (docs/design/tables.md)."""
    return {"slot": slot, "rank": rank, "doc_id": doc_id, "digest": digest_obj([doc_id, title]), "title": title, "year": year,
            "similarity": similarity, "source": source}


def base_docs() -> dict[str, list[dict[str, Any]]]:
    """Every idea's nearest prior work before anything was added."""
    return {i: [doc(f"d-{i}", f"Prior work near {i}", similarity=0.5)] for i in ("i-a", "i-b", "i-c", "i-d")}


@dataclass(frozen=True)
class DocWorld(World):
    neighbours: dict[str, list[dict[str, Any]]] = field(default_factory=base_docs)
    """idea id → the documents its score rests on (slot filled per pair)."""
    scores: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    """(judge, pair) → (score_0, score_1)."""
    pointwise: dict[tuple[str, str], str] = field(default_factory=dict)
    """(judge, idea id) → POSITIVE | NEGATIVE."""
    reviews: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(generator, paper id) → (generated text, label counts)."""
    score_entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """idea id → the `role: score` evidence entry a distance judge records (its own density, corpus, embedder)."""

    def _docs(self, idea: str, slot: str) -> list[dict[str, Any]]:
        docs = [{**d, "slot": slot} for d in self.neighbours.get(idea, [])]
        if idea in self.score_entries:
            docs.append({"slot": slot, "rank": 0, "doc_id": "", "digest": "", "title": "", "year": None, "similarity": None,
                         "source": "judge", "role": "score", **self.score_entries[idea]})
        return docs

    def _parts(self, idea: str, prefix: str) -> dict[str, str]:
        return {f"{prefix}text": digest_obj(self.texts[idea]),
                f"{prefix}neighbours": digest_obj([[d["doc_id"], d["digest"], d.get("similarity"), d.get("density")] for d in self.neighbours.get(idea, [])]),
                **({f"{prefix}score": digest_obj(self.score_entries[idea])} if idea in self.score_entries else {})}

    def verdict_table(self) -> pl.DataFrame:
        rows = []
        for (judge, pair), verdict in sorted(self.verdicts.items()):
            if pair not in self.pairs:
                continue
            a, b = self.pairs[pair]
            parts = {**self._parts(a, "idea_0_"), **self._parts(b, "idea_1_")}
            cfg, ev = digest_obj(self.configs[judge]), digest_obj(parts)
            s0, s1 = self.scores.get((judge, pair), (0.5, 0.4))
            rows.append({
                "dataset": DATASET, "judge": judge, "pair_id": pair, "idea_0": a, "idea_1": b, "gold_idea_id": a,
                "verdict": verdict, "score_0": s0, "score_1": s1, "config_digest": cfg, "evidence_digest": ev,
                "evidence_parts": orjson.dumps(parts, option=orjson.OPT_SORT_KEYS).decode(), "code_digest": self.code,
                "call_digests": [digest_obj([cfg, ev, k]) for k in range(3)], "provider_model": self.provider_model,
                "cost_usd": 0.0, "evidence_titles": [],
                "evidence_docs": orjson.dumps(self._docs(a, "idea_0") + self._docs(b, "idea_1"), option=orjson.OPT_SORT_KEYS).decode(),
            })  # fmt: skip
        return pl.DataFrame(rows, schema={k: PAIRWISE_SCHEMA[k] for k in rows[0]}) if rows else pl.DataFrame(schema=PAIRWISE_SCHEMA)

    def pointwise_table(self) -> pl.DataFrame | None:
        if not self.pointwise:
            return None
        rows = []
        for (judge, idea), predicted in sorted(self.pointwise.items()):
            parts = self._parts(idea, "")
            rows.append({
                "dataset": DATASET, "judge": judge, "idea_id": idea, "gold_label": "POSITIVE", "predicted": predicted,
                "score": 0.5, "config_digest": digest_obj(self.configs.get(judge, {})), "evidence_digest": digest_obj(parts),
                "code_digest": self.code, "evidence_docs": orjson.dumps(self._docs(idea, "idea"), option=orjson.OPT_SORT_KEYS).decode(),
            })  # fmt: skip
        return pl.DataFrame(rows, schema={k: POINTWISE_SCHEMA[k] for k in rows[0]})

    def reviews_table(self) -> pl.DataFrame | None:
        if not self.reviews:
            return None
        rows = []
        for (gen, paper), (text, counts) in sorted(self.reviews.items()):
            parts = {"novelty_sentences": digest_obj(["sentences", paper]), "retrieved": digest_obj(["retrieved", paper])}
            rows.append({
                "dataset": "novbench", "judge": gen, "paper_id": paper, "title": f"Paper {paper}", "text": text,
                "items": orjson.dumps([{"label": "positive", "text": text}]).decode(), "valid": True, "label_counts": counts,
                "config_digest": digest_obj(self.configs.get(gen, {})), "evidence_digest": digest_obj(parts),
                "evidence_parts": orjson.dumps(parts, option=orjson.OPT_SORT_KEYS).decode(), "code_digest": self.code,
                "provider_model": None, "call_digests": [], "cost_usd": 0.0,
            })  # fmt: skip
        return pl.DataFrame(rows)


class DocLedger(Ledger):
    """A Ledger that also writes pointwise.parquet and reviews.parquet when the world has them."""

    def write(self, world: World):
        assert isinstance(world, DocWorld)
        judge_tables = {"verdicts.parquet": world.verdict_table(), "judges.parquet": world.judges_table()}
        for name, df in (("pointwise.parquet", world.pointwise_table()), ("reviews.parquet", world.reviews_table())):
            if df is not None:
                judge_tables[name] = df
        return self.write_tables(world.ideas_table(), judge_tables)

    def write_tables(self, ideas: pl.DataFrame, judge_tables: dict[str, pl.DataFrame], dataset: str = DATASET):
        tag = digest_obj([digest_table(ideas), *[digest_table(df) for _, df in sorted(judge_tables.items())]])
        pin = self._stage("pin", {f"{dataset}/ideas.parquet": ideas}, tag)
        judge = self._stage("judge", judge_tables, tag)
        return {"pin": pin, "judge": judge}

    def record_tables(self, ideas: pl.DataFrame, judge_tables: dict[str, pl.DataFrame], dataset: str = DATASET) -> str:
        return self.store.record_run(self.write_tables(ideas, judge_tables, dataset)).run_id

    def record_stages(self, stages: dict[str, tuple[dict[str, pl.DataFrame], dict[str, Any]]]) -> str:
        """Record a run of the given stages: name → ({relative path: table}, manifest summary)."""
        tag = digest_obj({name: [[rel, digest_table(df)] for rel, df in sorted(tables.items())] + [summary]
                          for name, (tables, summary) in sorted(stages.items())})

        def stage(name: str, tables: dict[str, pl.DataFrame], summary: dict[str, Any]):
            def compute(tmp: Path) -> StageResult:
                for rel, df in tables.items():
                    write_table(tmp / rel, df)
                return StageResult(outputs={rel: None for rel in tables}, summary=summary)

            return execute_stage(name, code_root="novelty_audit.errors", params={"tag": tag}, inputs=[],
                                 out_dir=self.root / "artifacts" / name, store=self.store, compute=compute,
                                 workdir=self.root, force=True)

        return self.store.record_run({name: stage(name, *spec) for name, spec in stages.items()}).run_id


PARAMS = """
store: {root: .novelty-audit, artifacts: artifacts}
pin: {datasets: {}}
audit: {adjudications: data/adjudications.csv}
report: {publish_dir: reports}
"""


def write_params(root: Path) -> Path:
    (root / "params.yaml").write_text(PARAMS)
    return root / "params.yaml"
