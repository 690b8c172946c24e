"""Provider names → their classes, imported when first used (each imports its SDK)."""

from __future__ import annotations

import importlib

from ..errors import ConfigError
from ._provider import Provider

__all__ = ["PROVIDERS", "provider_class"]

PROVIDERS = {"openai": ("._openai", "OpenAIProvider"), "anthropic": ("._anthropic", "AnthropicProvider")}
"""Every provider the layer speaks, by name."""


def provider_class(name: str) -> type[Provider]:
    """The class of provider `name` (ConfigError naming the known ones otherwise)."""
    try:
        module, cls = PROVIDERS[name]
    except KeyError:
        raise ConfigError(f"unknown LLM provider '{name}'", hint=f"known: {', '.join(PROVIDERS)}") from None
    return getattr(importlib.import_module(module, __package__), cls)
