"""``ishiki new plugin``: a ready package rendered from the templates under ``scaffold/templates``.

The templates are package data: ``common/`` holds what every kind shares, ``<kind>/`` the kind's own files
(which win over common ones of the same path). Paths and contents are ``string.Template``s; in paths,
``__package__`` and ``__identifier__`` stand for the import package and the snake-case name. Files whose name
starts with one ``_`` are fragments inserted into others (``_usage.md`` becomes the README's usage section).
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from ishiki_host._version import __version__
from ishiki_host.errors import ScaffoldError
from ishiki_host.plugins.base import PLUGIN_API_VERSION
from ishiki_host.scaffold._names import PluginNames, plugin_names

__all__ = ["host_requirement", "render_plugin", "write_plugin"]

_SUFFIX = ".tmpl"
_EXTRA_DEPENDENCIES: Mapping[str, tuple[str, ...]] = {
    "channel": ("anyio>=4.4", "httpx>=0.27,<1"),
    "provider": ("httpx>=0.27,<1",),
    "host": ("anyio>=4.4",),
}
_TEST_DEPENDENCIES: Mapping[str, tuple[str, ...]] = {
    "host": ("httpx>=0.27,<1",),
}
_DESCRIPTIONS: Mapping[str, str] = {
    "context": "decides which facts of the conversation the model sees",
    "wakeup": "decides which messages start a turn",
    "toolcall": "shapes how the model is called",
    "extension": "adds a tool and a section of the system prompt",
    "channel": "connects a chat platform",
    "provider": "speaks a model service's wire protocol",
    "host": "serves a JSON page of the host's profiles",
}


def host_requirement(version: str = __version__) -> str:
    """The ``ishiki-host`` requirement of a new plugin: this host's version up to its next major."""
    major = int(version.split(".", 1)[0])
    return f"ishiki-host>={version},<{major + 1}"


def render_plugin(kind: str, name: str) -> dict[str, str]:
    """Relative path -> content of every file of the package ``ishiki new plugin KIND NAME`` writes."""
    names = plugin_names(kind, name)
    values = _values(names)
    files: dict[str, str] = {}
    for relative, source in _templates(kind):
        if _is_fragment(relative):
            continue
        path = relative.replace("__package__", names.package).replace("__identifier__", names.identifier)
        files[path] = _substitute(source.read_text(encoding="utf-8"), values, relative)
    return dict(sorted(files.items()))


def write_plugin(kind: str, name: str, parent: Path) -> Path:
    """Write the package into ``parent/<distribution>``; returns that directory.

    ``ScaffoldError`` when the name is invalid or the directory exists and is not empty (nothing is written).
    """
    files = render_plugin(kind, name)
    root = parent / plugin_names(kind, name).distribution
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} exists and is not empty: choose another --dir or name")
    try:
        for relative, content in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise ScaffoldError(f"cannot write {root}: {exc.strerror or exc}") from exc
    return root


def _values(names: PluginNames) -> dict[str, str]:
    kind = names.kind
    title = names.class_name.removesuffix(kind.suffix)
    dependencies = (host_requirement(), *_EXTRA_DEPENDENCIES.get(kind.kind, ()))
    test_dependencies = ("pytest>=8", *_TEST_DEPENDENCIES.get(kind.kind, ()))
    exports = sorted([names.class_name, *_instance_classes(kind.kind, title)])
    values = {
        "name": names.name,
        "identifier": names.identifier,
        "distribution": names.distribution,
        "package": names.package,
        "class_name": names.class_name,
        "title": title,
        "group": kind.group,
        "base": kind.base,
        "module": kind.module,
        "service": names.service,
        "target": names.target,
        "api_version": PLUGIN_API_VERSION,
        "summary": kind.summary,
        "description": f"{kind.summary.capitalize()} for Ishiki Host that {_DESCRIPTIONS[kind.kind]}.",
        "dependencies": ", ".join(f'"{d}"' for d in dependencies),
        "test_dependencies": ", ".join(f'"{d}"' for d in test_dependencies),
        "import_lines": "\n".join(f"    {e}," for e in exports),
        "all_lines": "\n".join(f'    "{e}",' for e in exports),
    }
    usage = next((source for relative, source in _templates(kind.kind) if relative == "_usage.md"), None)
    values["usage"] = _substitute(usage.read_text(encoding="utf-8"), values, "_usage.md") if usage else ""
    return values


def _is_fragment(relative: str) -> bool:
    name = Path(relative).name
    return name.startswith("_") and not name.startswith("__")


def _instance_classes(kind: str, title: str) -> tuple[str, ...]:
    """The classes besides the plugin class that a kind's module exports (its per-runtime instance...)."""
    return {
        "context": (f"{title}Window",),
        "wakeup": (f"{title}Wakeup",),
        "toolcall": (f"{title}Model", f"{title}Toolcall"),
        "extension": (title,),
        "channel": (f"{title}Connection",),
        "provider": (f"{title}Client",),
        "host": (f"{title}Server",),
    }[kind]


def _substitute(text: str, values: Mapping[str, str], where: str) -> str:
    try:
        return string.Template(text).substitute(values)
    except (KeyError, ValueError) as exc:  # a broken template is a bug of the host, named precisely
        raise ScaffoldError(f"template {where}: {type(exc).__name__}: {exc}") from exc


def _templates(kind: str) -> list[tuple[str, Traversable]]:
    """``(relative path without .tmpl, file)`` of ``common`` then ``kind``; the kind's file wins."""
    root = resources.files("ishiki_host.scaffold") / "templates"
    found: dict[str, Traversable] = {}
    for part in ("common", kind):
        for relative, source in _walk(root / part, ""):
            found[relative.removesuffix(_SUFFIX)] = source
    return sorted(found.items())


def _walk(directory: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
    for item in sorted(directory.iterdir(), key=lambda t: t.name):
        relative = f"{prefix}{item.name}"
        if item.is_dir():
            yield from _walk(item, f"{relative}/")
        elif item.name.endswith(_SUFFIX):
            yield relative, item
