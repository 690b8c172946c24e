"""Search agents as judges: each decision is a loop of LLM turns and literature searches, every search audited.

A backend subclasses `AgentJudge` (its args `AgentArgs`), implements `run_one(call) -> AgentRun` over
`self.llm` (the call layer) and `self.search` (the search layer) and `knobs()`; the base runs all decisions in
one event loop, grounds citations, and writes effort, citations and the searches as evidence. The backends
(`ai-scientist`, `idea-novelty-checker`, `search-agent`) are named in judges/_backends.py. docs/design/agents.md.
"""

from ._base import (
    AgentArgs,
    AgentJudge,
    AgentRun,
    Citation,
    Tally,
    ground_citation,
    show_fetched,
    tokens_of,
)

__all__ = ["AgentArgs", "AgentJudge", "AgentRun", "Citation", "Tally", "ground_citation", "show_fetched", "tokens_of"]
