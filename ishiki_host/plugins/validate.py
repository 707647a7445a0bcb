"""Checking a loaded entry-point object against the class-level contract of its group (see ``base``)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Literal

from ishiki_host.plugins.base import GROUPS, PLUGIN_API_VERSION

__all__ = ["check_plugin", "compatible_api"]

Problem = tuple[Literal["invalid", "incompatible"], str]


def compatible_api(version: object) -> bool:
    """Whether a declared plugin-API version has this host's major (``1.x`` for host ``1.0``)."""
    if not isinstance(version, str):
        return False
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) == int(PLUGIN_API_VERSION.split(".", 1)[0])


def check_plugin(group: str, obj: Any) -> Problem | None:
    """Why ``obj`` cannot serve as a service of ``group``, or ``None`` when it can."""
    base = GROUPS[group]
    if not inspect.isclass(obj):
        return "invalid", f"the entry point names {_kind(obj)}, not a class (subclass {base.__name__})"
    if not issubclass(obj, base):
        return "invalid", f"{obj.__qualname__} is not a subclass of {base.__module__}.{base.__name__}"
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(getattr(obj, "__abstractmethods__", ())))
        return "invalid", f"{obj.__qualname__} does not implement {missing}"
    version = getattr(obj, "api_version", None)
    if not compatible_api(version):
        return "incompatible", (
            f"{obj.__qualname__} declares plugin API {version!r}; this host speaks {PLUGIN_API_VERSION} "
            "(install a version of the plugin made for it)"
        )
    return _schema_problem(obj) or _requires_problem(obj) or _tool_names_problem(obj)


def _kind(obj: Any) -> str:
    return "a function" if inspect.isroutine(obj) else f"a {type(obj).__name__} instance"


def _schema_problem(cls: type) -> Problem | None:
    schema = getattr(cls, "config_schema", None)
    if not isinstance(schema, Mapping):
        return "invalid", f"{cls.__qualname__}.config_schema is not a mapping (a JSON Schema)"
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top"
        return "invalid", f"{cls.__qualname__}.config_schema is not a valid JSON Schema at {where}: {exc.message}"
    return None


def _requires_problem(cls: type) -> Problem | None:
    requires = getattr(cls, "requires", ())
    if not isinstance(requires, tuple | list) or not all(isinstance(r, str) for r in requires):
        return "invalid", f"{cls.__qualname__}.requires must be a tuple of full service names"
    for name in requires:
        if not any(name.startswith(f"{group}.") and len(name) > len(group) + 1 for group in GROUPS):
            return (
                "invalid",
                f"{cls.__qualname__}.requires names '{name}', which is not <group>.<name> of an Ishiki group",
            )
    return None


def _tool_names_problem(cls: type) -> Problem | None:
    names = getattr(cls, "tool_names", None)
    if names is None:
        return None
    if not isinstance(names, tuple | list) or not all(isinstance(n, str) and n for n in names):
        return "invalid", f"{cls.__qualname__}.tool_names must be None or a tuple of tool names"
    if len(set(names)) != len(names):
        return "invalid", f"{cls.__qualname__}.tool_names lists a name twice"
    return None
