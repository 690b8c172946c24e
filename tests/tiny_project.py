"""A small copy of the project for pipeline tests: the real code, dvc.yaml, prompts, params.yaml and data files,
with each benchmark split cut to its first pairs, NovBench to its first papers, the probe to a few pairs and the
bootstrap to a few resamples. Every cut file is re-pinned (its sha256 in params.yaml), so the stages, their
identities, DVC deps and judges are the shipped ones; only sizes move. The prior-work corpus stays whole: the
shipped MiniLM vectors are stored per corpus shard, and a cut corpus would have to be embedded.

What scales with the data (judging every pair, embedding texts the shipped vectors lack, a 10,000-resample
bootstrap over every judge pair) shrinks; what is paid per process (imports, DVC) does not."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import yaml
from project_copy import REPO, ignore_run_state

PAIRS = 12
"""Pairs kept per benchmark split (their first, by file order)."""
NOVBENCH_PAPERS = 4
PROBE_PAIRS = 4
BOOTSTRAP = 200

SHARED_PAIR_DATASETS = ["human-plus-generated-gpt-5.4", "human-plus-generated-gpt-5.1"]
"""Two splits whose first PAIRS pairs share 10 pair ids: fan-out tests judge these, so that a pair id in both
datasets must stay in one chunk (the shipped judge.datasets, human-only and human-plus-generated, share none)."""

_TOP_KEY = re.compile(r"^\S[^\n]*:\s*$", re.M)


def first_entries(yaml_text: str, n: int) -> str:
    """The first `n` top-level entries of a YAML mapping, byte for byte (no re-dump: scalars keep their form)."""
    starts = [m.start() for m in _TOP_KEY.finditer(yaml_text)]
    if len(starts) <= n:
        return yaml_text
    return yaml_text[: starts[n]]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_tiny_project(root: Path) -> Path:
    """Copy the checkout's project files to `root` (no run state) and shrink them as the module says; returns root."""
    shutil.copytree(REPO, root, ignore=ignore_run_state)
    raw = yaml.safe_load((root / "params.yaml").read_text())
    for pin in raw["pin"]["datasets"].values():
        path = root / pin["path"]
        if pin["source"] == "yaml":
            path.write_text(first_entries(path.read_text(), PAIRS))
        elif pin["source"] == "novbench":
            path.write_text(json.dumps(json.loads(path.read_text())[:NOVBENCH_PAPERS], indent=1))
        pin["sha256"] = _sha256(path)
    raw["probe"]["pairs"] = PROBE_PAIRS
    raw["judge"]["progress"] = False
    raw["metrics"]["bootstrap_resamples"] = BOOTSTRAP
    _write_params(root, raw)
    return root


def _write_params(root: Path, raw: dict) -> None:
    (root / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
