"""One registry per plugin kind: a plugin is declared once, by a kebab-case name."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Generic, TypeVar

from ..errors import UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories. Factories import their heavy dependencies themselves."""

    def __init__(self, kind: str):
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._factories[name] = factory
            return factory

        return deco

    def names(self) -> list[str]:
        return sorted(self._factories)

    def get(self, name: str) -> Callable[..., T]:
        try:
            return self._factories[name]
        except KeyError:
            close = difflib.get_close_matches(name, self.names(), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(self.names())}"
            raise UnknownNameError(f"unknown {self.kind} '{name}'", hint=hint) from None

    def create(self, name: str, **kwargs) -> T:
        return self.get(name)(**kwargs)
