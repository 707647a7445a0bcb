"""Host-wide objects that plugins share by typed key: ``ServiceKey`` and ``SharedObjects``.

One host keeps one ``SharedObjects`` (its ``HostServices`` is one), and every kind of plugin reaches the same
one: a runtime's plugins as ``RuntimeContext.services``, a host plugin as ``HostPluginContext.services``, a
channel connection as ``ChannelHost.shared``. So two plugins of one package (a channel and a host plugin, say)
meet there::

    HUB = ServiceKey("my-package.hub", Hub)
    hub = host.shared.setdefault(HUB, Hub)   # the first caller makes it, every later one gets the same

A ``ServiceKey`` names the type of what it holds, so ``get`` and ``setdefault`` are typed, and a value of another
type is refused. It lives on this floor, below channels and plugins, because both hold it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["ServiceKey", "SharedObjects"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ServiceKey(Generic[T]):
    """The typed name of a host-wide object plugins share (``ServiceKey("mcp", MCPManager)``)."""

    name: str
    kind: type[T]


class SharedObjects:
    """Host-wide objects by ``ServiceKey`` (see the module docstring)."""

    def __init__(self) -> None:
        self._shared: dict[str, object] = {}

    def get(self, key: ServiceKey[T]) -> T | None:
        """The object shared under ``key``, if any."""
        found = self._shared.get(key.name)
        return self._checked(key, found) if found is not None else None

    def setdefault(self, key: ServiceKey[T], make: Callable[[], T]) -> T:
        """The object shared under ``key``, made with ``make()`` (and shared) on first use."""
        found = self._shared.get(key.name)
        if found is None:
            found = self._shared[key.name] = make()
        return self._checked(key, found)

    def put(self, key: ServiceKey[T], value: T) -> None:
        """Share ``value`` under ``key`` (replacing what was there); ``TypeError`` when it is not a ``key.kind``."""
        self._shared[key.name] = self._checked(key, value)

    @staticmethod
    def _checked(key: ServiceKey[T], value: object) -> T:
        if not isinstance(value, key.kind):
            raise TypeError(f"services[{key.name!r}] holds a {type(value).__name__}, not a {key.kind.__name__}")
        return value
