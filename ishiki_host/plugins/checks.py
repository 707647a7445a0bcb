"""The files plugins read themselves, checked for ``ishiki check``: ``ModelAPI.check`` and ``Extension.check``.

The host loads its own files (``ishiki.yaml``, ``models.yaml``, profiles, ``heartbeats.json``, skills); a
plugin may read more (the scripted model's rules file, the MCP extension's ``mcp.json``), and only it knows
how. ``plugin_checks`` asks each model API once per provider of ``models.yaml`` that uses it, and each
extension once per profile that enables it (a profile that could run: ready, waiting or skipped), for the
problems of those files, with the same config ``create`` would get.

A plugin's check is plugin code: one that raises anything, or returns something that is not a
``ConfigError``, is reported as a ``PluginLoadFailed`` naming the service, and the other checks still run.
The same error found for several profiles (one ``mcp.json`` shared by all) is reported once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from ishiki_host.config.services import PROVIDER_GROUP, service_name
from ishiki_host.errors import ConfigError, PluginLoadFailed
from ishiki_host.plugins.base import CheckContext

if TYPE_CHECKING:
    from ishiki_host.plugins.configdir import ConfigDir

__all__ = ["PluginChecks", "plugin_checks"]


@dataclass(frozen=True, slots=True)
class PluginChecks:
    """What the plugins found: ``models`` from model APIs, ``extensions`` from extensions."""

    models: tuple[ConfigError, ...] = ()
    extensions: tuple[ConfigError, ...] = ()


def plugin_checks(config: ConfigDir, env: Mapping[str, str] | None = None) -> PluginChecks:
    """Run every model API's and extension's ``check`` on ``config`` (see the module docstring)."""
    objects = _Objects(config)
    models: list[ConfigError] = []
    for provider in config.models.providers.values():
        service = service_name(PROVIDER_GROUP, provider.api)
        api = objects.get(service)
        if api is not None:
            models.extend(_guarded(service, partial(api.check, provider, config.root)))
    extensions: list[ConfigError] = []
    for state in config.profiles:
        if state.profile is None:
            continue
        ctx = CheckContext(config.root, state.profile) if env is None else CheckContext(config.root, state.profile, env)
        for use in state.profile.extends:
            extension = objects.get(use.service)
            if extension is not None:
                extensions.extend(_guarded(use.service, partial(extension.check, ctx, use.config)))
    return PluginChecks(_unique(models), _unique(extensions))


class _Objects:
    """One object of each loaded plugin class, made when first needed (``None`` when it cannot be made)."""

    def __init__(self, config: ConfigDir) -> None:
        self._registry = config.registry
        self._made: dict[str, Any] = {}

    def get(self, service: str) -> Any:
        if service not in self._made:
            cls = self._registry.plugin(service)
            self._made[service] = _make(cls) if cls is not None else None
        return self._made[service]


def _make(cls: Callable[[], Any]) -> Any:
    try:
        return cls()
    except Exception:  # a plugin that cannot be made is ``ishiki run``'s error to report, with its traceback
        return None


def _guarded(service: str, check: Callable[[], Iterable[object]]) -> Sequence[ConfigError]:
    """The errors ``check`` returns; what it raises or returns that is no ``ConfigError`` is the plugin's fault."""
    try:
        found = list(check())
    except Exception as exc:  # plugin code: one broken check must not end the others (nor ``ishiki check``)
        return [PluginLoadFailed(f"{service}: its check raised {type(exc).__name__}: {exc}", path=service)]
    wrong = [item for item in found if not isinstance(item, ConfigError)]
    if wrong:
        message = f"{service}: its check returned {type(wrong[0]).__name__}, not a ConfigError"
        return [PluginLoadFailed(message, path=service)]
    return [item for item in found if isinstance(item, ConfigError)]


def _unique(errors: Iterable[ConfigError]) -> tuple[ConfigError, ...]:
    seen: dict[tuple[Any, ...], ConfigError] = {}
    for error in errors:
        seen.setdefault((type(error), error.file, error.line, error.path, error.message), error)
    return tuple(seen.values())
