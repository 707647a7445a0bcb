"""The plugin kinds ``ishiki new plugin`` knows, and the names a scaffold derives from NAME.

Naming scheme: NAME (lower-case letters and digits, words joined by ``-`` or ``_``) is the entry-point name
people type in their config. The distribution is ``ishiki-<prefix>-<name>`` (``ishiki-ext-weather``), the import
package ``ishiki_<prefix>_<name>`` (``ishiki_ext_weather``) and the class ``<Name><Suffix>``
(``WeatherExtension``); the prefix and suffix depend on the kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ishiki_host.errors import ScaffoldError
from ishiki_host.plugins.hostplugin import RESERVED_PREFIXES

__all__ = ["KINDS", "PluginKind", "PluginNames", "name_problem", "plugin_names"]

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
MAX_NAME = 24


@dataclass(frozen=True, slots=True)
class PluginKind:
    """One kind of plugin: its entry-point group, base class, distribution prefix and class-name suffix."""

    kind: str
    group: str
    base: str
    prefix: str
    suffix: str
    module: str
    summary: str


KINDS: Mapping[str, PluginKind] = {
    k.kind: k
    for k in (
        PluginKind(
            "context",
            "ishiki.engine.context",
            "ContextEngine",
            "context",
            "ContextEngine",
            "engine",
            "a context engine",
        ),
        PluginKind(
            "wakeup", "ishiki.engine.wakeup", "WakeupEngine", "wakeup", "WakeupEngine", "engine", "a wakeup engine"
        ),
        PluginKind(
            "toolcall",
            "ishiki.engine.toolcall",
            "ToolcallEngine",
            "toolcall",
            "ToolcallEngine",
            "engine",
            "a toolcall engine",
        ),
        PluginKind("extension", "ishiki.ext", "Extension", "ext", "Extension", "extension", "an extension"),
        PluginKind("channel", "ishiki.channel", "Channel", "channel", "Channel", "channel", "a channel"),
        PluginKind("provider", "ishiki.provider", "ModelAPI", "provider", "API", "api", "a model API"),
        PluginKind("host", "ishiki.host", "HostPlugin", "host", "Plugin", "plugin", "a host plugin"),
    )
}
"""Every kind ``ishiki new plugin`` writes, by the word used on the command line."""


@dataclass(frozen=True, slots=True)
class PluginNames:
    """Everything a scaffold names after NAME (see the module docstring)."""

    kind: PluginKind
    name: str
    identifier: str
    distribution: str
    package: str
    class_name: str

    @property
    def service(self) -> str:
        """The full service name, ``<group>.<name>``."""
        return f"{self.kind.group}.{self.name}"

    @property
    def target(self) -> str:
        """The entry point's object reference, ``package:Class``."""
        return f"{self.package}:{self.class_name}"


def plugin_names(kind: str, name: str) -> PluginNames:
    """The names of a plugin of ``kind`` called ``name``; ``ScaffoldError`` says what is wrong with either."""
    if kind not in KINDS:
        raise ScaffoldError(f"unknown plugin kind {kind!r} (one of: {', '.join(KINDS)})")
    problem = name_problem(name)
    if problem:
        raise ScaffoldError(f"bad plugin name {name!r}: {problem}")
    spec = KINDS[kind]
    if spec.group == "ishiki.host":
        _check_mount(name)
    identifier = name.replace("-", "_")
    words = identifier.split("_")
    return PluginNames(
        kind=spec,
        name=name,
        identifier=identifier,
        distribution=f"ishiki-{spec.prefix}-{'-'.join(words)}",
        package=f"ishiki_{spec.prefix}_{identifier}",
        class_name="".join(w.capitalize() for w in words) + spec.suffix,
    )


def _check_mount(name: str) -> None:
    """A host plugin is served at ``/<name>``: refuse a name whose path is the host's own."""
    if f"/{name}" in RESERVED_PREFIXES:
        raise ScaffoldError(
            f"bad plugin name {name!r}: the host serves /{name} itself, and a host plugin is served there"
        )


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an entry-point name that is also a Python identifier once ``-`` becomes ``_``."""
    if not name:
        return "it is empty"
    if len(name) > MAX_NAME:
        return f"it is longer than {MAX_NAME} characters"
    if name != name.lower() and _NAME.match(name.lower()):
        return f"use lower case ({name.lower()!r}): people type it in their config"
    if not _NAME.match(name):
        return (
            "use lower-case ASCII letters and digits, starting with a letter, with words joined by one '-' or '_' "
            "(e.g. 'weather' or 'my-memory')"
        )
    return None
