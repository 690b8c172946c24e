"""The HTTP side of a search API: requests spaced to a rate, retries with backoff, responses cached by content.

Shared by the search layer and the judges' Semantic Scholar retriever (judges/_s2.py), which keeps its cache
keys: a response is keyed by digest(endpoint, path, request parameters) — never a key or header.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn, Protocol

from pydantic import AfterValidator

from ..artifacts import digest_obj
from ..errors import ConfigError

__all__ = [
    "CutoffDate", "Fetched", "RateLimiter", "ResponseCache", "RetryPolicy", "api_key_headers", "fetch", "key_refused",
    "process_limiter", "retry_after_seconds", "verify_search_cache",
    "within_cutoff",
]  # fmt: skip


class RetryPolicy(Protocol):
    """The retry knobs of a search's args (both search args models and the retriever's S2Args have them)."""

    max_retries: int
    backoff_s: float
    max_backoff_s: float


@dataclass(frozen=True)
class Fetched:
    """What one fetch came to: the parsed body, or a short stable failure reason."""

    body: Any
    failure: str | None
    attempts: int
    """HTTP requests sent (retries included)."""
    transient: bool = False
    """The failure persisted through every retry (429, 5xx, timeout, connection, malformed), as opposed to an
    answer that retrying cannot change (e.g. HTTP 404)."""

    @property
    def ok(self) -> bool:
        return self.failure is None


class RateLimiter:
    """Spaces requests: each one starts at least `interval` seconds after the one reserved before it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._next = 0.0

    def reserve(self, interval: float) -> float:
        """Reserve the next slot; returns how long the caller must wait before sending (seconds)."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + interval
        return start - now

    def wait(self, interval: float) -> None:
        delay = self.reserve(interval)
        if delay > 0:
            time.sleep(delay)


_LIMITERS: dict[str, RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def process_limiter(endpoint: str) -> RateLimiter:
    """The one limiter of this process for `endpoint`: every search object asking that API shares it."""
    with _LIMITERS_LOCK:
        return _LIMITERS.setdefault(endpoint, RateLimiter())


class ResponseCache:
    """Raw API responses under `root`, keyed by digest(endpoint, path, params) and checked on read (a CallCache:
    a damaged entry moves to `corrupt/` and the request is sent again). With `refresh`, each key is asked again
    once per object and the replaced response kept in `history/`."""

    def __init__(self, root: str | Path, endpoint: str, *, refresh: bool = False):
        from ..llm import CallCache

        self.cache = CallCache(Path(root))
        self.endpoint = endpoint
        self.refresh = refresh
        self._refreshed: set[str] = set()
        self._lock = threading.Lock()

    def key(self, path: str, params: dict[str, str]) -> str:
        return digest_obj({"endpoint": self.endpoint, "path": path, "params": params})

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached entry ({endpoint, path, params, data}), or None when absent, damaged or due a refresh."""
        with self._lock:
            if self.refresh and key not in self._refreshed:
                return None
        return self.cache.get(key)

    def put(self, key: str, path: str, params: dict[str, str], data: Any) -> None:
        self.cache.put(key, {"endpoint": self.endpoint, "path": path, "params": params, "data": data})
        with self._lock:
            self._refreshed.add(key)


def verify_search_cache(cache_root: str | Path) -> list[tuple[str, str]]:
    """(file, reason) for every damaged response under `<cache_root>/search/` (entries and `history/`); reads only."""
    from ..llm import verify_call_cache

    root = Path(cache_root) / "search"
    return [bad for d in sorted(root.iterdir()) if d.is_dir() for bad in verify_call_cache(d)] if root.is_dir() else []


def fetch(
    client: Any,
    url: str,
    params: dict[str, str],
    policy: RetryPolicy,
    *,
    headers: dict[str, str],
    wait_turn: Callable[[], None],
    parse: Callable[[Any], Any | None],
    refused: Callable[[int], NoReturn] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Fetched:
    """GET `url` with `params` until it answers 200 with a body `parse` accepts (None: malformed, retried).

    429, 5xx, timeouts, dropped connections and malformed bodies are retried up to `policy.max_retries` times,
    the delay doubling from `backoff_s` (jittered, at most `max_backoff_s`; a longer Retry-After wins). HTTP
    401/403 go to `refused` when given (a rejected key is a user error); any other status ends at once."""
    import httpx

    jitter = random.Random(digest_obj(params))  # spreads retries; decides nothing about the result
    reason = ""
    for attempt in range(policy.max_retries + 1):
        wait_turn()
        retry_after: float | None = None
        try:
            resp = client.get(url, params=params, headers=headers)
        except httpx.TimeoutException:
            reason = "timeout"
        except httpx.ConnectError:
            reason = "connection refused"
        except httpx.TransportError:
            reason = "connection dropped"
        else:
            if resp.status_code == 200:
                body = parse(resp)
                if body is not None:
                    return Fetched(body, None, attempt + 1)
                reason = "malformed response"
            elif resp.status_code == 429 or resp.status_code >= 500:
                reason = f"HTTP {resp.status_code}"
                retry_after = retry_after_seconds(resp.headers.get("retry-after"))
            elif resp.status_code in (401, 403) and refused is not None:
                refused(resp.status_code)
            else:
                return Fetched(None, f"HTTP {resp.status_code}", attempt + 1)
        if attempt < policy.max_retries:
            delay = min(policy.max_backoff_s, policy.backoff_s * 2**attempt) * (0.5 + jitter.random() / 2)
            sleep(max(delay, retry_after or 0.0))
    return Fetched(None, reason, policy.max_retries + 1, transient=True)


def api_key_headers(env: str | None) -> dict[str, str]:
    """`{x-api-key: <key>}` from the environment variable `env`; none when it is unset or empty (no key)."""
    key = os.environ.get(env) if env else None
    return {"x-api-key": key} if key else {}


def key_refused(status: int, what: str, env: str | None) -> NoReturn:
    """A search refused with HTTP 401/403: the key is wrong (a user error, not a failed search)."""
    raise ConfigError(
        f"Semantic Scholar refused the {what} (HTTP {status})",
        hint=f"check the key in {env} (or unset it to search without a key)",
    )


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header given in seconds, else None (an HTTP date falls back to the backoff)."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def within_cutoff(date: Any, year: Any, cutoff: str | None) -> bool:
    """Whether a paper dated `date` (YYYY-MM-DD…) or, lacking one, `year` was published by `cutoff`.
    A paper with only a year counts as published on Dec 31 of that year; one with neither is not."""
    if cutoff is None:
        return True
    if isinstance(date, str) and len(date) >= 4:
        return date[:10] <= cutoff
    return isinstance(year, int) and f"{year}-12-31" <= cutoff


def _cutoff_date(text: str | None) -> str | None:
    import datetime as dt

    if text is None:
        return None
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        pass
    else:
        if len(text) == 10:
            return text
    raise ValueError(f"cutoff {text!r} is not a date YYYY-MM-DD")


CutoffDate = Annotated[str | None, AfterValidator(_cutoff_date)]
"""A config field holding a cutoff date YYYY-MM-DD (or None); anything else fails when the config loads."""
