"""Shared fixtures: a throw-away project directory, so no test writes into the repository."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of params.yaml, dvc.yaml and the pinned benchmark in a temp dir, made the cwd."""
    from project_copy import make_project

    make_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small project of tests/tiny_project.py (the shipped code, dvc.yaml, params and data, benchmark files cut
    to their first pairs and re-pinned) in a temp dir, made the cwd: for running real stages end to end cheaply."""
    from tiny_project import make_tiny_project

    root = make_tiny_project(tmp_path / "tiny")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def pinned_tiny(tiny: Path, monkeypatch: pytest.MonkeyPatch):
    """`tiny` with its splits pinned, and a mock OpenAI/Anthropic server for API judges (key in MOCK_API_KEY):
    yields (project root, MockLLM)."""
    from mock_llm import MockLLM
    from novelty_audit.pipeline import run_stage

    monkeypatch.setenv("MOCK_API_KEY", "sk-test-pinned-tiny")
    run_stage("pin")
    with MockLLM() as mock:
        yield tiny, mock


@pytest.fixture
def run_main(capsys: pytest.CaptureFixture[str]):
    """Call the CLI entry point in this process: `run_main(*args) -> (exit code, stdout, stderr)`."""
    from novelty_audit.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        cap = capsys.readouterr()
        return code, cap.out, cap.err

    return run


@pytest.fixture
def s2():
    """A loopback Semantic Scholar Graph API (tests/mock_s2.py), stopped after the test."""
    from mock_s2 import MockS2

    with MockS2() as mock:
        yield mock


@pytest.fixture
def arxiv():
    """A loopback arXiv Atom API (tests/mock_arxiv.py), stopped after the test."""
    from mock_arxiv import MockArxiv

    with MockArxiv() as mock:
        yield mock


PER_WORKER_SESSION_FIXTURES = {"prefect_api"}
"""Session fixtures each xdist worker builds for itself: the Prefect test server (~15 s to start) serves many
tests, and holding them all on one worker made that worker the suite's critical path."""


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups from the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`-n … --dist loadgroup`, the README's test command), tests that share one of this
    suite's module- or session-scoped fixtures (a `dvc repro` of a project copy, `dvc_and_flow`) run on one
    worker, so it is built once rather than once per worker; the fixtures in PER_WORKER_SESSION_FIXTURES
    excepted. Every other test goes to whichever worker is free, in the order `_spread_slow` gives."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        ours = [d for defs in info.name2fixturedefs.values() for d in defs if d.baseid]  # defined in tests/, not plugins
        shared = sorted({d.argname for d in ours if d.scope == "session" and d.argname not in PER_WORKER_SESSION_FIXTURES})
        if shared:
            item.add_marker(pytest.mark.xdist_group("+".join(shared)))
        elif any(d.scope == "module" for d in ours):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    items[:] = _spread_slow(items)


def _spread_slow(items: list[pytest.Item]) -> list[pytest.Item]:
    """The tests marked `slow` spread over the first half of the others, each group kept together.

    xdist (`--dist loadgroup`) hands out the groups first, most tests first, then the other tests in this order,
    and gives a worker more while it still has a few tests queued. In file order, slow tests collected last ran
    on one worker while the other had nothing left (the suite's last ~25 s); all slow tests first ran them side
    by side, their subprocesses oversubscribing two cores (each up to half slower). Spread out, a slow test
    usually runs beside light ones, and the run ends on light tests only."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        group = item.get_closest_marker("xdist_group")
        units.setdefault(group.args[0] if group else item.nodeid, []).append(item)
    slow: list[list[pytest.Item]] = []
    rest: list[list[pytest.Item]] = []
    for unit in units.values():
        (slow if any(i.get_closest_marker("slow") for i in unit) else rest).append(unit)
    step = len(rest) / 2 / max(len(slow), 1)  # other units between two slow ones
    order: list[list[pytest.Item]] = []
    placed = 0
    for n, unit in enumerate(rest):
        while placed < len(slow) and placed * step <= n:
            order.append(slow[placed])
            placed += 1
        order.append(unit)
    order.extend(slow[placed:])
    return [item for unit in order for item in unit]
