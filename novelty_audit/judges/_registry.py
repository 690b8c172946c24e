"""One registry per plugin kind: a plugin is declared once, by a kebab-case name, with its args model."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Generic, TypeVar

from pydantic import BaseModel

from ..errors import UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories. Factories import their heavy dependencies themselves; the args model
    registered with a factory lets its configuration be checked without building anything."""

    def __init__(self, kind: str):
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}
        self._args: dict[str, type[BaseModel] | None] = {}

    def register(
        self, name: str, *, args: type[BaseModel] | None = None
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Declare `name`; `args` is the typed model of its `args:` (None: the factory takes none it checks)."""

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._factories[name] = factory
            self._args[name] = args
            return factory

        return deco

    def names(self) -> list[str]:
        return sorted(self._factories)

    def get(self, name: str) -> Callable[..., T]:
        try:
            return self._factories[name]
        except KeyError:
            raise self.unknown(name) from None

    def args_model(self, name: str) -> type[BaseModel] | None:
        """The args model registered with `name` (UnknownNameError for an unknown name)."""
        self.get(name)
        return self._args[name]

    def unknown(self, name: str) -> UnknownNameError:
        """The error for an unknown name, suggesting close matches."""
        close = difflib.get_close_matches(name, self.names(), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(self.names())}"
        return UnknownNameError(f"unknown {self.kind} '{name}'", hint=hint)

    def create(self, name: str, **kwargs) -> T:
        return self.get(name)(**kwargs)
