"""What the config loaders need to know about installed services, without importing the plugin layer.

The loaders validate a service's config block with that service's own schema. They ask a ``ServiceCatalog``
(the plugin registry implements it) for a ``ServiceSpec``: the class-level facts of one loaded service.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["ServiceCatalog", "ServiceSpec", "service_name"]

ENGINE_GROUPS: Mapping[str, str] = {
    "context": "ishiki.engine.context",
    "wakeup": "ishiki.engine.wakeup",
    "toolcall": "ishiki.engine.toolcall",
}
"""Profile section -> entry-point group of its engines."""

EXTENSION_GROUP = "ishiki.ext"
CHANNEL_GROUP = "ishiki.channel"
PROVIDER_GROUP = "ishiki.provider"


def service_name(group: str, name: str) -> str:
    """The full service name ``<group>.<name>``."""
    return f"{group}.{name}"


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """The facts of one loaded service that validation uses.

    ``default_enabled`` is already filtered: true only for a built-in extension that asks for it.
    ``tool_names``: the tools an extension declares it may offer (``None``: not known before it runs).
    """

    full_name: str
    config_schema: Mapping[str, Any]
    requires: tuple[str, ...] = ()
    default_enabled: bool = False
    needs_base_url: bool = False
    tool_names: tuple[str, ...] | None = None


class ServiceCatalog(Protocol):
    """The services that loaded, as the loaders see them."""

    def spec(self, full_name: str) -> ServiceSpec | None:
        """The spec of a service that loaded without error, or ``None``."""
        ...

    def names(self, group: str) -> tuple[str, ...]:
        """The names (not full names) of the services of ``group`` that loaded, sorted."""
        ...

    def default_extensions(self) -> tuple[str, ...]:
        """Names of the extensions that are on for every profile unless disabled, sorted."""
        ...
