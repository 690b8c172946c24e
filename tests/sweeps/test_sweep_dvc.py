"""Issue 29's sweep through `dvc repro` on a tiny project copy: a mock API judge swept over prompts reference / p3 /
p4 × votes 1 / 3 (one-at-a-time). reports/sweeps.json's disagreement rates (against the base and between every two
judges) equal a direct count from verdicts.parquet; editing one knob of the base (its prompt) and reproducing again
asks the mock only the calls of the judges that inherit it (the rest are cache hits), and the audit between the two
runs calls those changes `config`, naming the knob. One repro and one rerun, on one dataset's first few pairs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections import Counter
from itertools import combinations
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml
from mock_llm import MockLLM
from project_copy import init_git_dvc
from test_sweep_run import BASE, VARIANTS, by_prompt_hash
from tiny_project import make_tiny_project

DATASET = "human-only"
LIMIT = 5
PROMPT_VARIANTS = ("prompts/prompt=reference-v1", "prompts/prompt=p3-v1", "prompts/prompt=p4-v1")
INHERITING = (BASE, "prompts/votes=1", "prompts/votes=3")
"""Judges that take the base's prompt: the ones an edit of it re-asks."""


def _sh(*cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    # The copy's own code runs (PYTHONPATH): the code DVC hashes as deps is the code the stages run.
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(cwd), "MOCK_API_KEY": "sk-test-sweep-dvc"}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800, check=False)


def _configure(root: Path, mock: MockLLM, base_prompt: str) -> None:
    raw = yaml.safe_load((root / "params.yaml").read_text())
    raw["judge"] = {
        "datasets": [DATASET], "tasks": ["pairwise"], "progress": False, "limit": LIMIT,
        "judges": {BASE: {"backend": "openai", "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY",
                                                        "prompt": base_prompt, "votes": 3, "concurrency": 16}}},
        "sweeps": {"prompts": {"base": BASE, "mode": "one-at-a-time", "vary": {"prompt": ["reference-v1", "p3-v1", "p4-v1"], "votes": [1, 3]}}},
    }  # fmt: skip
    raw["probe"]["datasets"] = [DATASET]  # the probe stage still runs (a DVC stage); no judge is asked its pairs
    (root / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def _body_key(body: dict) -> str:
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    root = make_tiny_project(tmp_path_factory.mktemp("sweep-dvc") / "project")
    with MockLLM(answer=by_prompt_hash) as mock:
        _configure(root, mock, "reference-v1")
        init_git_dvc(root, _sh)
        first = _sh("dvc", "repro", cwd=root)
        assert first.returncode == 0, first.stdout + first.stderr
        before = {"verdicts": pl.read_parquet(root / "artifacts/judge/verdicts.parquet"),
                  "sweeps": json.loads((root / "reports/sweeps.json").read_text()), "asked": mock.count}
        _configure(root, mock, "p5-v1")  # one knob of the base: its prompt
        second = _sh("dvc", "repro", cwd=root)
        assert second.returncode == 0, second.stdout + second.stderr
        new = [r.body for r in mock.requests[before["asked"]:]]
    audit = _sh("novelty-audit", "audit", "--json", cwd=root)
    assert audit.returncode == 0, audit.stderr
    return root, before, new, second, json.loads(audit.stdout)


def test_sweeps_json_from_dvc_repro_holds_every_variant_and_disagreement_equals_a_direct_count(runs):
    root, before, *_ = runs
    v, report = before["verdicts"], before["sweeps"]
    rows = report[DATASET]["prompts"]
    assert sorted(k for k in rows if k != "_sweep") == sorted(VARIANTS)
    verdicts = {j: dict(zip(g["pair_id"].to_list(), g["verdict"].to_list()))
                for (j,), g in v.filter(pl.col("dataset") == DATASET).group_by("judge")}
    assert sorted(verdicts) == sorted([BASE, *VARIANTS]) and all(len(x) == LIMIT for x in verdicts.values())

    def differ(a: str, b: str) -> float:
        return sum(verdicts[a][p] != verdicts[b][p] for p in verdicts[a]) / LIMIT

    for vid in VARIANTS:
        assert rows[vid]["n_items"] == LIMIT
        assert rows[vid]["disagreement_rate"] == pytest.approx(differ(BASE, vid)), vid
        assert rows[vid]["disagreement_rate_ci_low"] <= rows[vid]["disagreement_rate"] <= rows[vid]["disagreement_rate_ci_high"]
    matrix = rows["_sweep"]["disagreement_matrix"]
    for a, b in combinations(sorted(verdicts), 2):
        assert matrix[a][b] == matrix[b][a] == pytest.approx(differ(a, b)), (a, b)
    assert any(matrix[BASE][p] > 0 for p in PROMPT_VARIANTS[1:]), "other wordings must disagree somewhere (the mock answers by prompt hash)"
    # `dvc metrics show` lists every variant as a headline row of its own; sweeps.json (an output, not a declared DVC
    # metric: its columns would widen every row) is read when named. The report's instability section renders it.
    shown = _sh("dvc", "metrics", "show", "--json", cwd=root)
    assert shown.returncode == 0, shown.stderr
    headline = json.loads(shown.stdout)[""]["data"]
    assert all(f"reports/metrics/{DATASET}/{vid}.json" in headline for vid in verdicts), sorted(headline)
    named = _sh("dvc", "metrics", "show", "--json", "reports/sweeps.json", cwd=root)
    assert named.returncode == 0 and "disagreement_rate" in named.stdout, named.stderr
    html = (root / "reports/report.html").read_text()
    assert 'id="sweep-table-human-only-prompts"' in html and 'id="sweep-disagreement-human-only-prompts"' in html


def test_editing_the_bases_prompt_reasks_only_the_judges_that_inherit_it_and_the_audit_names_the_knob(runs):
    root, before, new, second, audit = runs
    assert "Running stage 'judge'" in second.stdout
    p5 = (root / "novelty_audit/prompts/pairwise-p5-v1.txt").read_text()
    marker = next(line for line in p5.splitlines() if len(line) > 40 and "{{" not in line and "[" not in line)
    texts = ["\n".join(str(m.get("content")) for m in b["messages"]) for b in new]
    assert new and all(marker in t for t in texts), "only the new wording is sent: the prompt variants are cache hits"
    # Only the base's own calls, once each (its votes=3 twin shares them, votes=1 reuses the first vote): every item in
    # both orders, each asked three times (a vote's body is the same; the mock tells them apart by arrival).
    asked = Counter(_body_key(b) for b in new)
    assert len(asked) == LIMIT * 2 and set(asked.values()) == {3}
    after = pl.read_parquet(root / "artifacts/judge/verdicts.parquet")
    cols = ["pair_id", "verdict", "config_digest", "call_digests"]
    for vid in PROMPT_VARIANTS:
        old = before["verdicts"].filter(pl.col("judge") == vid).select(cols).sort("pair_id")
        assert after.filter(pl.col("judge") == vid).select(cols).sort("pair_id").equals(old), vid
    config = [c for c in audit["changes"] if c["cause"] == "config"]
    assert config, "the new wording must move some verdict"
    assert {c["judge"] for c in config} <= set(INHERITING)
    for c in config:
        knobs = {k["name"]: (k["before"], k["after"]) for k in c["knobs"]}
        assert knobs.get("prompt") == ("reference-v1", "p5-v1"), c["knobs"]
    assert not any(c["judge"] in PROMPT_VARIANTS for c in audit["changes"])
