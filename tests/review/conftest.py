"""Two synthetic runs (tests/synthetic_runs.py) for the review page. Between them:
- the text of Gamma (i-c) is edited: judge-x flips p-cd and p-ac (evidence, one group of two changes);
- the text of Beta (i-b) is edited: judge-x flips p-ab (evidence, a group of one);
- judge-y's model changes: judge-y flips p-ab (config, not adjudicable);
- a near-paraphrase of Alpha enters the prior-work corpus: the distance judge judge-yin flips p-ad (evidence,
  with the entering document as decisive evidence and the scores before and after).
`many_runs` builds the page at real size: 500 evidence changes in groups of 7, and 3 config changes."""

from __future__ import annotations

import re
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from synthetic_runs import PAIRS, Ledger, World

from novelty_audit.artifacts import digest_obj

PARAMS = """
store: {root: .novelty-audit, artifacts: artifacts}
pin: {datasets: {}}
audit: {adjudications: data/adjudications.csv}
"""

JUDGE_Y = {"backend": "openai", "model": "m-1", "prompt": "reference", "prompt_digest": "pd-1", "votes": 3,
           "retrieval": {"enabled": False, "k": 5}}


YIN = {"backend": "distance-yin", "corpus": "data/prior-work.parquet", "model": "minilm"}
NEIGHBOUR = {"slot": "idea_0", "rank": 0, "doc_id": "w-17", "digest": digest_obj("Alpha-like work"), "title": "Learning Alpha from scratch",
             "year": 2023, "similarity": 0.612, "source": "corpus"}
PARAPHRASE = {**NEIGHBOUR, "doc_id": "w-99", "digest": digest_obj("paraphrase"), "title": "A near-paraphrase of Alpha",
              "year": 2024, "similarity": 0.941}


@dataclass(frozen=True)
class DistanceWorld(World):
    """A World whose judges may rest on prior-work documents (the `evidence_docs` column) and report scores."""

    docs: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    scores: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)

    def verdict_table(self) -> pl.DataFrame:
        rows = super().verdict_table().to_dicts()
        for r in rows:
            key = (r["judge"], r["pair_id"])
            docs = self.docs.get(key, [])
            r["evidence_docs"] = orjson.dumps(docs, option=orjson.OPT_SORT_KEYS).decode()
            r["score_0"], r["score_1"] = self.scores.get(key, (None, None))
            if docs:
                parts = {**orjson.loads(r["evidence_parts"]), "idea_0_neighbours": digest_obj(docs)}
                r["evidence_parts"] = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS).decode()
                r["evidence_digest"] = digest_obj(parts)
        return pl.DataFrame(rows)


def two_runs(root: Path) -> Ledger:
    """Record `before` then `after` in a fresh ledger under `root` and write params.yaml there."""
    ledger = Ledger(root)
    (root / "params.yaml").write_text(PARAMS)
    before = DistanceWorld(
        configs={**World().configs, "judge-y": JUDGE_Y, "judge-yin": YIN},
        verdicts={**World().verdicts, ("judge-y", "p-ab"): "i-a", ("judge-y", "p-cd"): "i-c", ("judge-yin", "p-ad"): "i-a"},
        pairs={**PAIRS, "p-ad": ("i-a", "i-d")},
        docs={("judge-yin", "p-ad"): [NEIGHBOUR]},
        scores={("judge-yin", "p-ad"): (0.388, 0.301)},
    )
    after = (
        before.edit(texts={**before.texts, "i-c": "text of Gamma, rewritten to say what it adds",
                           "i-b": "text of Beta, with its method spelled out"},
                    configs={**before.configs, "judge-y": {**JUDGE_Y, "model": "m-2"}})
        .with_verdict("judge-x", "p-cd", "i-d")
        .with_verdict("judge-x", "p-ac", "i-a")
        .with_verdict("judge-x", "p-ab", "i-b")
        .with_verdict("judge-y", "p-ab", "i-b")
        .with_verdict("judge-yin", "p-ad", "i-d")
        .edit(docs={("judge-yin", "p-ad"): [PARAPHRASE]}, scores={("judge-yin", "p-ad"): (0.059, 0.301)})
    )
    ledger.record(before)
    ledger.record(after)
    return ledger


def many_runs(root: Path, n: int = 500, per_group: int = 7) -> Ledger:
    """Two runs with `n` evidence changes of judge-x in groups of `per_group` (each group: one edited idea shared by
    its pairs) and 3 config changes of judge-y (not adjudicable): the page at real size and beyond."""
    ledger = Ledger(root)
    (root / "params.yaml").write_text(PARAMS)
    pairs = {f"p-{k:03d}": (f"i-a{k // per_group:02d}", f"i-b{k:03d}") for k in range(n)}
    texts = {i: f"text of {i}" for ideas in pairs.values() for i in ideas}
    verdicts = {("judge-x", p): a for p, (a, _) in pairs.items()}
    verdicts.update({("judge-y", p): pairs[p][0] for p in list(pairs)[:3]})
    before = World(texts=texts, configs={**World().configs, "judge-y": JUDGE_Y}, verdicts=verdicts, pairs=pairs)
    after = before.edit(
        texts={i: t + ", rewritten" if i.startswith("i-a") else t for i, t in texts.items()},
        configs={**before.configs, "judge-y": {**JUDGE_Y, "model": "m-2"}},
        verdicts={key: pairs[key[1]][1] for key in verdicts},
    )
    ledger.record(before)
    ledger.record(after)
    return ledger


@pytest.fixture
def big_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with 500 evidence changes (72 groups) and 3 config changes; the working directory for the test."""
    many_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory with two recorded runs; the working directory for the test."""
    two_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


class Served:
    """`novelty-audit review --port 0` running in a project directory."""

    def __init__(self, root: Path, *extra: str) -> None:
        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "novelty_audit.cli", "review", "--port", "0", *extra],
            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.url = self._wait_for_url(timeout=60)

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        # selectors, not select.select: late in a long test session the pipe's fd may be above FD_SETSIZE (1024).
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if sel.select(timeout=0.5):
                    line = self.proc.stdout.readline()
                    match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
                    if match:
                        return match.group(1)
                if self.proc.poll() is not None:
                    raise AssertionError(f"review server exited {self.proc.returncode}: {self.proc.stderr.read()[-2000:]}")
        self.stop()
        raise AssertionError("review server printed no URL within the timeout")

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].strip("/"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@pytest.fixture
def served(project: Path):
    server = Served(project)
    yield server
    server.stop()


@pytest.fixture
def big_served(big_project: Path):
    """The review server over the 500-change project."""
    server = Served(big_project)
    yield server
    server.stop()
