"""The call cache: one JSON file per answered call under `<store root>/cache/calls/`, no expiry.

Key = digest(backend, model, endpoint, output-affecting sampling settings, exact prompt bytes, vote index)
— never retries, timeouts, concurrency or keys. The endpoint is the normalized base URL (credentials,
query and fragment dropped), so the same model name on two servers never shares answers.

Each entry is written atomically as soon as its call returns, so a killed run loses no completed call.
Each entry carries its key and the sha256 of its value; `get` checks both and moves an entry that fails
to `corrupt/` with a warning, so the call is asked again rather than a damaged answer used. Calls that
ended in an error after retries are not cached: the next run asks again. `refresh` bypasses reads; the
replaced entry moves to `history/`. A team-shared layer (`store.shared_cache`, `_shared_cache.py`) may sit
under it: `prefetch` copies its sound entries of local misses in, `put` writes new answers back.

Packs bound the file count: once a shard directory (`<first two hex of the key>/`) holds `PACK_AT` loose entries,
the writer appends their exact bytes to `packs/<shard>.pack` (one entry per line, append only, so an offset never
moves) and removes them; from then on each new entry of the shard is appended to its pack directly, one write
under the shard's pack lock (no temp file, rename, re-read or unlink per answer: at paper scale that was a fifth
of a fresh run's CPU). A shard therefore never holds more than `PACK_AT` loose files, whatever the run's size.
A lookup reads the loose file first, then the shard's pack through an index of key → (offset, length) built by
scanning the pack once per process and extended when the pack has grown. A packed entry is checked on every read
exactly as a loose one (key and checksum); a damaged one is copied to `corrupt/` and the call asked again (its new
line shadows the damaged one: the last line of a key wins). A killed writer may leave a torn last line: the next
append ends it first, so it stays a line of its own and fails its check if ever read.

`try_claim` gives one process at a time the right to send a call, so two processes sharing a store never pay
for the same call twice. Claims are striped: a key's claim is an flock on `claims/<first two hex of the key>.lock`
(at most 256 files, never removed), which a process keeps open (up to `_IDLE_FDS` idle descriptors, the
least recently used closed beyond that, so many cache roots in one process never exhaust its descriptors) and shares among its own claims in that stripe,
while a set of claimed keys keeps threads of one process apart. Two processes therefore also exclude each other
on different keys of one stripe — only ever a short wait — and a claim costs one flock call instead of creating
and removing a file per call (the difference was 0.15× of the judge engine's throughput; benchmarks/bench_judge.py).
"""

from __future__ import annotations

import errno
import fcntl
import functools
import itertools
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from ..artifacts import atomic_write_bytes, clean_stale_temps, digest_bytes, digest_obj, write_all
from ..errors import BadInputError, ConfigError
from ._entry import ENTRY_FORMAT
from ._entry import decode_entry as _decode
from ._entry import encode_entry as _encode

if TYPE_CHECKING:
    from ._shared_cache import SharedCallCache

__all__ = ["CallCache", "CallClaim", "call_key", "endpoint_id", "verify_call_cache"]

log = logging.getLogger(__name__)

_DEFAULT_PORTS = {"http": 80, "https": 443}


@functools.lru_cache(maxsize=256)  # a pure function of two strings, asked once per call key
def endpoint_id(backend: str, endpoint: str | None) -> str:
    """The identity of the server that answers: a normalized base URL, or `<backend>:default` for the
    provider's own endpoint. A value without `://` (e.g. `local` for an in-process model) is kept as is.

    User info, query and fragment are dropped: they may carry credentials, and a key never enters a key."""
    if endpoint is None or not endpoint.strip():
        return f"{backend}:default"
    text = endpoint.strip()
    if "://" not in text:
        return text
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"base_url of a {backend} judge has an invalid port", hint="e.g. http://127.0.0.1:8000/v1") from None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if port is not None and _DEFAULT_PORTS.get(scheme) != port:
        host = f"{host}:{port}"
    path = re.sub(r"/+", "/", parts.path).rstrip("/")
    return f"{scheme}://{host}{path}"


