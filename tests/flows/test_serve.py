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


def _wait(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None):
    """Poll `predicate` until it returns a truthy value; fail after `timeout` s (or when `proc` exits), showing `log`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: process exited with {proc.returncode}\n{_tail(log)}")
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"{what}: not ready after {timeout:.0f} s\n{_tail(log)}")


def _tail(log: Path | None, n: int = 4000) -> str:
    return log.read_text(errors="replace")[-n:] if log is not None and log.exists() else ""


# A server on a busy machine may answer 5xx (SQLite busy) or drop a connection: such a request is retried until
# the deadline; any other unexpected status fails at once, with the body.
_TRANSIENT = {500, 502, 503, 504}


def _api(method: str, url: str, *, json: object = None, expect: tuple[int, ...] = (200,), timeout: float = 120) -> object:
    """One call of the Prefect REST API: the decoded body of a response with an expected status."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            res = httpx.request(method, url, json=json, timeout=30)
        except httpx.TransportError as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"{method} {url}: {exc!r}") from exc
            time.sleep(1)
            continue
        if res.status_code in expect:
            return res.json()
        if res.status_code not in _TRANSIENT or time.monotonic() > deadline:
            raise AssertionError(f"{method} {url}: HTTP {res.status_code}: {res.text[:2000]}")
        time.sleep(1)


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
        _wait(healthy, 300, "prefect server", proc, tmp_path / "server.log")
        yield url, {**env, "PREFECT_API_URL": url}
    finally:
        _stop(proc)
        log.close()


def _deployments(url: str) -> dict[str, dict]:
    return {d["name"]: d for d in _api("POST", f"{url}/deployments/filter", json={})}


def _final_state(url: str, run_id: str) -> str | None:
    state = _api("GET", f"{url}/flow_runs/{run_id}")["state"] or {}
    return state.get("type") if state.get("type") in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") else None


def test_serve_registers_both_deployments_with_their_cron_schedules_and_runs_them(prefect_server, project_copy, tmp_path):
    url, env = prefect_server
    project = project_copy
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["flows"] = {**(raw.get("flows") or {}), "schedules": {"evaluate": "15 2 * * 0", "drift": "*/30 * * * *", "timezone": "Europe/Paris"}}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))

    serve_log = tmp_path / "serve.log"
    log = open(serve_log, "w")  # noqa: SIM115  (closed after the serve process stops)
    serve = subprocess.Popen(
        [sys.executable, "-m", "flows.serve", "--project-dir", str(project)],
        cwd=tmp_path, env={**env, "PREFECT_RUNNER_POLL_FREQUENCY": "2"},
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        found = _wait(lambda: (d := _deployments(url)) and len(d) >= 2 and d, 300, "deployments", serve, serve_log)
        # The served deployments run: one evaluate run now (the pin stage only, to keep it short), and one drift
        # watch, which with the default params (no API judge enabled) must finish as a no-op, not fail.
        runs = {
            name: _api("POST", f"{url}/deployments/{found[name]['id']}/create_flow_run", json=body, expect=(200, 201))["id"]
            for name, body in (("novelty-audit-evaluate", {"parameters": {"stages": ["pin"]}}), ("novelty-audit-drift", {}))
        }
        states = {
            name: _wait(lambda run_id=run_id: _final_state(url, run_id), 900, f"served flow run {name}", serve, serve_log)
            for name, run_id in runs.items()
        }
    finally:
        _stop(serve)
        log.close()
    assert states == {"novelty-audit-evaluate": "COMPLETED", "novelty-audit-drift": "COMPLETED"}, _tail(serve_log)
    assert (project / "artifacts" / "pin" / "manifest.json").exists()
    assert "no enabled API judge" in serve_log.read_text(errors="replace")
    assert not (project / ".novelty-audit" / "drift").exists()

    crons = {name: [(s["schedule"]["cron"], s["schedule"]["timezone"], s["active"]) for s in d["schedules"]] for name, d in found.items()}
    assert crons == {
        "novelty-audit-evaluate": [("15 2 * * 0", "Europe/Paris", True)],
        "novelty-audit-drift": [("*/30 * * * *", "Europe/Paris", True)],
    }, _tail(serve_log)
    assert found["novelty-audit-evaluate"]["parameters"] == {"project_dir": str(project.resolve()), "params_path": "params.yaml"}
