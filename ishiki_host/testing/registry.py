"""``registry_with``: the installed services plus classes a test adds, without installing a distribution.

Each added class is checked against its group's contract like an entry point would be (a broken one is an
error record, as in ``ishiki plugins``). The records name the distribution ``tests`` (so they are never
built-in, and never on by default).
"""

from __future__ import annotations

from collections.abc import Mapping

from ishiki_host.plugins.discovery import PluginRegistry, ServiceRecord, discover
from ishiki_host.plugins.validate import check_plugin

__all__ = ["TEST_DISTRIBUTION", "registry_with"]

TEST_DISTRIBUTION = "tests"


def registry_with(plugins: Mapping[str, type], base: PluginRegistry | None = None) -> PluginRegistry:
    """``base`` (default: ``discover()``) plus ``plugins`` keyed by full service name (``ishiki.channel.fake``).

    An added service replaces one of the same name in ``base``.
    """
    base = discover() if base is None else base
    added: list[ServiceRecord] = []
    for full_name, cls in plugins.items():
        group, _, name = full_name.rpartition(".")
        target = f"{cls.__module__}:{cls.__qualname__}"
        problem = check_plugin(group, cls)
        if problem is None:
            added.append(ServiceRecord(group, name, target, TEST_DISTRIBUTION, "0", plugin=cls))
        else:
            kind, message = problem
            added.append(ServiceRecord(group, name, target, TEST_DISTRIBUTION, "0", "error", message, kind))
    kept = [r for r in base.records if r.full_name not in plugins]
    return PluginRegistry([*kept, *added])
