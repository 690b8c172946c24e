"""Serve the review page on the loopback interface only."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._app import create_app

if TYPE_CHECKING:
    from ..params import Params

__all__ = ["LOOPBACK", "bind_loopback", "serve"]

LOOPBACK = "127.0.0.1"


def bind_loopback(port: int = 0, host: str = LOOPBACK) -> socket.socket:
    """A listening socket on 127.0.0.1:`port` (0: a free port). Any other host is refused: the page shows
    unpublished verdicts and appends to the adjudication file, so it must not be reachable from the network."""
    if host != LOOPBACK:
        raise ConfigError(
            f"review: host '{host}' refused; the review page binds to {LOOPBACK} only",
            hint="open it from another machine through an SSH tunnel: ssh -L 8765:127.0.0.1:8765 HOST",
        )
    if not 0 <= port <= 65535:
        raise ConfigError(f"review: port {port} is not in 0..65535")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"review: cannot listen on {LOOPBACK}:{port} ({exc.strerror})", hint="pick another --port") from None
    sock.listen(128)
    return sock


def serve(
    params: str | Path | Params = "params.yaml",
    *,
    port: int = 8765,
    host: str = LOOPBACK,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Run the review server until interrupted; `on_ready` gets the page's URL once it listens."""
    import uvicorn

    sock = bind_loopback(port, host)
    app = create_app(params)
    url = f"http://{LOOPBACK}:{sock.getsockname()[1]}/"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    if on_ready is not None:
        on_ready(url)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
