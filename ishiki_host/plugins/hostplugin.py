"""The contract of host plugins (entry-point group ``ishiki.host``): whole-host services such as a dashboard or an
API of one's own, beside the profiles rather than inside a runtime.

A host plugin is a ``HostPlugin`` subclass named by an entry point of ``ishiki.host``; it runs only when
``ishiki.yaml`` configures it (``plugins: {<name>: {...}}``, the block checked against its ``config_schema``).
The host calls ``create(ctx, config)`` once per start of the plugin and runs the instance's
``run(task_status=...)`` in its own task group, under a supervisor as a channel's connection is: ready once
``task_status.started()`` is called (within 60 s), restarted with back-off when it raises, reported once and
left stopped when it raises a fatal error (``HostPluginError`` whose ``fatal`` is true, ``IngressError``, a
``ConfigError``), finished when ``run`` returns. It starts after the host's HTTP server and before the channels,
and stops after the channels, before the HTTP server. A reload that changes its block restarts it; one that
removes the block stops it.

Everything the plugin sees of the host is its ``HostPluginContext``: the clock, a logger, a state directory,
an HTTP mount at ``/<name>``, the host's shared services, a read-only view of the host and a way to ask for
a reload. It never holds the ``Host`` itself.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ishiki_host.config.services import Plugin, PluginConfig
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    import logging
    from pathlib import Path

    from anyio.abc import TaskStatus

    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.clock import Clock
    from ishiki_host.errors import ConfigError
    from ishiki_host.ingress.types import HttpMount
    from ishiki_host.plugins.services import HostServices

__all__ = ["RESERVED_PREFIXES", "HostPlugin", "HostPluginContext", "HostPluginInstance", "ProfileStatus"]

RESERVED_PREFIXES = frozenset({"/hooks", "/healthz", "/readyz", "/metrics"})
"""Paths of the host's own (channels' webhooks, health, readiness, metrics) that no host plugin may mount: a
plugin is served at ``/<name>``, so these names are refused (by the host, its test context and the scaffold)."""


@dataclass(frozen=True, slots=True)
class ProfileStatus:
    """One profile directory as the host sees it now (``HostPluginContext.profiles``).

    ``state`` is ``ready`` (active), ``waiting`` (``missing`` lists the services it needs), ``invalid``
    (``errors`` say why, each with its file and line), ``skipped`` or ``disabled``; ``runtimes`` are the keys
    of its runtimes alive (empty unless it is active).
    """

    id: str
    state: str
    missing: tuple[str, ...] = ()
    errors: tuple[ConfigError, ...] = ()
    runtimes: tuple[RuntimeKey, ...] = ()


class HostPluginInstance(Protocol):
    """What ``HostPlugin.create`` returns: one life of the plugin, run by the host's supervisor."""

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        """Serve until cancelled: mount routes, start work, then call ``task_status.started()`` once ready.

        Raise ``HostPluginUnavailable`` for a passing trouble (restarted with back-off) and ``HostPluginError``
        (fatal) for what the operator must fix; returning means the plugin finished and is not restarted.
        """
        ...


class HostPluginContext(Protocol):
    """What a host plugin sees of its host (see the module docstring)."""

    @property
    def name(self) -> str:
        """The plugin's entry-point name, as written under ``plugins`` of ``ishiki.yaml``."""
        ...

    @property
    def clock(self) -> Clock:
        """The host's clock (a ``FakeClock`` in tests): use it for every sleep and timestamp."""
        ...

    @property
    def logger(self) -> logging.Logger:
        """The plugin's logger, ``ishiki_host.hostplugin.<name>``."""
        ...

    @property
    def state_dir(self) -> Path:
        """The plugin's own directory, ``<data_dir>/plugins/<name>`` (created on first access); it survives
        restarts and reloads."""
        ...

    @property
    def services(self) -> HostServices:
        """What the host shares with every plugin: the memory database (``services.memory``), the runtimes
        (``services.runtimes.runtime_for``), host-wide work (``services.spawn``) and shared objects by key."""
        ...

    def http_mount(self) -> HttpMount:
        """A mount at ``/<name>`` on the host's HTTP server, held while its ``async with`` runs; entering it
        raises ``IngressError`` (fatal) when the host serves no HTTP or the prefix is taken (``/hooks`` and the
        host's own routes are)."""
        ...

    def status(self) -> Mapping[str, Json]:
        """The host's report as ``ishiki status --json`` prints it: ``host`` (pid, phase, directories, version,
        uptime), ``profiles`` (state, missing services, errors, runtimes alive), ``routes``, ``channels``,
        ``plugins``, ``gateway``, ``http`` and ``ready``. A fresh snapshot on each call."""
        ...

    def profiles(self) -> tuple[ProfileStatus, ...]:
        """Every profile directory with its state and its runtimes alive, sorted by id."""
        ...

    def request_reload(self) -> None:
        """Ask the host to reload its config directory soon (in its own task: a reload may restart this
        plugin, so it never runs in the plugin's task). Returns at once."""
        ...


class HostPlugin(Plugin):
    """Base class of host plugins (group ``ishiki.host``; see the module docstring).

    ``config_schema`` is the schema of ``plugins.<name>`` in ``ishiki.yaml`` (an empty block when the name is
    written without one); its defaults are applied before ``create`` sees it.
    """

    @abstractmethod
    def create(self, ctx: HostPluginContext, config: PluginConfig) -> HostPluginInstance:
        """Make one life of the plugin: the host runs its ``run`` and makes a new one for each restart.

        ``ctx`` is the host as the plugin sees it; ``config`` is the validated ``plugins.<name>`` block with
        defaults. Keep it quick and free of I/O: start things in ``run``.
        """
