"""Fixtures for the Prefect flow tests: one ephemeral Prefect API per session, throw-away project copies."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from dvc_run import ok
from project_copy import REPO, ignore_run_state
from tiny_project import make_tiny_project


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[None]:
    """A temporary Prefect server (SQLite in a temp dir) for every flow run of the session.

    Start-up takes ~10-15 s on this machine; the timeout is generous for a loaded CI box.
    """
    from prefect.testing.utilities import prefect_test_harness

    # Telemetry writes race the harness's SQLite on start-up; it has nothing to tell here.
    old = os.environ.get("PREFECT_SERVER_ANALYTICS_ENABLED")
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    try:
        with prefect_test_harness(server_startup_timeout=180):
            yield
    finally:
        if old is None:
            os.environ.pop("PREFECT_SERVER_ANALYTICS_ENABLED", None)
        else:
            os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = old


def copy_project(dest: Path, *, tiny: bool = False) -> Path:
    """A copy of the repository's project files (no store, artifacts, dvc.lock or git) at `dest`; `tiny`: with the
    benchmark files cut to their first pairs (tests/tiny_project.py), for tests whose checks do not depend on sizes."""
    if tiny:
        make_tiny_project(dest)
    else:
        shutil.copytree(REPO, dest, ignore=ignore_run_state)
    # Embedding the prior-work corpus is slow and its cache is keyed by (model, text digest):
    # sharing it cannot change a result.
    cache = REPO / ".novelty-audit" / "cache" / "embeddings"
    if cache.exists():
        shutil.copytree(cache, dest / ".novelty-audit" / "cache" / "embeddings")
    return dest


CONTROL_BACKENDS = ("always-first", "always-second", "random", "abstain")


def without_embedding_judges(project: Path) -> Path:
    """Keep the control judges and the TF-IDF distance judge only.

    For tests about orchestration (flows, DVC, the ledger), not about what judges say: embedding the corpus
    with a sentence-transformers model takes minutes on a busy 2-core machine when the embedding cache is cold.
    """
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"]["judges"] = {
        k: v for k, v in raw["judge"]["judges"].items()
        if v.get("backend") in CONTROL_BACKENDS or (v.get("backend", "").startswith("distance-") and v.get("args", {}).get("embedder") == "tfidf")
    }  # fmt: skip
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return project


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A fresh copy of the project, not the cwd (flows take `project_dir`)."""
    return copy_project(tmp_path / "project")


@pytest.fixture
def make_project(tmp_path: Path):
    """A factory of project copies: `make_project("a")` → tmp_path/a."""
    return lambda name: copy_project(tmp_path / name)


@pytest.fixture
def make_tiny_project_copy(tmp_path: Path):
    """A factory of small project copies (benchmark files cut, see tests/tiny_project.py): `make_tiny_project_copy("a")`."""
    return lambda name: copy_project(tmp_path / name, tiny=True)


@pytest.fixture
def light_project(tmp_path: Path) -> Path:
    """A fresh small project copy with the control judges and the TF-IDF distance judge only (see
    without_embedding_judges): orchestration tests run every stage, often twice, and sizes do not change what they check."""
    return without_embedding_judges(copy_project(tmp_path / "project", tiny=True))


@pytest.fixture
def make_light_project(make_tiny_project_copy):
    """A factory of light small project copies: `make_light_project("a")` → tmp_path/a."""
    return lambda name: without_embedding_judges(make_tiny_project_copy(name))


def stage_digests(project: Path) -> dict[str, tuple[str, str, dict[str, str]]]:
    """Every dvc.yaml stage's (identity, manifest digest, output sha256 by path)."""
    import yaml

    from novelty_audit.artifacts import load_manifest

    out = {}
    for name in yaml.safe_load((project / "dvc.yaml").read_text())["stages"]:
        m = load_manifest(project / "artifacts" / name)
        out[name] = (m.identity, m.digest(), {r.path: r.sha256 for r in m.outputs})
    return out


class DvcAndFlow(NamedTuple):
    """Two light projects, both git + DVC repositories: one run by `dvc repro`, one by the `evaluate` flow."""

    by_dvc: Path
    by_flow: Path
    flow_summary: Any
    """The flow's run summary."""
    digests: dict[str, dict]
    """stage_digests of each ("dvc", "flow") right after its run (tests may change by_dvc afterwards)."""
    run_ids: dict[str, list[str]]
    """The ledger's run ids of each right after its run."""


@pytest.fixture(scope="session")
def dvc_and_flow(prefect_api, tmp_path_factory) -> DvcAndFlow:
    """The whole pipeline once by `dvc repro` and once by the flow, for the session: a full run of each is the
    costliest thing the flow tests do, and the flow-vs-DVC checks (tests/flows/test_evaluate_flow.py,
    test_dvc_consistency.py) all start from these two. Only test_dvc_consistency's first test changes `by_dvc`;
    the others read it through the snapshots taken here."""
    from flows.evaluate import evaluate
    from novelty_audit.artifacts import Store

    root = tmp_path_factory.mktemp("dvc-and-flow")
    by_dvc = without_embedding_judges(copy_project(root / "dvc", tiny=True))
    by_flow = without_embedding_judges(copy_project(root / "flow", tiny=True))
    for project in (by_dvc, by_flow):
        ok("git", "init", "-q", cwd=project)
        ok("dvc", "init", "-q", cwd=project)
    # The repro runs in its own processes while the flow runs here: much of the flow's time is spent waiting on
    # the Prefect server, which the repro's stages fill. The two projects share nothing.
    with ThreadPoolExecutor(1) as pool:
        repro = pool.submit(ok, "dvc", "repro", cwd=by_dvc)
        summary = evaluate(project_dir=str(by_flow))
        repro.result()
    return DvcAndFlow(
        by_dvc, by_flow, summary,
        digests={"dvc": stage_digests(by_dvc), "flow": stage_digests(by_flow)},
        run_ids={k: [r.run_id for r in Store(p / ".novelty-audit").runs()] for k, p in (("dvc", by_dvc), ("flow", by_flow))},
    )  # fmt: skip
