"""The package's public face: ``__all__`` exact and sorted, every public name of every module documented."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import ishiki_ext_mcp

MODULES = [
    importlib.import_module(info.name)
    for info in pkgutil.walk_packages(ishiki_ext_mcp.__path__, "ishiki_ext_mcp.")
    if not info.name.endswith("demo_server")  # a script; importing it builds its server
]


def test_all_is_sorted_unique_and_importable() -> None:
    names = ishiki_ext_mcp.__all__
    # ruff's isort-style order (RUF022): CONSTANTS, then Classes, then functions
    assert names == sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    assert len(set(names)) == len(names)
    assert all(hasattr(ishiki_ext_mcp, name) for name in names)


def public_members(module: ModuleType) -> list[tuple[str, object]]:
    found = []
    for name in getattr(module, "__all__", ()):
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            found.append((f"{module.__name__}.{name}", value))
            if inspect.isclass(value):
                for attr, member in vars(value).items():
                    if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                        found.append((f"{module.__name__}.{name}.{attr}", member))
    return found


def test_every_module_and_public_name_has_a_docstring() -> None:
    missing = [module.__name__ for module in [ishiki_ext_mcp, *MODULES] if not module.__doc__]
    for module in MODULES:
        missing += [name for name, value in public_members(module) if not inspect.getdoc(value)]
    assert missing == []
