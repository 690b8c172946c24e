"""`novelty-audit review` as a person starts it: a real server that listens on 127.0.0.1 only."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from novelty_audit.errors import ConfigError
from novelty_audit.review import bind_loopback


def _listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on `port`, from the kernel's table (IPv4 and IPv6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.rsplit(":", 1)
            if state == "0A" and int(hexport, 16) == port:  # 0A: LISTEN
                found.add(addr)
    return found


def test_the_server_prints_its_loopback_url_and_serves_the_page(served):
    with urllib.request.urlopen(served.url, timeout=60) as resp:
        html = resp.read().decode()
    assert resp.status == 200 and "Verdict-change review" in html and 'class="change' in html


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp to read listening sockets")
def test_the_server_listens_on_127_0_0_1_and_nowhere_else(served):
    # 0100007F is 127.0.0.1 in the kernel's little-endian hex.
    assert _listening_addresses(served.port) == {"0100007F"}


def test_another_host_is_refused_with_exit_2_and_no_traceback(project):
    res = subprocess.run([sys.executable, "-m", "novelty_audit.cli", "review", "--host", "0.0.0.0", "--port", "0"],
                         cwd=project, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "host '0.0.0.0' refused" in res.stderr and "Traceback" not in res.stderr


def test_bind_loopback_refuses_every_other_host_and_binds_127_0_0_1():
    for host in ("0.0.0.0", "::", "localhost", "192.168.1.10"):
        with pytest.raises(ConfigError, match="127.0.0.1 only"):
            bind_loopback(0, host)
    sock = bind_loopback(0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
        assert sock.family == socket.AF_INET
    finally:
        sock.close()
