"""Processes started together on one job: each prints "ready", waits to be released, and ends with one JSON line."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson


@contextmanager
def started(cmds: list[list[str]], env: dict[str, str], *, stdin: bool = False) -> Iterator[list[subprocess.Popen]]:
    """Start every command and wait until each has said "ready" (its stderr is the failure message); every one
    is killed on the way out, whatever happened."""
    pipe_in = subprocess.PIPE if stdin else None
    procs = [subprocess.Popen(cmd, stdin=pipe_in, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for cmd in cmds]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=60)


def outputs(procs: list[subprocess.Popen]) -> list[dict[str, Any]]:
    """Each process's last line of output as JSON, once it has exited 0 (its stderr is the failure message)."""
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(orjson.loads(out.strip().splitlines()[-1]))
    return outs
