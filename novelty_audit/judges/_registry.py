"""One registry per plugin kind: a plugin is declared once, by a kebab-case name, with its args model.

Entries are lazy: a name maps to `"module:factory"` and `"module:ArgsModel"` references, imported on first use
(the way inspect_ai keeps its model providers in one module), so listing or validating names imports only the
args models asked for and importing the registry imports no plugin. `register` adds an eager entry (a factory
object), for plugins defined outside the table (tests, a user's own module).
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

from pydantic import BaseModel

from ..errors import UnknownNameError

__all__ = ["Lazy", "Registry", "resolve"]

T = TypeVar("T")


class Lazy(NamedTuple):
    """A lazily imported plugin: its factory and its args model as `"package.module:attribute"` references."""

    factory: str
    args: str | None = None
    """None: the factory takes no args it checks."""


def resolve(ref: str) -> Any:
    """The object a `"package.module:attribute"` reference names (imports the module)."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


class Registry(Generic[T]):
    """Maps names to factories. Factories import their heavy dependencies themselves; the args model
    registered with a factory lets its configuration be checked without building anything."""

    def __init__(self, kind: str, lazy: Mapping[str, Lazy] | None = None):
        self.kind = kind
        self._lazy: dict[str, Lazy] = dict(lazy or {})
        self._factories: dict[str, Callable[..., T]] = {}
        self._args: dict[str, type[BaseModel] | None] = {}
        self._lock = threading.RLock()  # judges are built from several threads (fan-out chunks)

    def register(
        self, name: str, *, args: type[BaseModel] | None = None
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Declare `name` with a factory object; `args` is the typed model of its `args:` (None: none it checks)."""

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories or name in self._lazy:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._factories[name] = factory
            self._args[name] = args
            return factory

        return deco

    def names(self) -> list[str]:
        return sorted({*self._factories, *self._lazy})

    def get(self, name: str) -> Callable[..., T]:
        """The factory of `name`, importing its module on first use (UnknownNameError for an unknown name)."""
        with self._lock:
            if name not in self._factories:
                entry = self._entry(name)
                self._factories[name] = resolve(entry.factory)
            return self._factories[name]

    def args_model(self, name: str) -> type[BaseModel] | None:
        """The args model of `name`, importing only its module (UnknownNameError for an unknown name)."""
        with self._lock:
            if name not in self._args:
                entry = self._entry(name)
                self._args[name] = resolve(entry.args) if entry.args else None
            return self._args[name]

    def _entry(self, name: str) -> Lazy:
        try:
            return self._lazy[name]
        except KeyError:
            raise self.unknown(name) from None

    def unknown(self, name: str) -> UnknownNameError:
        """The error for an unknown name, suggesting close matches."""
        close = difflib.get_close_matches(name, self.names(), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(self.names())}"
        return UnknownNameError(f"unknown {self.kind} '{name}'", hint=hint)

    def create(self, name: str, **kwargs) -> T:
        return self.get(name)(**kwargs)
