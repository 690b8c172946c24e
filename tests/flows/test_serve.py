"""Scheduled deployments: `python -m flows.serve` registers both flows with their cron schedules on a
Prefect server it did not start itself (here: one the test starts on 127.0.0.1 and stops), and runs them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: process exited with {proc.returncode}")
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"{what}: not ready after {timeout:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def prefect_server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """`prefect server start` on a free 127.0.0.1 port with its SQLite database in tmp_path."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
    }
    env.pop("PREFECT_API_URL", None)
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115  (outlives this block: the server writes to it)
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        _wait(healthy, 180, "prefect server", proc)
        yield url, {**env, "PREFECT_API_URL": url}
    finally:
        _stop(proc)
        log.close()


def _deployments(url: str) -> dict[str, dict]:
    res = httpx.post(f"{url}/deployments/filter", json={}, timeout=10)
    res.raise_for_status()
    return {d["name"]: d for d in res.json()}


def _final_state(url: str, run_id: str) -> str | None:
    state = httpx.get(f"{url}/flow_runs/{run_id}", timeout=10).json()["state"]["type"]
    return state if state in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") else None


def test_serve_registers_both_deployments_with_their_cron_schedules_and_runs_them(prefect_server, project_copy, tmp_path):
    url, env = prefect_server
    project = project_copy
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["flows"] = {**(raw.get("flows") or {}), "schedules": {"evaluate": "15 2 * * 0", "drift": "*/30 * * * *", "timezone": "Europe/Paris"}}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))

    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115  (closed after the serve process stops)
    serve = subprocess.Popen(
        [sys.executable, "-m", "flows.serve", "--project-dir", str(project)],
        cwd=tmp_path, env={**env, "PREFECT_RUNNER_POLL_FREQUENCY": "2"},
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        found = _wait(lambda: (d := _deployments(url)) and len(d) >= 2 and d, 120, "deployments", serve)
        # The served deployment runs: ask for one run now (the pin stage only, to keep it short).
        run = httpx.post(
            f"{url}/deployments/{found['novelty-audit-evaluate']['id']}/create_flow_run",
            json={"parameters": {"stages": ["pin"]}}, timeout=10,
        ).json()  # fmt: skip
        state = _wait(lambda: _final_state(url, run["id"]), 180, "served flow run", serve)
    finally:
        _stop(serve)
        log.close()
    assert state == "COMPLETED", (tmp_path / "serve.log").read_text()[-3000:]
    assert (project / "artifacts" / "pin" / "manifest.json").exists()

    crons = {name: [(s["schedule"]["cron"], s["schedule"]["timezone"], s["active"]) for s in d["schedules"]] for name, d in found.items()}
    assert crons == {
        "novelty-audit-evaluate": [("15 2 * * 0", "Europe/Paris", True)],
        "novelty-audit-drift": [("*/30 * * * *", "Europe/Paris", True)],
    }, (tmp_path / "serve.log").read_text()[-3000:]
    assert found["novelty-audit-evaluate"]["parameters"] == {"project_dir": str(project.resolve()), "params_path": "params.yaml"}
