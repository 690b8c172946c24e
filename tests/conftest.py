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
    excepted. Every other test goes to whichever worker is free, in the order `_spread_heavy` gives."""
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
    items[:] = _spread_heavy(items)
    config.option.loadscopereorder = False  # xdist would move the groups to the front again


def _spread_heavy(items: list[pytest.Item]) -> list[pytest.Item]:
    """The heavy work units (a group, or a test marked `slow`), groups first, spread over the first half of the
    light ones.

    xdist hands out units in this order and gives a worker more while it still has a few tests queued. A slow
    test handed out last runs on one worker while the other has nothing left (the suite's last ~25 s ran on
    one worker), and slow tests handed out together oversubscribe two cores with their subprocesses (every
    slow test first made them up to half slower). Spread out, each usually runs beside light tests, and the
    end of the run is light tests only."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        group = item.get_closest_marker("xdist_group")
        units.setdefault(group.args[0] if group else item.nodeid, []).append(item)
    is_heavy = [len(u) > 1 or any(i.get_closest_marker("slow") for i in u) for u in units.values()]
    # Groups first: each builds a project and runs `dvc repro` or a flow once, the longest units of all.
    heavy = sorted((u for u, h in zip(units.values(), is_heavy) if h), key=lambda u: len(u) == 1)
    light = [u for u, h in zip(units.values(), is_heavy) if not h]
    step = len(light) / 2 / max(len(heavy), 1)  # light units between two heavy ones
    order: list[list[pytest.Item]] = []
    h = 0
    for n, unit in enumerate(light):
        while h < len(heavy) and h * step <= n:
            order.append(heavy[h])
            h += 1
        order.append(unit)
    order.extend(heavy[h:])
    return [item for unit in order for item in unit]
