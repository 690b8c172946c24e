"""Synthetic runs for the audit and report tests: pin + judge outputs written through the real store."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from novelty_audit.artifacts import StageResult, Store, digest_obj, digest_table, execute_stage, write_table

DATASET = "human-only"
TITLES = {"i-a": "Alpha", "i-b": "Beta", "i-c": "Gamma", "i-d": "Delta"}
PAIRS = {"p-ab": ("i-a", "i-b"), "p-cd": ("i-c", "i-d"), "p-ac": ("i-a", "i-c")}


@dataclass(frozen=True)
class World:
    """Everything a judge run depends on, plus the verdicts it gave."""

    texts: dict[str, str] = field(default_factory=lambda: {i: f"text of {t}" for i, t in TITLES.items()})
    configs: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "judge-x": {"backend": "openai", "model": "m-1", "prompt": "reference", "prompt_digest": "pd-1", "votes": 3,
                        "retrieval": {"enabled": False, "k": 5}},
        }
    )
    verdicts: dict[tuple[str, str], str] = field(
        default_factory=lambda: {("judge-x", "p-ab"): "i-a", ("judge-x", "p-cd"): "i-c", ("judge-x", "p-ac"): "tie"}
    )
    code: str = "code-1"
    provider_model: str = "m-1-2026-01"
    pairs: dict[str, tuple[str, str]] = field(default_factory=lambda: dict(PAIRS))

    def edit(self, **kw: Any) -> World:
        return replace(self, **kw)

    def with_verdict(self, judge: str, pair: str, verdict: str) -> World:
        return replace(self, verdicts={**self.verdicts, (judge, pair): verdict})

    def ideas_table(self) -> pl.DataFrame:
        return pl.DataFrame(
            [{"dataset": DATASET, "idea_id": i, "title": TITLES.get(i, i), "text": t, "text_digest": digest_obj(t)}
             for i, t in sorted(self.texts.items())]
        )

    def verdict_table(self) -> pl.DataFrame:
        rows = []
        for (judge, pair), verdict in sorted(self.verdicts.items()):
            if pair not in self.pairs:
                continue
            a, b = self.pairs[pair]
            parts = {"idea_0_text": digest_obj(self.texts[a]), "idea_1_text": digest_obj(self.texts[b])}
            cfg = digest_obj(self.configs[judge])
            ev = digest_obj(parts)
            rows.append(
                {
                    "dataset": DATASET, "judge": judge, "pair_id": pair, "idea_0": a, "idea_1": b,
                    "gold_idea_id": a, "verdict": verdict, "config_digest": cfg, "evidence_digest": ev,
                    "evidence_parts": orjson.dumps(parts, option=orjson.OPT_SORT_KEYS).decode(),
                    "code_digest": self.code,
                    "call_digests": [digest_obj([cfg, ev, k]) for k in range(3)],
                    "provider_model": self.provider_model, "cost_usd": 0.0, "latency_s": 0.0,
                }
            )
        return pl.DataFrame(rows)

    def judges_table(self) -> pl.DataFrame:
        return pl.DataFrame(
            [{"judge": j, "backend": c["backend"], "config_digest": digest_obj(c),
              "config": orjson.dumps(c, option=orjson.OPT_SORT_KEYS).decode()} for j, c in sorted(self.configs.items())]
        )


class Ledger:
    """Writes a World as pin and judge stage outputs (through execute_stage) and records a run."""

    def __init__(self, root: Path):
        self.root = root
        self.store = Store(root / ".novelty-audit")

    def _stage(self, name: str, tables: dict[str, pl.DataFrame], tag: Any):
        def compute(tmp: Path) -> StageResult:
            for rel, df in tables.items():
                write_table(tmp / rel, df)
            return StageResult(outputs={rel: None for rel in tables})

        return execute_stage(
            name, code_root="novelty_audit.errors", params={"tag": tag}, inputs=[],
            out_dir=self.root / "artifacts" / name, store=self.store, compute=compute, workdir=self.root, force=True,
        )

    def write(self, world: World):
        """Write the stage outputs (the `current` state) without recording a run."""
        # The tag stands in for the inputs: equal worlds have equal identities, like a forced rerun.
        tag = digest_obj([digest_table(world.ideas_table()), digest_table(world.verdict_table()), digest_table(world.judges_table())])
        pin = self._stage("pin", {f"{DATASET}/ideas.parquet": world.ideas_table()}, tag)
        judge = self._stage("judge", {"verdicts.parquet": world.verdict_table(), "judges.parquet": world.judges_table()}, tag)
        return {"pin": pin, "judge": judge}

    def record(self, world: World) -> str:
        return self.store.record_run(self.write(world)).run_id
