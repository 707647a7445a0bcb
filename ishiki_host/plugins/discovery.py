"""Finding the installed services: stevedore over the entry-point groups, one record per entry point.

Each group is loaded by a stevedore ``ExtensionManager`` with a failure callback, so an entry point that
raises on import (or names a missing module) becomes an ``error`` record and never stops the others. A loaded
object is then checked against the class-level contract of ``ishiki_host.plugins.base``: a class, of the
group's base class, with a plugin-API major this host speaks and a valid ``config_schema``.

Entry points are read fresh from ``importlib.metadata`` on every ``discover`` (stevedore's own caches would
hide a plugin installed while the host runs) and keep their distribution's name and version.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from stevedore import ExtensionManager

from ishiki_host.config.services import EXTENSION_GROUP, PROVIDER_GROUP, ServiceSpec, service_name
from ishiki_host.errors import ConfigError, PluginAPIIncompatible, PluginLoadFailed
from ishiki_host.jsontypes import Json
from ishiki_host.plugins.base import GROUPS
from ishiki_host.plugins.hostplugin import InstalledPlugin
from ishiki_host.plugins.validate import check_plugin

__all__ = ["BUILTIN_DISTRIBUTION", "PluginRegistry", "ServiceRecord", "discover"]

BUILTIN_DISTRIBUTION = "ishiki-host"
"""Only services of this distribution may be ``default_enabled``."""

ErrorKind = Literal["load", "invalid", "incompatible", "conflict"]


@dataclass(frozen=True, slots=True)
class ServiceRecord:
    """One entry point of an Ishiki group: where it comes from and whether it loaded.

    ``plugin`` is the loaded class when ``status`` is ``ok``; ``error`` is a one-line reason otherwise, and
    ``error_kind`` says which: it failed to import (``load``), broke the contract (``invalid``), declared an
    API major this host does not speak (``incompatible``), or shares its name with another distribution's
    entry point (``conflict``).
    """

    group: str
    name: str
    target: str
    distribution: str | None
    version: str | None
    status: Literal["ok", "error"] = "ok"
    error: str | None = None
    error_kind: ErrorKind | None = None
    plugin: Any = field(default=None, compare=False, repr=False)

    @property
    def full_name(self) -> str:
        """``<group>.<name>``."""
        return service_name(self.group, self.name)

    @property
    def builtin(self) -> bool:
        """Whether the service ships with the host itself."""
        return _canonical(self.distribution or "") == BUILTIN_DISTRIBUTION

    def as_dict(self) -> dict[str, Json]:
        """The JSON shape of ``ishiki plugins --json``."""
        return {
            "service": self.full_name,
            "group": self.group,
            "name": self.name,
            "target": self.target,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "error": self.error,
        }

    def as_installed(self) -> InstalledPlugin:
        """The record as host plugins see it (``HostPluginContext.installed``)."""
        return InstalledPlugin(self.group, self.name, self.target, self.distribution, self.version, self.error)

    def as_error(self) -> ConfigError:
        """The failure as a ``ConfigError`` (``PluginAPIIncompatible`` or ``PluginLoadFailed``)."""
        cls = PluginAPIIncompatible if self.error_kind == "incompatible" else PluginLoadFailed
        source = f"{self.distribution} {self.version}" if self.distribution else "unknown distribution"
        return cls(f"{self.full_name} ({source}): {self.error}", path=self.full_name)


class PluginRegistry:
    """The services found by ``discover``; also the ``ServiceCatalog`` the config loaders ask."""

    def __init__(self, records: Iterable[ServiceRecord]) -> None:
        self.records: tuple[ServiceRecord, ...] = tuple(sorted(records, key=lambda r: (r.group, r.name)))
        self._by_name = {r.full_name: r for r in self.records}
        self._specs: dict[str, ServiceSpec] = {}

    def record(self, full_name: str) -> ServiceRecord | None:
        """The record of ``full_name`` (loaded or not)."""
        return self._by_name.get(full_name)

    def plugin(self, full_name: str) -> Any:
        """The class of a service that loaded, or ``None``."""
        record = self._by_name.get(full_name)
        return record.plugin if record is not None and record.status == "ok" else None

    def spec(self, full_name: str) -> ServiceSpec | None:
        """The ``ServiceSpec`` of a service that loaded, or ``None``."""
        if full_name in self._specs:
            return self._specs[full_name]
        record = self._by_name.get(full_name)
        if record is None or record.status != "ok":
            return None
        cls = record.plugin
        spec = ServiceSpec(
            full_name=full_name,
            config_schema=cls.config_schema,
            requires=tuple(getattr(cls, "requires", ())),
            default_enabled=record.group == EXTENSION_GROUP
            and record.builtin
            and bool(getattr(cls, "default_enabled", False)),
            needs_base_url=record.group == PROVIDER_GROUP and bool(getattr(cls, "needs_base_url", False)),
            tool_names=_tool_names(cls) if record.group == EXTENSION_GROUP else None,
        )
        self._specs[full_name] = spec
        return spec

    def names(self, group: str) -> tuple[str, ...]:
        """Names of the services of ``group`` that loaded."""
        return tuple(r.name for r in self.records if r.group == group and r.status == "ok")

    def default_extensions(self) -> tuple[str, ...]:
        """Built-in extensions that are on unless a profile disables them."""
        return tuple(
            n for n in self.names(EXTENSION_GROUP) if (s := self.spec(f"{EXTENSION_GROUP}.{n}")) and s.default_enabled
        )

    def installed(self) -> tuple[InstalledPlugin, ...]:
        """Every record (loaded or not) as an ``InstalledPlugin``, sorted by group and name: what ``ishiki
        plugins`` lists."""
        return tuple(record.as_installed() for record in self.records)

    @property
    def errors(self) -> tuple[ServiceRecord, ...]:
        """The records that failed."""
        return tuple(r for r in self.records if r.status == "error")


class _GivenEntryPoints(ExtensionManager[Any]):
    """stevedore's manager over entry points read by ``discover`` (its public ``list_entry_points`` gives them,
    bypassing stevedore's process-wide cache, which would hide a plugin installed while the host runs)."""

    def __init__(self, namespace: str, entry_points: list[Json], callback: Any) -> None:
        self._given = [_GuardedEntryPoint(ep) for ep in entry_points]
        super().__init__(namespace, invoke_on_load=False, on_load_failure_callback=callback)

    def list_entry_points(self) -> list[Json]:
        """The entry points ``discover`` read, each loading through ``_GuardedEntryPoint``."""
        return list(self._given)


