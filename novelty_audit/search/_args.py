"""The typed config of a search source (`search: {source: semantic-scholar | arxiv, ...}` in a judge's args)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..config import Frozen
from ._http import CutoffDate

__all__ = ["ArxivSearchArgs", "S2SearchArgs", "SearchArgs"]


class _Common(Frozen):
    limit: int = Field(default=10, ge=1, le=100)
    """Results requested per query; the filters (cutoff, own paper) may leave fewer. Decides results."""
    cutoff: CutoffDate = None
    """YYYY-MM-DD: papers published after it are left out (recorded as excluded). Applied to the cached
    response, so changing it never sends a request. A paper with only a year counts as published on Dec 31."""
    max_retries: int = Field(default=5, ge=0)
    """Retries on 429, 5xx, timeouts, dropped connections and malformed answers before the search fails."""
    backoff_s: float = Field(default=1.0, ge=0)
    """First retry delay; doubles per retry (a longer Retry-After takes precedence)."""
    max_backoff_s: float = Field(default=60.0, ge=0)
    """Longest retry delay."""
    timeout_s: float = Field(default=30.0, gt=0)
    """Per-request timeout."""
    refresh: bool = False
    """Ask every query again and replace the cached response (the old one kept in `history/`): a drift check
    of the literature. Not part of the config that decides results."""


class S2SearchArgs(_Common):
    """Semantic Scholar Graph API paper search (`/paper/search`); a key is optional."""

    source: Literal["semantic-scholar"]
    base_url: str = "https://api.semanticscholar.org/graph/v1"
    """Graph API root; part of the cache key and the config."""
    api_key_env: str | None = "S2_API_KEY"
    """Environment variable holding an API key (sent as x-api-key, never stored); unset or empty: no key."""
    requests_per_second: float = Field(default=1.0, gt=0)
    """Requests per second to this API from one process (S2 allows about 1/s without a key)."""
    cutoff_in_query: bool = False
    """Also pass `cutoff` to the API (`publicationDateOrYear=:cutoff`), as the original comparators' searches did:
    the API then returns up to `limit` papers all before the cutoff (instead of `limit` papers filtered after).
    Decides results: part of the request (cache key) and the config. The filter after retrieval still runs."""


class ArxivSearchArgs(_Common):
    """The arXiv API (`/query`, an Atom feed); no key."""

    source: Literal["arxiv"]
    base_url: str = "https://export.arxiv.org/api"
    """API root; part of the cache key and the config."""
    requests_per_second: float = Field(default=0.34, gt=0)
    """Requests per second to this API from one process (arXiv asks for at most one every 3 seconds)."""


SearchArgs = Annotated[S2SearchArgs | ArxivSearchArgs, Field(discriminator="source")]
