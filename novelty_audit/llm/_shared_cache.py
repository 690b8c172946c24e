"""The team-shared call cache: a read-through, write-back layer under the local call cache.

`store.shared_cache: <fsspec URL>` (a directory, `s3://bucket/prefix`, `gs://bucket/prefix`, ...) holds the same
entries as `<store root>/cache/calls/`, at `<url>/calls/<k[:2]>/<k>.json`, byte for byte. Before a judge asks
anything, the local misses are fetched from it in one concurrent request batch (`fetch`); every fetched entry is
checked against its key and checksum exactly as a local one (`_entry.decode_entry`), and only a sound one is copied
into the local cache — a damaged or foreign one is ignored with a warning and the call is asked again (and the
fresh answer is written back over it). Every new answer is written back as soon as it is cached locally.

Concurrent writers never corrupt an entry: an object store PUT is atomic (readers see the old object or the new
one), and on a file system the entry is written under a unique temporary name and renamed. The first sound
entry of a key is kept (a later writer of the same key skips it), so every checkout reads the same answer.
Two checkouts asking one call at the same moment pay once: before sending, a process claims the call in the
shared cache itself (`try_claim`, an atomic create; `_shared_claim.py` says what holds on which backend and
when a claim is stale), reads the shared entry again, and sends only if nobody answered meanwhile.

Keys are digests of (backend, model, normalized endpoint without user info, sampling, prompt sha256, vote
index) and entries hold the request and the answer, never a key or token: credentials for the bucket come
from the environment (AWS_*, GOOGLE_APPLICATION_CREDENTIALS, ...) and `store.shared_cache_options` refuses
option names that look like secrets (params.StoreParams). The shared layer is never required: when it cannot be reached the run
goes on with the local cache alone (one warning), since it can only save calls, never decide an answer.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._entry import decode_entry as _decode
from ._shared_claim import ClaimFiles

__all__ = ["SharedCallCache", "redact_url"]

log = logging.getLogger(__name__)

OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "memory"})
"""Protocols whose single PUT is atomic (no temp-and-rename needed, and rename would be a copy)."""


def redact_url(url: str) -> str:
    """The URL without user info (which may hold credentials), for messages."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


