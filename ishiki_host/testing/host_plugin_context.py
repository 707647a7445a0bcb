"""``FakeHostPluginContext``: the host as a host plugin sees it, for unit tests of a plugin without a Host.

It implements ``ishiki_host.HostPluginContext``: the plugin is created with it and run in the test's own task
group, and the test sets what the plugin reads (``profile_statuses``, ``report``) and reads back what it asked
for (``reloads``)::

    async with serve_http() as ingress:
        ctx = FakeHostPluginContext(tmp_path, name="board", http=ingress)
        ctx.profile_statuses = (ProfileStatus("ana", "ready"),)
        server = Board().create(ctx, plugin_config(Board, {}))
        async with anyio.create_task_group() as tg:
            await tg.start(server.run)              # the plugin mounted /board on the loopback server
            ...                                      # httpx.get(f"{ingress.base_url}/board/status")
            tg.cancel_scope.cancel()

Without ``http`` (a running ``serve_http()``), entering ``http_mount()`` raises ``IngressError`` as a host without
``http.listen`` does; a name whose path the host serves itself (``hooks``, ``healthz``...) is refused as the
host refuses it. ``status()`` is a fresh copy of ``report`` when one is set, and otherwise a report shaped like
``ishiki status --json``'s, made from ``profiles`` and ``http`` on each call.

The rest of the host is what the test puts there: ``runtimes`` (the live runtimes by key, e.g. a
``TestHarness``'s ``runtime.context``; ``runtime_log(key)`` reads the log of one, while it is open) and
``tool_surfaces`` (what ``tools(key)`` lists), ``heartbeat_admin``
(``None``: a host without heartbeats), ``pairing_admin`` (``None``: a host without a memory database),
``installed_plugins``; ``logs`` is a real ``HostLogTail`` the test feeds with ``ctx.logs.write("WARNING", "disk
almost full")`` (or by logging through ``ctx.logs.installed()``).
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ishiki_host._version import __version__
from ishiki_host.config.host import HttpSettings
from ishiki_host.config.models import ModelsConfig
from ishiki_host.core.clock import Clock, FakeClock
from ishiki_host.errors import IngressError
from ishiki_host.ingress import HttpIngress
from ishiki_host.observe.activity import RecentActivity
from ishiki_host.observe.logtail import HostLogTail
from ishiki_host.plugins.hostplugin import RESERVED_PREFIXES, ProfileStatus
from ishiki_host.plugins.logview import FactLogView
from ishiki_host.plugins.services import HostServices

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.tools import Tool
    from ishiki_host.ingress.types import HttpMount
    from ishiki_host.jsontypes import Json
    from ishiki_host.plugins.hostplugin import (
        HeartbeatAdmin,
        HostPluginContext,
        InstalledPlugin,
        PairingAdmin,
        RuntimeLogView,
    )
    from ishiki_host.plugins.runtime_api import RuntimeContext

__all__ = ["FakeHostPluginContext"]


class FakeHostPluginContext:
    """A ``HostPluginContext`` a test controls (see the module docstring).

    ``root`` holds the plugin's ``state_dir`` (``root/state``, created on first access). The clock defaults to a
    ``FakeClock``, ``services`` to an empty ``HostServices()`` (no memory, no runtimes, no ``spawn``), the
    logger to ``ishiki_host.hostplugin.<name>``; no runtime is alive, no heartbeats, no pairing, nothing installed,
    no models, and the log tail is empty until the test writes to it.
    """

    def __init__(
        self,
        root: Path,
        *,
        name: str = "test",
        clock: Clock | None = None,
        logger: logging.Logger | None = None,
        http: HttpIngress | None = None,
        services: HostServices | None = None,
        profiles: tuple[ProfileStatus, ...] = (),
        report: Mapping[str, Json] | None = None,
        heartbeats: HeartbeatAdmin | None = None,
        pairing: PairingAdmin | None = None,
        installed: Sequence[InstalledPlugin] = (),
        models: ModelsConfig | None = None,
    ):
        self.name = name
        self.clock: Clock = clock or FakeClock()
        self.logger = logger or logging.getLogger(f"ishiki_host.hostplugin.{name}")
        self.http = http if http is not None else HttpIngress(HttpSettings())
        self.services = services if services is not None else HostServices()
        self.profile_statuses = profiles
        self.report = report
        self.reloads = 0
        self.runtimes: dict[RuntimeKey, RuntimeContext] = {}
        self.tool_surfaces: dict[RuntimeKey, Sequence[Tool]] = {}
        self.heartbeat_admin = heartbeats
        self.pairing_admin = pairing
        self.logs = HostLogTail()
        self.activity = RecentActivity(self.clock)  # the made report's ``activity``: a test may count turns into it
        self.installed_plugins = tuple(installed)
        self.models_config = models if models is not None else ModelsConfig()
        self._root = Path(root)
        self._started = self.clock.monotonic()

    @property
    def state_dir(self) -> Path:
        """``root/state``, created on first access."""
        path = self._root / "state"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def http_mount(self) -> HttpMount:
        """``/<name>`` on ``http``; ``IngressError`` for a path the host serves itself, and on entering it when
        ``http`` is not a running server."""
        prefix = f"/{self.name}"
        if prefix in RESERVED_PREFIXES:
            raise IngressError(f"cannot serve {prefix}: the host serves that path itself")
        return self.http.mount(prefix)

    def status(self) -> Mapping[str, Json]:
        """A fresh copy of ``report``, or (none set) a report made from ``profiles`` and ``http`` now."""
        return copy.deepcopy(dict(self.report)) if self.report is not None else self._made_report()

    def profiles(self) -> tuple[ProfileStatus, ...]:
        """``profile_statuses`` (pass ``profiles=``, or set it), sorted by id as the host sorts them."""
        return tuple(sorted(self.profile_statuses, key=lambda p: p.id))

    def request_reload(self) -> None:
        """Count the request (``reloads``); nothing reloads."""
        self.reloads += 1

    def runtime(self, key: RuntimeKey) -> RuntimeContext | None:
        """``runtimes[key]``, or ``None``."""
        return self.runtimes.get(key)

    async def runtime_log(self, key: RuntimeKey) -> RuntimeLogView | None:
        """A read-only view of ``runtimes[key].log`` while it is open, or ``None``."""
        runtime = self.runtimes.get(key)
        return FactLogView(key, runtime.log) if runtime is not None and not runtime.log.closed else None

    async def tools(self, key: RuntimeKey) -> Sequence[Tool] | None:
        """``tool_surfaces[key]``, or ``None``."""
        return self.tool_surfaces.get(key)

    @property
    def heartbeats(self) -> HeartbeatAdmin | None:
        """``heartbeat_admin`` (pass ``heartbeats=``, or set it)."""
        return self.heartbeat_admin

    @property
    def pairing(self) -> PairingAdmin | None:
        """``pairing_admin`` (pass ``pairing=``, or set it)."""
        return self.pairing_admin

    def installed(self) -> tuple[InstalledPlugin, ...]:
        """``installed_plugins``, sorted by group and name as the host sorts them."""
        return tuple(sorted(self.installed_plugins, key=lambda p: (p.group, p.name)))

    def models(self) -> ModelsConfig:
        """``models_config`` (pass ``models=``, or set it; empty by default), credentials hidden as the host
        hides them."""
        return self.models_config.redacted()

    def _made_report(self) -> dict[str, Json]:
        shown = self.profiles()
        return {
            "host": {
                "pid": os.getpid(),
                "phase": "running",
                "configDir": str(self._root / "config"),
                "dataDir": str(self._root / "data"),
                "version": __version__,
                "uptimeSeconds": round(self.clock.monotonic() - self._started, 3),
            },
            "profiles": {p.id: _profile_report(p) for p in shown},
            "routes": {p.id: sorted(str(k) for k in p.runtimes) for p in shown if p.state == "ready"},
            "channels": {},
            "plugins": {self.name: {"state": "running", "restarts": 0, "errors": 0, "error": None}},
            "gateway": {},
            "http": self.http.status(),
            "ready": _readiness(shown),
            "activity": self.activity.snapshot(),
        }


def _profile_report(profile: ProfileStatus) -> dict[str, Json]:
    return {
        "state": profile.state,
        "missing": list(profile.missing),
        "errors": [e.describe() for e in profile.errors],
        "runtimes": len(profile.runtimes),
    }


def _readiness(profiles: tuple[ProfileStatus, ...]) -> dict[str, Json]:
    problems = [] if any(p.state == "ready" for p in profiles) else ["no profile is active"]
    return {"ready": not problems, "problems": problems}


if TYPE_CHECKING:
    _CONTRACT: type[HostPluginContext] = FakeHostPluginContext  # mypy holds the fake to the contract
