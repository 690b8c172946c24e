"""`verify_caches`: the call cache (owned by the call layer, `novelty_audit.llm`), the Semantic Scholar response
cache, the search layer's response cache (`novelty_audit.search`) and the distance judges' caches of a store."""

from __future__ import annotations

from pathlib import Path

from ..llm import verify_call_cache
from ..search import verify_search_cache

__all__ = ["verify_caches"]


def verify_caches(cache_root: str | Path) -> list[tuple[str, str]]:
    """(file, reason) for every damaged file in the judges' caches under `cache_root` (`<store root>/cache`):
    the call cache, the Semantic Scholar response cache (same entry format), the agents' search responses
    (`search/<source>/`) and the distance judges' caches.
    Reads only; what `novelty-audit verify` reports."""
    from .distance import verify_distance_caches

    root = Path(cache_root)
    return sorted(verify_call_cache(root / "calls") + verify_call_cache(root / "s2") + verify_search_cache(root) + verify_distance_caches(root))
