"""The class-level contract of plugins: one base class per entry-point group.

Every entry point of an Ishiki group names a *class* that subclasses the base class of its group. Discovery and
validation read only class attributes, so listing plugins or checking a config never runs plugin code beyond
the import of its module. The attributes every base shares (``config_schema``, ``api_version``, ``requires``)
come from ``Plugin`` (``ishiki_host.config.services``); ``config_schema`` is the schema of ``context.<name>``
(and ``wakeup.<name>``, ``toolcall.<name>``) for engines, of ``extends.<name>.config`` for extensions, of one
entry of ``channels.<platform>.accounts`` in ``ishiki.yaml`` for channels, and of a provider's extra keys in
``models.yaml`` for model APIs, of ``plugins.<name>`` in ``ishiki.yaml`` for host plugins. Extensions add:

- ``default_enabled``: on for every profile unless ``extends.<name>.enable: false``. Honoured only for
  services of the ``ishiki-host`` distribution, so installing a third-party package never changes every
  profile behind the operator's back.
- ``tool_names``: the names of every tool the extension may offer, when they are known without running it;
  ``None`` (the default) when its tools depend on the runtime (MCP servers, say). ``ishiki check`` uses them to
  report clashes before any turn runs (``ishiki_host.plugins.toolnames``).

One method beyond ``create`` is optional, and it is the only plugin code ``ishiki check`` runs: an extension's
``check(ctx, config)`` and a model API's ``check(provider, config_dir)`` report the problems of the files the
plugin reads itself (the MCP extension's ``mcp.json``, the scripted model's rules file) as ``ConfigError``s,
so ``ishiki check`` can say what ``ishiki run`` would log. They must only read: no processes, no network, no
writes. What they raise is reported as that plugin's error, never a crash of the check.

The host instantiates the class once and calls ``create`` once per runtime (per account for channels, per
provider for model APIs). ``Channel`` lives in ``ishiki_host.channels.base`` and ``ModelAPI`` in
``ishiki_host.gateway.api``, beside the contracts they speak, and ``HostPlugin`` (one per host, not per
runtime: ``create`` per start of the plugin) in ``ishiki_host.plugins.hostplugin``; all are re-exported here.
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ishiki_host.channels.base import Channel
from ishiki_host.config.services import PLUGIN_API_VERSION, Plugin, PluginConfig
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.plugins.hostplugin import HostPlugin

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.errors import ConfigError
    from ishiki_host.plugins.runtime_api import (
        ContextEngineInstance,
        RuntimeContext,
        ToolcallEngineInstance,
        WakeupEngineInstance,
    )

__all__ = [
    "GROUPS",
    "PLUGIN_API_VERSION",
    "Channel",
    "CheckContext",
    "ContextEngine",
    "Extension",
    "HostPlugin",
    "ModelAPI",
    "Plugin",
    "PluginConfig",
    "ToolcallEngine",
    "WakeupEngine",
]


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What ``Extension.check`` is told: the config directory, the profile that enables the extension, and the
    environment ``${VAR}`` references would be expanded from (``os.environ`` unless a test gives another)."""

    config_dir: Path
    profile: Profile
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


class ContextEngine(Plugin):
    """Base class of context engines (group ``ishiki.engine.context``): they project facts into messages."""

    @abstractmethod
    def create(self, ctx: RuntimeContext, config: PluginConfig) -> ContextEngineInstance:
        """Make this engine's instance for one runtime.

        ``ctx`` is the runtime as its plugins see it (fact log, models, clock, resource center...); ``config``
        is the validated ``context.<name>`` block with defaults.
        """


class WakeupEngine(Plugin):
    """Base class of wakeup engines (group ``ishiki.engine.wakeup``): they decide when a turn starts."""

    @abstractmethod
    def create(self, ctx: RuntimeContext, config: PluginConfig) -> WakeupEngineInstance:
        """Make this engine's instance for one runtime.

        ``ctx`` is the runtime as its plugins see it; ``config`` is the validated ``wakeup.<name>`` block with
        defaults.
        """


class ToolcallEngine(Plugin):
    """Base class of toolcall engines (group ``ishiki.engine.toolcall``): they wrap the profile's model."""

    @abstractmethod
    def create(self, ctx: RuntimeContext, config: PluginConfig) -> ToolcallEngineInstance:
        """Make this engine's model wrapper for one runtime.

        ``ctx`` is the runtime as its plugins see it (``ctx.model`` is the profile's shared underlying model; a
        wrapper never mutates it); ``config`` is the validated ``toolcall.<name>`` block with defaults.
        """


class Extension(Plugin):
    """Base class of extensions (group ``ishiki.ext``): tools, instructions, commands and resource schemes.

    The instance ``create`` returns is mounted on the runtime; it implements hooks of
    ``ishiki_host.plugins.hookspecs`` with ``@hookimpl``. An extension adds tools, instructions, commands,
    status lines and lifecycle; what a turn may use (trust, plugin switches) is the host's to decide.
    """

    default_enabled: ClassVar[bool] = False
    tool_names: ClassVar[tuple[str, ...] | None] = None

    @abstractmethod
    def create(self, ctx: RuntimeContext, config: PluginConfig) -> object:
        """Make this extension's instance for one runtime: any object with ``@hookimpl`` methods.

        ``ctx`` is the runtime as its plugins see it; ``config`` is the validated ``extends.<name>.config``
        block with defaults.
        """

    def check(self, ctx: CheckContext, config: PluginConfig) -> Sequence[ConfigError]:
        """The problems of the files this extension reads for ``ctx.profile`` (none by default).

        ``ishiki check`` calls it once per profile that enables the extension, with the same ``config`` that
        ``create`` would get. Only read files here: the check must not start anything.
        """
        return ()


GROUPS: Mapping[str, type[Plugin]] = {
    "ishiki.engine.context": ContextEngine,
    "ishiki.engine.wakeup": WakeupEngine,
    "ishiki.engine.toolcall": ToolcallEngine,
    "ishiki.ext": Extension,
    "ishiki.channel": Channel,
    "ishiki.provider": ModelAPI,
    "ishiki.host": HostPlugin,
}
"""Each entry-point group and the base class its entry points must subclass."""
