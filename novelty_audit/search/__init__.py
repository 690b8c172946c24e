"""Literature search for judges: Semantic Scholar paper search and the arXiv API, every answer audited.

    search = make_search(S2SearchArgs(source="semantic-scholar"), store_root / "cache")
    result = search.search("graph attention networks", exclude_title=idea.title)
    result.text() if result.ok else result.failure   # "HTTP 429" after the retries, never an exception

Raw responses are cached by content under `<cache_root>/search/<source>/` (digest of endpoint and request
parameters, never the key), checked on read (a damaged one moves to `corrupt/` and is asked again), and a
`refresh` asks again, keeping the old one in `history/`: a re-run sends no request, and drift is visible as
changed `SearchResult.digest`s. The filters (cutoff, the idea's own paper) run on the cached response and
record each paper they leave out. Requests are spaced to `requests_per_second` per API per process; 429, 5xx,
timeouts and dropped connections are retried with backoff (Retry-After honoured). See docs/design/search.md.
"""

from ._args import ArxivSearchArgs, S2SearchArgs, SearchArgs
from ._http import CutoffDate, Fetched, RateLimiter, ResponseCache, api_key_headers, fetch, key_refused, process_limiter, verify_search_cache, within_cutoff
from ._search import Search, make_search, same_title
from ._sources import s2_data
from ._types import NO_PAPERS, Paper, SearchResult

__all__ = [
    "NO_PAPERS",
    "ArxivSearchArgs",
    "CutoffDate",
    "Fetched",
    "Paper",
    "RateLimiter",
    "ResponseCache",
    "S2SearchArgs",
    "Search",
    "SearchArgs",
    "SearchResult",
    "api_key_headers",
    "fetch",
    "key_refused",
    "make_search",
    "process_limiter",
    "s2_data",
    "same_title",
    "verify_search_cache",
    "within_cutoff",
]
