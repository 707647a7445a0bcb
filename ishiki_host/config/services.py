"""What the config loaders need to know about installed services, without importing the plugin layer.

The loaders validate a service's config block with that service's own schema. They ask a ``ServiceCatalog``
(the plugin registry implements it) for a ``ServiceSpec``: the class-level facts of one loaded service.
``Plugin`` holds those facts on a class: every base class of an entry-point group derives from it (the
channel's in ``ishiki_host.channels.base``, the model API's in ``ishiki_host.gateway.api``, the engines' and
the extension's in ``ishiki_host.plugins.base``, the host plugin's in ``ishiki_host.plugins.hostplugin``).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

from ishiki_host.jsontypes import Json

__all__ = [
    "CHANNEL_GROUP",
    "ENGINE_GROUPS",
    "EXTENSION_GROUP",
    "HOST_GROUP",
    "PLUGIN_API_VERSION",
    "PROVIDER_GROUP",
    "Plugin",
    "PluginConfig",
    "ServiceCatalog",
    "ServiceSpec",
    "service_name",
]

PLUGIN_API_VERSION = "1.0"
"""The plugin-API version this host speaks; a plugin whose major differs is refused."""

PluginConfig = Mapping[str, Json]
"""A plugin's validated config block (its ``config_schema`` with defaults applied). Its values are arbitrary
JSON (``Json``): the schema, not the type, says what each key holds."""

ENGINE_GROUPS: Mapping[str, str] = {
    "context": "ishiki.engine.context",
    "wakeup": "ishiki.engine.wakeup",
    "toolcall": "ishiki.engine.toolcall",
}
"""Profile section -> entry-point group of its engines."""

EXTENSION_GROUP = "ishiki.ext"
CHANNEL_GROUP = "ishiki.channel"
PROVIDER_GROUP = "ishiki.provider"
HOST_GROUP = "ishiki.host"
"""Host plugins: whole-host services (a dashboard, an API) configured under ``plugins`` of ``ishiki.yaml``."""


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
    config_schema: Mapping[str, Json]
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


class Plugin(ABC):  # noqa: B024 - abstract by convention; each subclass declares its own ``create``
    """Class attributes every plugin class shares; discovery and validation read only these.

    - ``config_schema``: the JSON Schema (draft 2020-12) of the service's config block. Defaults written in it
      are applied before ``create`` sees the config.
    - ``api_version``: the plugin-API version the class was written for; a major the host does not speak is
      refused (``PluginAPIIncompatible``).
    - ``requires``: full service names this service needs in the same profile (e.g. the narrative context
      engine requires ``ishiki.engine.toolcall.narrative``).
    """

    config_schema: ClassVar[Mapping[str, Json]] = {"type": "object", "properties": {}, "additionalProperties": False}
    api_version: ClassVar[str] = PLUGIN_API_VERSION
    requires: ClassVar[tuple[str, ...]] = ()