class _GuardedEntryPoint:
    """An entry point whose ``load`` raises what stevedore hands to the failure callback.

    stevedore re-raises an ``AssertionError`` from an import, and ``SystemExit`` is no ``Exception``: either
    would stop the host. Both become ``_FatalImport`` here, which stevedore reports like any load failure.
    """

    def __init__(self, entry_point: Any) -> None:
        self.entry_point = entry_point
        self.name: str = entry_point.name
        self.value: str = entry_point.value
        self.group: str = entry_point.group

    def load(self) -> Any:
        """The entry point's object; ``_FatalImport`` for an import that asserts or exits."""
        try:
            return self.entry_point.load()
        except (AssertionError, SystemExit) as exc:
            raise _FatalImport(exc) from exc


class _FatalImport(Exception):
    """Carries an import failure stevedore would not hand to the failure callback."""

    def __init__(self, original: BaseException) -> None:
        self.original = original
        super().__init__(str(original))


def discover(groups: Iterable[str] = GROUPS) -> PluginRegistry:
    """Load every entry point of ``groups`` and record each one's outcome. Never raises for a bad plugin."""
    found = _entry_points(set(groups))
    records: list[ServiceRecord] = []
    for group, entries in found.items():
        origin = {id(ep): (dist, version) for ep, dist, version in entries}
        failures: list[ServiceRecord] = []
        manager = _GivenEntryPoints(group, [ep for ep, _, _ in entries], _recorder(group, origin, failures))
        for ext in manager.extensions:
            guarded: Any = ext.entry_point  # stevedore types it as the EntryPoint it thinks it was given
            dist, version = origin.get(id(guarded.entry_point), (None, None))
            records.append(
                _checked(ServiceRecord(group, ext.name, ext.entry_point.value, dist, version, plugin=ext.plugin))
            )
        records.extend(failures)
    return PluginRegistry(_conflicts(records))


def _recorder(group: str, origin: dict[int, tuple[str | None, str | None]], failures: list[ServiceRecord]) -> Any:
    """stevedore's failure callback: record the entry point that failed to load, with its distribution."""

    def failed(_manager: Any, ep: Any, exc: BaseException) -> None:
        dist, version = origin.get(id(ep.entry_point), (None, None))
        failures.append(ServiceRecord(group, ep.name, ep.value, dist, version, "error", _one_line(exc), "load"))

    return failed


def _entry_points(groups: set[str]) -> dict[str, list[tuple[Any, str | None, str | None]]]:
    """Entry points of ``groups`` with their distribution, first occurrence on ``sys.path`` first."""
    importlib.invalidate_caches()
    found: dict[str, list[tuple[Any, str | None, str | None]]] = {g: [] for g in sorted(groups)}
    seen: set[tuple[str, str, str]] = set()
    for dist in importlib.metadata.distributions():
        ours = [ep for ep in dist.entry_points if ep.group in groups]
        if not ours:
            continue
        name = dist.metadata["Name"]
        for ep in ours:
            key = (ep.group, ep.name, _canonical(name or ""))
            if key not in seen:
                seen.add(key)
                found[ep.group].append((ep, name, dist.version))
    return found


def _checked(record: ServiceRecord) -> ServiceRecord:
    problem = check_plugin(record.group, record.plugin)
    if problem is None:
        return record
    kind, message = problem
    return ServiceRecord(
        record.group, record.name, record.target, record.distribution, record.version, "error", message, kind
    )


def _conflicts(records: list[ServiceRecord]) -> list[ServiceRecord]:
    """Entry points sharing a group and name across distributions all become errors: neither may win silently."""
    by_name: dict[str, list[ServiceRecord]] = {}
    for record in records:
        by_name.setdefault(record.full_name, []).append(record)
    result: list[ServiceRecord] = []
    for same in by_name.values():
        if len(same) == 1:
            result.extend(same)
            continue
        owners = ", ".join(sorted(str(r.distribution) for r in same))
        message = f"registered by several distributions ({owners}); uninstall all but one"
        result.extend(
            ServiceRecord(r.group, r.name, r.target, r.distribution, r.version, "error", message, "conflict")
            for r in same
        )
    return result


def _one_line(exc: BaseException) -> str:
    exc = exc.original if isinstance(exc, _FatalImport) else exc
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _tool_names(cls: Any) -> tuple[str, ...] | None:
    """An extension class's declared tool names (checked by ``validate`` when the class loaded)."""
    names = getattr(cls, "tool_names", None)
    return None if names is None else tuple(names)
