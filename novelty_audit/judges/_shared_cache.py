"""The team-shared call cache lives in the call layer (`novelty_audit.llm`); this name stays for callers that
still import it from here."""

from ..llm import SharedCallCache, redact_url

__all__ = ["SharedCallCache", "redact_url"]
