"""Claims in the team-shared call cache: one process, of every checkout pointed at the cache, sends a call.

The local claim (an flock in `<store>/cache/calls/claims/`) keeps the processes of one store apart; this one
keeps stores apart. A claim is a small JSON file `<url>/claims/<k[:2]>/<key>.json` made by an atomic create —
it exists whole or not at all, and only one of several creators succeeds:

- a directory (local, NFS): the claim is written to a unique temporary name and hard-linked to its name
  (`link` fails when the name exists; it is atomic on NFS too, unlike a check-then-write);
- s3://: one conditional PUT (`If-None-Match: *`), refused with HTTP 412 when the object exists;
- other fsspec backends (gs://, az://, ...): fsspec's generic create, an existence check then a write. That
  narrows the window for paying twice to the moment between the two; it does not close it.

The claim holds a random token, the holder's host and pid and an expiry (`hold_s` from now: the longest the
holder can take to send the call with its own settings, retries and backoff included). It is removed when the
answer is in the shared cache, or the call ended without one.

Stale-claim rule (a claimant that died must not block the call): a claim is stale when its expiry has passed,
or when it was made on this host by a process that is no longer running. A stale claim is taken over through a
takeover marker `<claim>.<token>.takeover`, made with the same atomic create, so of several processes that found
the same stale claim only one removes it; the others keep waiting, and the next creator wins the call. A marker
left by a taker that died is itself stale after `MARKER_HOLD_S`. What the rule cannot see: a holder on another
host that is still sending past its own expiry (clocks more than its margin apart, or a Retry-After longer than
the backoff bound) loses its claim, and that call may be paid twice.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Any

import orjson

__all__ = ["MARKER_HOLD_S", "ClaimFiles"]

MARKER_HOLD_S = 60.0
"""How long a takeover marker holds: removing a stale claim is two requests, not a call."""

_HOST = socket.gethostname()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: running
    except OSError:
        return True
    return True


def is_stale(held: dict[str, Any] | None, now: float) -> bool:
    """Whether a claim's holder can no longer be sending: its expiry passed, or it ran here and is gone."""
    if held is None:
        return True  # unreadable (no whole claim is ever written any other way): nobody can be relying on it
    expires = held.get("expires")
    if not isinstance(expires, (int, float)) or now > expires:
        return True
    pid = held.get("pid")
    return held.get("host") == _HOST and isinstance(pid, int) and pid != os.getpid() and not _alive(pid)


class ClaimFiles:
    """Atomic-create claims on one fsspec filesystem under `root` (the shared cache's root path)."""

    def __init__(self, fs: Any, root: str, object_store: bool):
        self.fs = fs
        self.root = root
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        self._local = bool(protocols & {"file", "local"})
        self._conditional_put = bool(protocols & {"s3", "s3a"})
        self._object_store = object_store

    def path(self, key: str) -> str:
        return f"{self.root}/claims/{key[:2]}/{key}.json"

    # -- one attempt --------------------------------------------------------------------------------
    def try_claim(self, key: str, hold_s: float) -> str | None:
        """The new claim's token, or None while another live claim (or a takeover of a stale one) holds the key."""
        path = self.path(key)
        token = uuid.uuid4().hex
        for _ in range(2):  # a second try only right after removing a stale claim
            if self._create(path, self._body(token, hold_s)):
                return token
            held = self._read(path)
            if held is _MISSING:
                continue  # released between our create and our read
            if not is_stale(held, time.time()) or not self._take_over(path, held):
                return None
        return None

    def release(self, key: str, token: str) -> None:
        """Remove the claim if it is still ours (a stale-claim takeover may have replaced it)."""
        path = self.path(key)
        held = self._read(path)
        if isinstance(held, dict) and held.get("token") == token:
            self._remove(path)

    # -- the parts ------------------------------------------------------------------------------------
    def _body(self, token: str, hold_s: float) -> bytes:
        return orjson.dumps({"token": token, "host": _HOST, "pid": os.getpid(), "expires": round(time.time() + hold_s, 3)})

    def _create(self, path: str, data: bytes) -> bool:
        """Make `path` holding `data` unless it exists; True when this call made it."""
        if self._local:
            directory = path.rsplit("/", 1)[0]
            os.makedirs(directory, exist_ok=True)
            tmp = f"{directory}/.{uuid.uuid4().hex}.tmp"
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                os.link(tmp, path)  # atomic, whole, and refused when the name exists
                return True
            except FileExistsError:
                return False
            finally:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
        try:
            if self._conditional_put:
                self.fs.pipe_file(path, data, mode="create")  # If-None-Match: *
            else:
                if self.fs.exists(path):
                    return False
                if not self._object_store:
                    self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
                self.fs.pipe_file(path, data)
        except FileExistsError:
            return False
        return True

    def _read(self, path: str) -> Any:
        """The claim's fields, `_MISSING` when there is none, None when it is not a claim."""
        try:
            data = self.fs.cat_file(path)
        except FileNotFoundError:
            return _MISSING
        try:
            held = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        return held if isinstance(held, dict) else None

    def _remove(self, path: str) -> None:
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            pass

    def _take_over(self, path: str, held: dict[str, Any] | None) -> bool:
        """Remove a stale claim if this process wins its takeover marker; True when the claim is gone."""
        token = held.get("token") if isinstance(held, dict) else None
        marker = f"{path}.{token if isinstance(token, str) and token.isalnum() else 'unreadable'}.takeover"
        if not self._create(marker, self._body(uuid.uuid4().hex, MARKER_HOLD_S)):
            mark = self._read(marker)
            if mark is not _MISSING and is_stale(mark, time.time()):
                self._remove(marker)  # its taker died mid-takeover: the next look tries again
            return False
        try:
            now = self._read(path)
            if now is _MISSING:
                return True
            same = now.get("token") == token if isinstance(now, dict) else held is None
            if not same:
                return False  # someone else's fresh claim: theirs
            self._remove(path)
            return True
        finally:
            self._remove(marker)


_MISSING = object()
