"""What a running host says about itself: readiness (``/readyz``), the state its scrape-time metrics read, and
the report ``ishiki status`` prints.

``readiness_problems`` is empty when the host has started, some profile is active and every channel its
active profiles claim is up (``ChannelSet.not_up``); otherwise it says what is not, one line each.
``host_report`` is ``Host.status()`` with the process (pid, directories, version, uptime), each profile's
missing services and errors, the runtimes alive and the readiness added; a supervisor's ``gateway`` is its
workers' and its own, merged (``ishiki_host.observe.fleetstatus.merged_gateway``). ``profile_statuses`` is the typed
view of the profiles that host plugins get (``HostPluginContext.profiles``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ishiki_host._version import __version__
from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.observe.fleetstatus import merged_gateway
from ishiki_host.observe.state import HostState
from ishiki_host.plugins.hostplugin import ProfileStatus

if TYPE_CHECKING:
    from ishiki_host.host.host import Host

__all__ = ["host_report", "host_state", "profile_statuses", "readiness_problems"]


def readiness_problems(host: Host) -> list[str]:
    """Why ``host`` is not ready, one line each; empty when it is (see the module docstring)."""
    if host.phase != "running":
        return [f"the host is {host.phase}"]
    if not len(host.routes):
        return ["no profile is active"]
    return host.channels.not_up()


def host_state(host: Host) -> HostState:
    """What ``/metrics`` reads at a scrape."""
    return HostState(
        profiles={p.id: p.state for p in host.config.profiles},
        runtimes={profile: len(keys) for profile, keys in _alive(host).items()},
        channels=host.channels.status(),
        gateway=host.gateways.gateway.status(),
    )


def host_report(host: Host, started_at: float) -> dict[str, Any]:
    """The report of ``ishiki status`` (JSON); ``started_at`` is the clock's monotonic time at the start."""
    status = host.status()
    if "workers" in status:  # the supervisor's: its workers make the calls
        status["gateway"] = merged_gateway([status["gateway"], *(w.get("gateway", {}) for w in status["workers"])])
    problems = readiness_problems(host)
    status["host"] = {
        "pid": os.getpid(),
        "phase": host.phase,
        "configDir": str(host.root.resolve()),
        "dataDir": str(host.config.host.data_dir.resolve()),
        "version": __version__,
        "uptimeSeconds": round(host.clock.monotonic() - started_at, 3),
    }
    status["profiles"] = {
        p.id: {
            "state": p.state,
            "missing": list(p.missing),
            "errors": [e.describe() for e in p.errors],
            "runtimes": len(status["routes"].get(p.id, ())),
        }
        for p in host.config.profiles
    }
    status["ready"] = {"ready": not problems, "problems": problems}
    return status


def profile_statuses(host: Host) -> tuple[ProfileStatus, ...]:
    """Every profile directory of ``host`` with its state, what it misses, its errors, its runtimes alive and
    the profile as loaded (``None`` when it did not load)."""
    alive = _alive(host)
    return tuple(
        ProfileStatus(p.id, p.state, tuple(p.missing), tuple(p.errors), alive.get(p.id, ()), p.profile)
        for p in sorted(host.config.profiles, key=lambda p: p.id)
    )


def _alive(host: Host) -> dict[str, tuple[RuntimeKey, ...]]:
    """The live runtime keys by active profile: this process's, or the workers' as they said last."""
    if host.role.runtimes is None:
        return {route.profile.id: tuple(sorted(route.runtimes, key=str)) for route in host.routes}
    parsed = {profile: (RuntimeKey.parse(k) for k in keys) for profile, keys in host.role.runtimes().items()}
    return {profile: tuple(k for k in keys if k is not None) for profile, keys in parsed.items()}
