"""`dvc exp run -S judge.seed=7` on a clone: DVC rewrites params.yaml through its own YAML round trip, runs the
pipeline, and `dvc exp show --json` lists the experiment with the changed param and its metrics.

The project is the small copy of tests/tiny_project.py, with params.yaml in the shipped file's own formatting (the
shipped text with only the cut files' pins and the sizes replaced): what DVC's round trip meets is what a clone has."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from project_copy import REPO, init_git_dvc
from tiny_project import BOOTSTRAP, PROBE_PAIRS, make_tiny_project

from novelty_audit.config import safe_load_unique

pytestmark = pytest.mark.slow


def _sh(*cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(cwd)}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800)


def shipped_text_with_tiny_values(tiny_params: Path) -> str:
    """The shipped params.yaml text, its pins and sizes replaced by the small project's (checked equal after)."""
    text = (REPO / "params.yaml").read_text()
    shipped = yaml.safe_load(text)
    tiny = yaml.safe_load(tiny_params.read_text())
    for name, pin in shipped["pin"]["datasets"].items():
        text = text.replace(pin["sha256"], tiny["pin"]["datasets"][name]["sha256"])
    text = re.sub(r"(?m)^(  pairs: )\d+", rf"\g<1>{PROBE_PAIRS}", text)
    text = re.sub(r"(?m)^(  bootstrap_resamples: )\d+", rf"\g<1>{BOOTSTRAP}", text)
    text = re.sub(r"(?m)^(  progress: )true", r"\g<1>false", text)
    assert safe_load_unique(text) == tiny, "the shipped text no longer maps onto the small project's params"
    return text


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    root = make_tiny_project(tmp_path_factory.mktemp("exp") / "project")
    (root / "params.yaml").write_text(shipped_text_with_tiny_values(root / "params.yaml"))
    init_git_dvc(root, _sh)
    return root, _sh("dvc", "exp", "run", "-S", "judge.seed=7", "-n", "seed-7", cwd=root)


def test_dvc_exp_run_with_a_changed_seed_succeeds(experiment):
    root, run = experiment
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert safe_load_unique((root / "params.yaml").read_text())["judge"]["seed"] == 7


def test_dvc_exp_show_lists_the_experiment_with_its_param_and_metrics(experiment):
    root, _ = experiment
    shown = _sh("dvc", "exp", "show", "--json", cwd=root)
    assert shown.returncode == 0, shown.stderr
    exps = [e for rev in json.loads(shown.stdout) for e in (rev.get("experiments") or [])]
    named = [run for e in exps if e.get("name") == "seed-7" for run in e["revs"]]
    assert named, shown.stdout[:2000]
    data = named[0]["data"]
    assert data["params"]["params.yaml"]["data"]["judge"]["seed"] == 7
    metrics = data["metrics"]
    assert {"reports/metrics/human-only/random.json", "reports/metrics/human-plus-generated/random.json"} <= set(metrics)
    assert 0.0 <= metrics["reports/metrics/human-only/random.json"]["data"]["strict_accuracy"] <= 1.0