class SharedCallCache:
    """A call cache shared by several checkouts through an fsspec URL (picklable: the filesystem is made lazily)."""

    def __init__(self, url: str, options: Mapping[str, Any] | None = None):
        self.url = url.rstrip("/")
        self.options = dict(options or {})
        self._fs: Any = None
        self._root = ""
        self._lock = threading.Lock()
        self._claims: ClaimFiles | None = None
        self._down = False
        """Set after the first failure to reach it: the rest of the run uses the local cache only."""
        self.fetched = 0
        """Entries copied from the shared cache into the local one in this process."""
        self.written = 0
        """Entries written to the shared cache in this process."""

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "options": self.options}

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__init__(d["url"], d["options"])

    def __repr__(self) -> str:
        return f"SharedCallCache({redact_url(self.url)!r})"

    # -- the filesystem ----------------------------------------------------------------------------
    def _filesystem(self) -> tuple[Any, str]:
        with self._lock:
            if self._fs is None:
                import fsspec

                from ..errors import MissingDependencyError

                try:
                    self._fs, self._root = fsspec.core.url_to_fs(self.url, **self.options)
                except ImportError as exc:
                    raise MissingDependencyError(
                        f"store.shared_cache {redact_url(self.url)}: {exc}",
                        hint="install the filesystem for this URL: pip install 'novelty-audit[shared-cache]' (s3fs), or gcsfs for gs://",
                    ) from None
                self._root = self._root.rstrip("/")
            return self._fs, self._root

    def _object_store(self, fs: Any) -> bool:
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        return bool(protocols & OBJECT_STORES)

    def _path(self, root: str, key: str) -> str:
        return f"{root}/calls/{key[:2]}/{key}.json"

    def _failed(self, what: str, exc: BaseException) -> None:
        if not self._down:
            self._down = True
            log.warning(
                "shared call cache %s: %s failed (%s: %s); this run goes on with the local cache only",
                redact_url(self.url), what, type(exc).__name__, str(exc)[:200],
            )  # fmt: skip

    # -- reading ------------------------------------------------------------------------------------
    def fetch(self, keys: Iterable[str]) -> dict[str, bytes]:
        """The sound shared entries among `keys` (key → the entry's file bytes), fetched concurrently.
        Missing ones are left out; damaged ones are left out with a warning (the call is asked again)."""
        keys = sorted(set(keys))
        if not keys or self._down:
            return {}
        from ..errors import MissingDependencyError

        try:
            fs, root = self._filesystem()
            paths = {self._path(root, k): k for k in keys}
            found = fs.cat(list(paths), on_error="return")
        except MissingDependencyError:
            raise
        except Exception as exc:  # noqa: BLE001  an unreachable shared cache only costs calls, never answers
            self._failed("reading", exc)
            return {}
        out: dict[str, bytes] = {}
        for path, data in found.items():
            key = paths.get(path) or paths.get(fs._strip_protocol(path))
            if key is None or isinstance(data, FileNotFoundError):
                continue
            if isinstance(data, BaseException):
                self._failed("reading", data)
                continue
            value, reason = _decode(data, key)
            if value is None:
                log.warning("shared call cache %s: ignored the entry of %s (%s); the call will be asked again", redact_url(self.url), key, reason)
                continue
            out[key] = data
        self.fetched += len(out)
        return out

    # -- writing ------------------------------------------------------------------------------------
    def put(self, key: str, data: bytes) -> None:
        """Write one entry (the local cache's file bytes) unless a sound one is already there."""
        if self._down:
            return
        try:
            fs, root = self._filesystem()
            path = self._path(root, key)
            try:
                existing = fs.cat_file(path)
            except FileNotFoundError:
                existing = None
            if existing is not None and _decode(existing, key)[0] is not None:
                return  # first sound answer wins: every checkout reads the same one
            if self._object_store(fs):
                fs.pipe_file(path, data)  # one PUT: readers see no object or the whole object
            else:
                directory = path.rsplit("/", 1)[0]
                fs.makedirs(directory, exist_ok=True)
                tmp = f"{directory}/.{key}.{uuid.uuid4().hex}.tmp"
                fs.pipe_file(tmp, data)
                try:
                    fs.mv(tmp, path)  # a rename: readers never see half an entry
                except BaseException:
                    fs.rm(tmp)
                    raise
            self.written += 1
        except Exception as exc:  # noqa: BLE001  see fetch
            self._failed("writing", exc)

    # -- claims -------------------------------------------------------------------------------------
    def try_claim(self, key: str, hold_s: float) -> str | None:
        """Claim the right to send call `key` for every checkout using this cache, for at most `hold_s`
        seconds: a token for `release`, or None while another process's live claim holds it. When the shared
        cache cannot be reached the token is "" (nothing to coordinate with: the local claim alone holds)."""
        if self._down:
            return ""
        from ..errors import MissingDependencyError

        try:
            fs, root = self._filesystem()
            if self._claims is None:
                self._claims = ClaimFiles(fs, root, self._object_store(fs))
            return self._claims.try_claim(key, hold_s)
        except MissingDependencyError:
            raise
        except Exception as exc:  # noqa: BLE001  see fetch
            self._failed("claiming", exc)
            return ""

    def release(self, key: str, token: str) -> None:
        """Give up the claim `token` of `try_claim` (after the answer, if any, was written here)."""
        if not token or self._down or self._claims is None:
            return
        try:
            self._claims.release(key, token)
        except Exception as exc:  # noqa: BLE001  a claim left behind expires (its holder is gone or past hold_s)
            self._failed("releasing a claim", exc)
