"""Helpers two or more benchmarks share: the mock server in its own process and the bare async client."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from mock_llm import free_port  # noqa: E402

TESTS_MOCK = REPO / "tests" / "mock_llm.py"
"""The tests' scripted server (records every request): fine for a thousand calls."""
LEAN_MOCK = REPO / "benchmarks" / "_mock.py"
"""A server that keeps nothing per request: for 100,000 calls."""


def start_server(latency: float, script: Path = TESTS_MOCK) -> tuple[subprocess.Popen, str]:
    """Start `script --port P --latency L` in its own process (it does not share the client's interpreter lock);
    returns the process and its OpenAI-style /v1 root once it answers."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", str(port), "--latency", str(latency)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(600):
        try:
            urllib.request.urlopen(url.replace("/v1", "/"), timeout=0.2)
        except urllib.error.HTTPError:
            return proc, url  # the server answers (404 on /): ready
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("mock server did not start")


async def bare(url: str, bodies: list[dict], concurrency: int) -> float:
    """Wall seconds for a bare `AsyncOpenAI` client sending `bodies` with at most `concurrency` in flight:
    the floor for Python on this machine."""
    from openai import AsyncOpenAI

    started = time.perf_counter()
    client = AsyncOpenAI(api_key="bench", base_url=url, max_retries=0)
    sem = asyncio.Semaphore(concurrency)

    async def one(body: dict) -> str | None:
        async with sem:
            r = await client.chat.completions.create(**body)
            return r.choices[0].message.content

    await asyncio.gather(*(one(b) for b in bodies))
    await client.close()
    return time.perf_counter() - started