def _read_or_none(path: str | Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _append_lines(pack: str, data: bytes) -> tuple[int, int]:
    """Append whole lines to a pack, the caller holding its shard's lock; a torn last line left by a killed
    writer is ended first, so it stays a line of its own (and fails its check if ever read). Returns (the
    pack's size before, 1 if that newline was added else 0). An OSError names the pack (a full disk)."""
    try:
        fd = os.open(pack, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            at = os.fstat(fd).st_size
            lead = 1 if at and os.pread(fd, 1, at - 1) != b"\n" else 0
            write_all(fd, b"\n" + data if lead else data)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.filename is None:
            exc.filename = pack
        raise
    return at, lead


def call_key(
    *,
    backend: str,
    model: str,
    endpoint: str | None,
    sampling: dict[str, Any],
    prompt_bytes: bytes | None = None,
    vote_index: int,
    prompt_sha256: str | None = None,
) -> str:
    """The identity of one call: everything that decides its answer, nothing that does not.

    `endpoint` is the base URL the request goes to (None: the provider's default endpoint); it is
    normalized by `endpoint_id`. The prompt is given as its canonical bytes, or as their sha256 when the caller
    already has it (the votes of one prompt share it)."""
    if (prompt_bytes is None) == (prompt_sha256 is None):
        raise ValueError("call_key takes the prompt's bytes or their sha256, one of the two")
    return digest_obj(
        {
            "backend": backend,
            "model": model,
            "endpoint": endpoint_id(backend, endpoint),
            "sampling": sampling,
            "prompt_sha256": prompt_sha256 if prompt_sha256 is not None else digest_bytes(prompt_bytes),
            "vote_index": vote_index,
        }
    )


class CallClaim:
    """The right to send one call, held by one process (and one of its threads) until `release`."""

    def __init__(self, stripe: Path, key: str):
        self.path = stripe
        self.key = key
        self._held = True
        self.shared: tuple[SharedCallCache, str] | None = None
        """The claim in the team-shared cache (that cache, the claim's token), when there is one."""

    @property
    def held(self) -> bool:
        return self._held

    def release(self) -> None:
        """Give up the claim; idempotent. The stripe's flock is dropped when this process holds no claim in it."""
        if not self._held:
            return
        self._held = False
        try:
            if self.shared is not None:
                self.shared[0].release(self.key, self.shared[1])
        finally:
            _CLAIMS.release(self.path, self.key)

    def __enter__(self) -> "CallClaim":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    def __del__(self) -> None:  # a claim dropped without release must not block other processes forever
        if getattr(self, "_held", False):
            try:
                self.release()
            except OSError:
                pass


class _Claims:
    """This process's claims: keys held (threads of one process exclude each other by key) and, per stripe
    file, an open descriptor with its flock held while any key of that stripe is claimed here. Unlocked
    descriptors stay open (least recently used first) so the next claim in a stripe is one flock call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._keys: set[str] = set()
        self._held: dict[Path, list[int]] = {}  # stripe -> [descriptor, claims held in it]
        self._idle: dict[Path, int] = {}  # stripe -> descriptor, unlocked; insertion order = least recent first

    def _after_fork(self) -> None:
        # A forked child shares its parent's open file descriptions, and with them the parent's flocks:
        # it must open its own descriptors and start with no claims.
        if self._pid != os.getpid():
            self._pid, self._keys, self._held, self._idle = os.getpid(), set(), {}, {}

    def try_claim(self, stripe: Path, key: str) -> bool:
        with self._lock:
            self._after_fork()
            if key in self._keys:
                return False
            held = self._held.get(stripe)
            if held is None:
                fd = self._idle.pop(stripe, None)
                if fd is None:
                    stripe.parent.mkdir(parents=True, exist_ok=True)
                    fd = os.open(stripe, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    self._idle[stripe] = fd
                    self._close_idle_beyond(_IDLE_FDS)
                    if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                        return False
                    raise
                held = self._held[stripe] = [fd, 0]
            held[1] += 1
            self._keys.add(key)
            return True

    def release(self, stripe: Path, key: str) -> None:
        with self._lock:
            if self._pid != os.getpid() or key not in self._keys:
                return
            self._keys.discard(key)
            held = self._held[stripe]
            held[1] -= 1
            if held[1] == 0:
                del self._held[stripe]
                fcntl.flock(held[0], fcntl.LOCK_UN)
                self._idle[stripe] = held[0]  # most recently used last
                self._close_idle_beyond(_IDLE_FDS)

    def _close_idle_beyond(self, keep: int) -> None:
        while len(self._idle) > keep:
            os.close(self._idle.pop(next(iter(self._idle))))

    def open_idle(self, stripes: Iterable[Path]) -> None:
        """Have descriptors open on these stripe files (creating the files if need be), unlocked and most
        recently used, so claims in them are quick; the least recently used idle ones are closed beyond the limit."""
        with self._lock:
            self._after_fork()
            for stripe in itertools.islice(stripes, _IDLE_FDS):
                if stripe in self._held:
                    continue
                fd = self._idle.pop(stripe, None)
                if fd is None:
                    try:
                        stripe.parent.mkdir(parents=True, exist_ok=True)
                        fd = os.open(stripe, os.O_RDWR | os.O_CREAT, 0o644)
                    except OSError:
                        return  # each claim then opens its stripe itself and reports the failure for its call
                self._idle[stripe] = fd
                self._close_idle_beyond(_IDLE_FDS)

    def has_descriptor(self, stripe: Path) -> bool:
        """Whether this process has the stripe file open (then a claim in it needs no disk access)."""
        with self._lock:
            return self._pid == os.getpid() and (stripe in self._held or stripe in self._idle)

    def open_descriptors(self) -> int:
        """Descriptors this process holds on stripe files (held or idle)."""
        with self._lock:
            return len(self._held) + len(self._idle)


DEFAULT_HOLD_S = 3600.0
"""How long a shared claim holds when its caller names no bound (the engine passes its settings' own)."""

_IDLE_FDS = 256
"""Idle stripe descriptors a process keeps: one store's stripes at most (a process with many stores, such as a
test session, closes the least recently used instead of running out of descriptors)."""


_CLAIMS = _Claims()


_cleaned: set[Path] = set()
_cleaned_lock = threading.Lock()


def _clean_leftovers_once(root: Path) -> None:
    """Remove temp files and claim files a killed process left in the cache (once per process and root;
    never one a live process is writing or holds)."""
    key = root.resolve()
    with _cleaned_lock:
        if key in _cleaned:
            return
        _cleaned.add(key)
    clean_stale_temps(root, ".*.tmp", recursive=True)
    # Stripe files stay (a killed holder's flock died with it); per-key claim files of novelty-audit 0.2
    # development builds are removed when nobody holds them.
    claims = root / "claims"
    if claims.is_dir():
        for p in claims.glob("*.lock"):
            if len(p.stem) == 64:
                try:
                    fd = os.open(p, os.O_RDWR)
                except FileNotFoundError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    p.unlink(missing_ok=True)
                except OSError:
                    pass
                finally:
                    os.close(fd)


PACK_AT = 64
"""Loose entries a shard directory holds before they are packed (256 shards: at most 16,384 loose files)."""
_ENTRY_HEAD = b'{"format":%d,"key":"' % ENTRY_FORMAT
"""How every entry line starts (sorted keys): the key is the 64 bytes after it, read without parsing the line."""


class _PackIndex:
    """key → (offset, length) of the entries of one pack file, as far as `size` bytes were scanned."""

    def __init__(self) -> None:
        self.size = 0
        self.where: dict[str, tuple[int, int]] = {}

    def extend(self, path: Path) -> None:
        """Scan what was appended since the last scan (whole lines only; a torn last line waits for its end)."""
        try:
            with open(path, "rb") as fh:
                fh.seek(self.size)
                data = fh.read()
        except FileNotFoundError:
            return
        at, head = 0, len(_ENTRY_HEAD)
        while (end := data.find(b"\n", at)) != -1:
            if data.startswith(_ENTRY_HEAD, at) and end - at > head + 64:
                # The last line of a key wins (a re-asked call packed after its damaged or refreshed first answer).
                self.where[data[at + head : at + head + 64].decode("ascii", "replace")] = (self.size + at, end + 1 - at)
            at = end + 1
        self.size += at


_INDEXES: dict[Path, tuple[threading.Lock, dict[str, _PackIndex]]] = {}
"""Pack indexes per cache root, shared by every CallCache of this process on that root: a run builds one
CallCache per judge, and an index of their own each held the same keys once per judge (sixty copies)."""
_INDEXES_LOCK = threading.Lock()


def _reset_indexes_in_child() -> None:
    # A forked child keeps the indexes (packs are append only: offsets stay true) but not a lock another thread held.
    global _INDEXES_LOCK
    _INDEXES_LOCK = threading.Lock()
    for root, (_, packs) in list(_INDEXES.items()):
        _INDEXES[root] = (threading.Lock(), packs)


os.register_at_fork(after_in_child=_reset_indexes_in_child)


def _indexes(root: Path) -> tuple[threading.Lock, dict[str, _PackIndex]]:
    key = root.resolve()
    with _INDEXES_LOCK:
        return _INDEXES.setdefault(key, (threading.Lock(), {}))


class CallCache:
    """Content-addressed answers of API/local model calls, each entry checked against its checksum on read."""

    pack_at: int = PACK_AT
    """Loose entries per shard directory that trigger packing."""

    def __init__(self, root: str | Path, shared: SharedCallCache | None = None):
        self.root = Path(root)
        self._dir = str(self.root)
        self.shared = shared
        """The team-shared layer under this cache (`store.shared_cache`), or None."""
        _clean_leftovers_once(self.root)
        self._pack_lock, self._packs = _indexes(self.root)
        self._loose: dict[str, int] = {}  # shard -> loose entries written since this cache last counted
        self._packed: set[str] = set()  # shards seen to have a pack
        self._stripes: dict[str, Path] = {}

    def path(self, key: str) -> Path:
        """Where the loose entry of `key` is (or would be) written; a packed entry lives in `pack_path(key)`."""
        return self.root / key[:2] / f"{key}.json"

    def pack_path(self, key: str) -> Path:
        return Path(self._pack_file(key))

    def _pack_file(self, key: str) -> str:
        """The pack of `key`'s shard (a shard's name gives the same: its first two characters)."""
        # A string, not a Path: lookups and appends build it once per call, and pathlib's parsing showed.
        return f"{self._dir}/packs/{key[:2]}.pack"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer, or None when there is none or it is damaged (then moved to `corrupt/`)."""
        # String paths, not Path objects: a cached rerun looks up every call, and pathlib's parsing showed.
        loose = f"{self._dir}/{key[:2]}/{key}.json"
        try:
            data = _read_or_none(loose)
        except OSError as exc:
            self._quarantine(Path(loose), b"", f"unreadable: {type(exc).__name__}")
            return None
        if data is None:
            return self._get_packed(key)
        value, reason = _decode(data, key)
        if value is None:
            self._quarantine(Path(loose), data, reason or "")
        return value

    def get_all(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The sound stored answers of `keys` (misses left out), each checked as by `get`. One listing per
        shard directory replaces a failed open per key of a packed shard (a cached rerun looks up every call);
        an entry written after its directory was listed is missed here and found by `get` once the call is claimed."""
        listed: dict[str, frozenset[str]] = {}
        scanned: set[str] = set()  # shards whose pack this lookup has brought its index up to date with
        out: dict[str, dict[str, Any]] = {}
        for key in keys:
            shard = key[:2]
            names = listed.get(shard)
            if names is None:
                try:
                    names = listed[shard] = frozenset(os.listdir(f"{self._dir}/{shard}"))
                except (FileNotFoundError, NotADirectoryError):
                    names = listed[shard] = frozenset()
            value = self.get(key) if f"{key}.json" in names else self._get_packed(key, scanned)
            if value is not None:
                out[key] = value
        return out

    def _packed_bytes(self, key: str, scanned: set[str] | None = None) -> bytes | None:
        """The last packed line of `key` (the index extended once if the pack grew since it was scanned). A
        batch lookup passes the shards it has already looked at (`scanned`): one stat per shard, not per key."""
        shard, pack = key[:2], self._pack_file(key)
        with self._pack_lock:
            index = self._packs.setdefault(shard, _PackIndex())
            if key not in index.where:
                if scanned is not None:
                    if shard in scanned:
                        return None
                    scanned.add(shard)
                try:
                    grown = os.stat(pack).st_size > index.size
                except FileNotFoundError:
                    return None
                if not grown:
                    return None
                index.extend(Path(pack))
            at = index.where.get(key)
        if at is None:
            return None
        fd = os.open(pack, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.pread(fd, at[1], at[0])
        finally:
            os.close(fd)

    def _get_packed(self, key: str, scanned: set[str] | None = None) -> dict[str, Any] | None:
        data = self._packed_bytes(key, scanned)
        if data is None:
            return None
        value, reason = _decode(data, key)
        if value is None:
            # A pack is never rewritten in place: the damaged line is copied aside and forgotten here; the call is
            # asked again and its new line, appended after it, shadows it (the last line of a key wins).
            dest = self.root / "corrupt" / f"{key}.{digest_bytes(data)[:16]}.json"
            atomic_write_bytes(dest, data, fsync=False)
            with self._pack_lock:
                self._packs[key[:2]].where.pop(key, None)
            log.warning("call cache: discarded the packed entry of %s in %s (%s); copied to %s, the call will be asked again",
                        key[:16], self.pack_path(key), reason, dest)  # fmt: skip
        return value

    def has(self, key: str) -> bool:
        """Whether an entry of `key` is stored (loose or packed), without checking it."""
        return self.path(key).exists() or self._packed_bytes(key) is not None

    def _quarantine(self, p: Path, data: bytes, reason: str) -> None:
        dest = self.root / "corrupt" / f"{p.stem}.{digest_bytes(data)[:16]}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(p, dest)
        except FileNotFoundError:
            pass  # another process moved it first
        except OSError as exc:
            raise BadInputError(
                f"call cache entry {p} is damaged ({reason}) and could not be moved aside ({type(exc).__name__})",
                hint="delete the file; the call will be asked again",
            ) from None
        log.warning("call cache: discarded %s (%s); moved to %s, the call will be asked again", p, reason, dest)

    def put(self, key: str, value: dict[str, Any], *, fresh: bool = False) -> None:
        """Keep the answer of `key`: a loose file while its shard has no pack, else a line appended to the pack
        (an older answer of the key goes to `history/` first; a loose one is removed, since it would shadow the line).
        `fresh`: the caller holds the call's claim and found no entry after taking it (so there is no older
        answer to look for: no other process writes the key while the claim is held)."""
        p = self.path(key)
        loose = old = None
        if not fresh:
            loose = _read_or_none(p)
            old = loose if loose is not None else self._packed_bytes(key)
        if old is not None:
            atomic_write_bytes(self.root / "history" / f"{key}.{digest_bytes(old)[:16]}.json", old)
        data = _encode(key, value)
        if self._has_pack(key):
            self._append(key, data)
            if loose is not None:
                p.unlink(missing_ok=True)
        else:
            # No fsync: an entry checks itself on read (checksum, key), so one a power loss left empty or torn
            # is quarantined and asked again; the sync per answer was a third of the call layer's own CPU.
            atomic_write_bytes(p, data, fsync=False)
            self._count_loose(p.parent)
        if self.shared is not None:
            self.shared.put(key, data)

    def _has_pack(self, key: str) -> bool:
        """Whether the key's shard has a pack (then new entries are appended to it): remembered once seen, since
        a pack is never removed."""
        shard = key[:2]
        if shard in self._packed:
            return True
        if os.path.exists(self._pack_file(key)):
            self._packed.add(shard)
            return True
        return False

    def _append(self, key: str, data: bytes) -> None:
        """Append one entry line to its shard's pack under the shard's pack lock (the packer's), in one write.
        A fresh answer thus costs one append: no temp file, rename, later re-read or unlink."""
        shard = key[:2]
        with self._shard_locked(shard):
            at, lead = _append_lines(self._pack_file(key), data)
        with self._pack_lock:
            index = self._packs.setdefault(shard, _PackIndex())
            if index.size == at:  # nothing unscanned before this line: index it without reading it back
                index.where[key] = (at + lead, len(data))
                index.size = at + lead + len(data)

    @contextmanager
    def _shard_locked(self, shard: str) -> Iterator[None]:
        """One writer of the shard's pack at a time across processes (appenders and the packer): an flock on
        `packs/<shard>.lock`."""
        fd = os.open(f"{self._dir}/packs/{shard}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # drops the flock

    def _count_loose(self, shard_dir: Path) -> None:
        shard = shard_dir.name
        with self._pack_lock:
            n = self._loose[shard] = self._loose.get(shard, -1) + 1
        if n == 0 or n >= self.pack_at:  # the first write of this process in the shard counts what is there
            self.pack_shard(shard_dir)

    def pack_shard(self, shard_dir: Path) -> int:
        """Append the shard's loose entries to its pack (when it holds `pack_at` or more) and remove them;
        returns how many were packed. Damaged ones are quarantined, as a read would. One packer per shard at a
        time across processes (an flock on `packs/<shard>.lock`); readers never wait: an entry is in the pack
        before its loose file goes."""
        shard = shard_dir.name
        names = [n for n in os.listdir(shard_dir) if n.endswith(".json") and not n.startswith(".")] if shard_dir.is_dir() else []
        with self._pack_lock:
            self._loose[shard] = len(names)
        if len(names) < self.pack_at:
            return 0
        (self.root / "packs").mkdir(exist_ok=True)
        with self._shard_locked(shard):
            return self._pack_locked(shard_dir, self._pack_file(shard))

    def _pack_locked(self, shard_dir: Path, pack: str) -> int:
        taken: list[tuple[Path, int]] = []
        chunks: list[bytes] = []
        for p in sorted(shard_dir.glob("*.json")):
            try:
                ino = p.stat().st_ino
                data = p.read_bytes()
            except FileNotFoundError:
                continue  # packed or moved by another process meanwhile
            if _decode(data, p.stem)[0] is None:
                self.get(p.stem)  # quarantines it, with its reason
                continue
            taken.append((p, ino))
            chunks.append(data if data.endswith(b"\n") else data + b"\n")
        if chunks:
            _append_lines(pack, b"".join(chunks))
        for p, ino in taken:
            try:
                if p.stat().st_ino == ino:  # not replaced since it was read (a refresh writes a new file)
                    p.unlink()
            except FileNotFoundError:
                pass
        with self._pack_lock:
            self._loose[shard_dir.name] = 0
        return len(chunks)

    def prefetch(self, keys: Iterable[str]) -> int:
        """Copy the shared layer's sound entries of the keys missing here into this cache (one concurrent
        fetch), so they are read like any local entry; returns how many were copied."""
        if self.shared is None:
            return 0
        missing = [k for k in keys if not self.has(k)]
        found = self.shared.fetch(missing)
        for key, data in found.items():
            atomic_write_bytes(self.path(key), data)
        return len(found)

    def try_claim(self, key: str, hold_s: float = DEFAULT_HOLD_S) -> CallClaim | None:
        """Claim the right to send the call `key` without blocking; None while another process (or
        thread) holds it, or another process holds a claim in its stripe. After claiming, read the cache
        again: the previous holder may have answered.

        With a shared layer the call is also claimed there, for every checkout using it (for at most `hold_s`
        seconds: after that, or once its holder has died, the claim is stale and taken over); the shared
        entry is then copied in if another checkout answered it since this run's first look."""
        stripe = self.stripe(key)
        if not _CLAIMS.try_claim(stripe, key):
            return None
        claim = CallClaim(stripe, key)
        if self.shared is not None:
            try:
                token = self.shared.try_claim(key, hold_s)
                if token is None:
                    claim.release()
                    return None
                claim.shared = (self.shared, token)
                self.prefetch([key])
            except BaseException:
                claim.release()
                raise
        return claim

    def stripe(self, key: str) -> Path:
        shard = key[:2]
        path = self._stripes.get(shard)
        if path is None:  # one Path per stripe, not per call: every call asks for its stripe twice
            path = self._stripes[shard] = self.root / "claims" / f"{shard}.lock"
        return path

    def open_stripes(self, keys: Iterable[str]) -> None:
        """Open the stripe files of these keys once (a run does this off the loop before its first call), so
        that each claim after it is quick."""
        _CLAIMS.open_idle(dict.fromkeys(self.stripe(k) for k in keys))

    def claim_is_quick(self, key: str) -> bool:
        """Whether `try_claim(key)` is one non-blocking flock on a descriptor this process holds open (no
        file to open or create, so it cannot wait on a busy disk; never with a shared layer, whose claim is a
        round trip)."""
        return self.shared is None and _CLAIMS.has_descriptor(self.stripe(key))


def verify_call_cache(calls_root: str | Path) -> list[tuple[str, str]]:
    """(file, reason) for every damaged entry under `calls_root` (entries and `history/`); reads only."""
    root = Path(calls_root)
    bad: list[tuple[str, str]] = []
    if not root.is_dir():
        return bad
    for sub in sorted(d for d in root.iterdir() if d.is_dir() and d.name not in ("corrupt", "claims")):
        for p in sorted(sub.glob("*.json")):
            try:
                data = p.read_bytes()
            except OSError as exc:
                bad.append((str(p), f"unreadable: {type(exc).__name__}: {exc}"))
                continue
            if sub.name == "history":
                # history/<key>.<sha256 of the file's bytes, 16 hex>.json
                key, _, short = p.stem.rpartition(".")
                if digest_bytes(data)[:16] != short:
                    bad.append((str(p), "bytes do not match the digest in the file name"))
                    continue
                _, reason = _decode(data, key)
            else:
                _, reason = _decode(data, p.stem)
            if reason is not None:
                bad.append((str(p), reason))
    for pack in sorted((root / "packs").glob("*.pack")):
        bad.extend(_verify_pack(pack))
    return bad


def _verify_pack(pack: Path) -> list[tuple[str, str]]:
    """(`<pack>:<byte offset>`, reason) for every damaged line of a pack, or a line in another shard's pack."""
    bad: list[tuple[str, str]] = []
    at = 0
    with open(pack, "rb") as fh:
        for line in fh:
            value, reason = _decode(line, None)
            if value is not None and not orjson.loads(line)["key"].startswith(pack.stem):
                reason = f"an entry of another shard (key {orjson.loads(line)['key'][:16]}…)"
            if reason is not None:
                bad.append((f"{pack}:{at}", reason))
            at += len(line)
    return bad
