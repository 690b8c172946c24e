"""The call cache: one JSON file per answered call under `<store root>/cache/calls/`, no expiry.

Key = digest(backend, model, output-affecting sampling settings, exact prompt bytes, vote index) — never
retries, timeouts, concurrency, endpoints or keys. Each entry is written atomically as soon as its call
returns, so a killed run loses no completed call. Calls that ended in an error after retries are not
cached: the next run asks again. `refresh` bypasses reads; the replaced entry moves to `history/`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..artifacts import atomic_write_bytes, digest_bytes, digest_obj

__all__ = ["CallCache", "call_key"]


def call_key(*, backend: str, model: str, sampling: dict[str, Any], prompt_bytes: bytes, vote_index: int) -> str:
    """The identity of one call: everything that decides its answer, nothing that does not."""
    return digest_obj(
        {
            "backend": backend,
            "model": model,
            "sampling": sampling,
            "prompt_sha256": digest_bytes(prompt_bytes),
            "vote_index": vote_index,
        }
    )


class CallCache:
    """Content-addressed answers of API/local model calls."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        p = self.path(key)
        try:
            return orjson.loads(p.read_bytes())
        except FileNotFoundError:
            return None
        except orjson.JSONDecodeError:
            # Entries are written atomically, so this is outside damage: ask again rather than trust it.
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        p = self.path(key)
        if p.exists():
            old = p.read_bytes()
            atomic_write_bytes(self.root / "history" / f"{key}.{digest_bytes(old)[:16]}.json", old)
        atomic_write_bytes(p, orjson.dumps(value, option=orjson.OPT_SORT_KEYS) + b"\n")
