"""The class-level contract of plugins: one base class per entry-point group.

Every entry point of an Ishiki group names a *class* that subclasses the base class of its group. Discovery and
validation read only class attributes, so listing plugins or checking a config never runs plugin code beyond
the import of its module:

- ``config_schema``: the JSON Schema (draft 2020-12) of the service's config block: ``context.<name>`` (and
  ``wakeup.<name>``, ``toolcall.<name>``) for engines, ``extends.<name>.config`` for extensions, one entry of
  ``channels.<platform>.accounts`` in ``ishiki.yaml`` for channels, a provider's extra keys in ``models.yaml``
  for model APIs. Defaults written in it are applied before ``create`` sees the config.
- ``api_version``: the plugin-API version the class was written for; a major the host does not speak is
  refused (``PluginAPIIncompatible``).
- ``requires``: full service names this service needs in the same profile (e.g. the narrative context engine
  requires ``ishiki.engine.toolcall.narrative``).
- ``default_enabled`` (extensions): on for every profile unless ``extends.<name>.enable: false``. Honoured only
  for services of the ``ishiki-host`` distribution, so installing a third-party package never changes every
  profile behind the operator's back.
- ``tool_names`` (extensions): the names of every tool the extension may offer, when they are known without
  running it; ``None`` (the default) when its tools depend on the runtime (MCP servers, say). ``ishiki check``
  uses them to report clashes before any turn runs (``ishiki_host.plugins.toolnames``).

The host instantiates the class once and calls ``create`` once per runtime. ``ModelAPI`` (group
``ishiki.provider``) lives in ``ishiki_host.gateway.api`` and is re-exported here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from ishiki_host.gateway.api import ModelAPI

__all__ = [
    "GROUPS",
    "PLUGIN_API_VERSION",
    "Channel",
    "ContextEngine",
    "Extension",
    "ModelAPI",
    "Plugin",
    "ToolcallEngine",
    "WakeupEngine",
]

PLUGIN_API_VERSION = "1.0"
"""The plugin-API version this host speaks; a plugin whose major differs is refused."""


class Plugin(ABC):  # noqa: B024 - abstract by convention; each subclass declares its own ``create``
    """Class attributes shared by engines, extensions and channels (see the module docstring)."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "object", "properties": {}, "additionalProperties": False}
    api_version: ClassVar[str] = PLUGIN_API_VERSION
    requires: ClassVar[tuple[str, ...]] = ()


class ContextEngine(Plugin):
    """Base class of context engines (group ``ishiki.engine.context``): they project facts into messages."""

    @abstractmethod
    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        """Make this engine's instance for one runtime.

        ``ctx`` is the runtime's host context (the ``RuntimeContext`` the runtime defines: fact log, model
        gateway, clock, resource center); ``config`` is the validated ``context.<name>`` block with defaults.
        """


class WakeupEngine(Plugin):
    """Base class of wakeup engines (group ``ishiki.engine.wakeup``): they decide when a turn starts."""

    @abstractmethod
    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        """Make this engine's instance for one runtime.

        ``ctx`` is the runtime's host context (the ``RuntimeContext`` the runtime defines); ``config`` is the
        validated ``wakeup.<name>`` block with defaults.
        """


class ToolcallEngine(Plugin):
    """Base class of toolcall engines (group ``ishiki.engine.toolcall``): they wrap the profile's model."""

    @abstractmethod
    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        """Make this engine's model wrapper for one runtime.

        ``ctx`` is the runtime's host context (the ``RuntimeContext`` the runtime defines, which carries the
        profile's shared underlying model; a wrapper never mutates it); ``config`` is the validated
        ``toolcall.<name>`` block with defaults.
        """


class Extension(Plugin):
    """Base class of extensions (group ``ishiki.ext``): tools, instructions, commands and resource schemes.

    The instance ``create`` returns is registered in the runtime's plugin manager; it implements hooks of
    ``ishiki_host.plugins.hookspecs`` with ``@hookimpl``.
    """

    default_enabled: ClassVar[bool] = False
    tool_names: ClassVar[tuple[str, ...] | None] = None

    @abstractmethod
    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        """Make this extension's instance for one runtime.

        ``ctx`` is the runtime's host context (the ``RuntimeContext`` the runtime defines); ``config`` is the
        validated ``extends.<name>.config`` block with defaults.
        """


class Channel(Plugin):
    """Base class of channels (group ``ishiki.channel``): a chat platform's input and output.

    The entry-point name is the platform (``telegram`` claims ``telegram:<selfId>``); ``config_schema`` is the
    schema of one account entry of ``channels.<platform>.accounts`` in ``ishiki.yaml``.
    """

    @abstractmethod
    def create(self, ctx: Any, account: Mapping[str, Any]) -> Any:
        """Make the channel for one account.

        ``ctx`` is the host's channel context (defined by the runtime: event sink, resource capture, clock);
        ``account`` is the validated account entry with defaults.
        """


GROUPS: Mapping[str, type] = {
    "ishiki.engine.context": ContextEngine,
    "ishiki.engine.wakeup": WakeupEngine,
    "ishiki.engine.toolcall": ToolcallEngine,
    "ishiki.ext": Extension,
    "ishiki.channel": Channel,
    "ishiki.provider": ModelAPI,
}
"""Each entry-point group and the base class its entry points must subclass."""
