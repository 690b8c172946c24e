"""Every judge backend, by name, in one table: where its factory and its args model live.

Nothing here is imported until a name is used: `novelty-audit judges` imports each factory for its description,
validating params imports the args models of the configured backends only, building imports the factories of
the judges built. Adding a backend is one line here (README "Adding a judge", docs/judges.md). The references are
plain string literals: a stage's code digest follows them to the backend modules (novelty_audit/artifacts/_code.py).
"""

from __future__ import annotations

from ._registry import Lazy, Registry

__all__ = ["BACKENDS", "JUDGES"]

BACKENDS: dict[str, Lazy] = {
    "always-first": Lazy("novelty_audit.judges._controls:always_first", "novelty_audit.judges._controls:ControlArgs"),
    "always-second": Lazy("novelty_audit.judges._controls:always_second", "novelty_audit.judges._controls:ControlArgs"),
    "random": Lazy("novelty_audit.judges._controls:random_votes", "novelty_audit.judges._controls:ControlArgs"),
    "abstain": Lazy("novelty_audit.judges._controls:abstain", "novelty_audit.judges._controls:ControlArgs"),
    "import": Lazy("novelty_audit.judges._import:import_judge", "novelty_audit.judges._import:ImportArgs"),
    "openai": Lazy("novelty_audit.judges._openai:openai_judge", "novelty_audit.judges._llm:LLMArgs"),
    "anthropic": Lazy("novelty_audit.judges._anthropic:anthropic_judge", "novelty_audit.judges._llm:AnthropicArgs"),
    "gguf-logprob": Lazy("novelty_audit.judges._gguf:gguf_logprob", "novelty_audit.judges._gguf:GgufArgs"),
    "distance-yin": Lazy("novelty_audit.judges.distance._judge:distance_yin", "novelty_audit.judges.distance._judge:DistanceArgs"),
    "distance-knn": Lazy("novelty_audit.judges.distance._judge:distance_knn", "novelty_audit.judges.distance._judge:KnnArgs"),
    "distance-rnd": Lazy("novelty_audit.judges.distance._judge:distance_rnd", "novelty_audit.judges.distance._judge:RndArgs"),
    "ai-scientist": Lazy("novelty_audit.judges.agents._ai_scientist:ai_scientist", "novelty_audit.judges.agents._ai_scientist:AiScientistArgs"),
    "idea-novelty-checker": Lazy("novelty_audit.judges.agents._checker:idea_novelty_checker", "novelty_audit.judges.agents._checker:CheckerArgs"),
    "search-agent": Lazy("novelty_audit.judges.agents._search_agent:search_agent", "novelty_audit.judges.agents._search_agent:SearchAgentArgs"),
}

JUDGES: Registry = Registry("judge backend", BACKENDS)
"""Every judge backend, by its kebab-case name."""
