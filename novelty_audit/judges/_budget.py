"""The run-wide cost cap now lives in the call layer (`novelty_audit.llm`); this name stays for callers that
still import it from here."""

from ..llm import Budget

__all__ = ["Budget"]
