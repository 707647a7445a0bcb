"""The public face is enough on its own, typed, and all a plugin reaches.

- What plugins are made of (the packages under ``packages/``, the templates of ``ishiki new plugin``, the code
  blocks of the docs) imports ``ishiki_host``, ``ishiki_host.testing`` and ``ishiki_host.errors`` only (the
  import-linter ``face`` contract checks the packages' imports too, transitively inside them).
- No public signature of the face (nor of the hook specs) says ``Any``, except through ``Json``/``EventValue``
  /``PluginConfig``, aliases whose docstrings say why the value is arbitrary.
- Every class and function of the face shows itself as ``ishiki_host.X``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import ishiki_host
import ishiki_host.testing
from ishiki_host.plugins import hookspecs

REPO = Path(__file__).resolve().parents[2]
FACE = frozenset({"ishiki_host", "ishiki_host.testing", "ishiki_host.errors"})
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
IMPORT = re.compile(r"^\s*(?:from\s+(ishiki_host[\w.]*)\s+import|import\s+(ishiki_host[\w.]*))", re.MULTILINE)
ANY = re.compile(r"(?<![\w.])(typing\.)?Any(?!\w)")


def _annotations(obj: Any) -> Iterator[tuple[str, str]]:
    """``(where, annotation text)`` for every annotation of a function or a class's public members."""
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        for name, text in getattr(obj, "__annotations__", {}).items():
            yield f"{obj.__qualname__}({name})", str(text)
        return
    if not inspect.isclass(obj):
        return
    for klass in obj.__mro__:
        if not klass.__module__.startswith("ishiki_host"):
            continue
        for name, text in vars(klass).get("__annotations__", {}).items():
            if not name.startswith("_"):
                yield f"{klass.__qualname__}.{name}", str(text)
        for name, member in vars(klass).items():
            if name.startswith("_") and name not in ("__init__", "__call__"):
                continue
            if isinstance(member, property) and member.fget is not None:
                yield from _annotations(member.fget)
            elif isinstance(member, staticmethod | classmethod):
                yield from _annotations(member.__func__)
            elif inspect.isfunction(member):
                yield from _annotations(member)
    if dataclasses.is_dataclass(obj):
        for field in dataclasses.fields(obj):
            yield f"{obj.__qualname__}.{field.name}", str(field.type)


def any_in_signatures(module: ModuleType, names: list[str] | None = None) -> list[str]:
    """Every public signature of ``module`` (its ``__all__``, or ``names``) that says ``Any``."""
    found: set[str] = set()
    for name in names if names is not None else list(module.__all__):
        for where, text in _annotations(getattr(module, name)):
            if ANY.search(text):
                found.add(f"{where}: {text}")
    return sorted(found)


def _plugin_sources() -> list[Path]:
    return [p for p in sorted(REPO.glob("packages/*/*/**/*.py")) if "tests" not in p.parts and "build" not in p.parts]


def _imported(source: str) -> set[str]:
    return {first or second for first, second in IMPORT.findall(source)}


def test_the_scan_sees_the_packages_templates_and_docs() -> None:
    assert len(_plugin_sources()) > 40
    assert len(list((REPO / "ishiki_host/scaffold/templates").rglob("*.tmpl"))) > 10
    assert sum(1 for path in (REPO / "docs").rglob("*.md") for _ in FENCE.finditer(path.read_text())) > 20


@pytest.mark.parametrize("path", _plugin_sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_packages_import_only_the_face(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {m for m in modules if m.startswith("ishiki_host")} <= FACE


@pytest.mark.parametrize(
    "path", sorted((REPO / "ishiki_host/scaffold/templates").rglob("*.tmpl")), ids=lambda p: p.name
)
def test_the_plugin_templates_import_only_the_face(path: Path) -> None:
    assert _imported(path.read_text(encoding="utf-8")) <= FACE


def test_the_docs_code_blocks_import_only_the_face() -> None:
    outside = []
    for path in sorted((REPO / "docs").rglob("*.md")):
        where = str(path.relative_to(REPO))
        for block in FENCE.finditer(path.read_text(encoding="utf-8")):
            outside += [f"{where}: {m}" for m in _imported(block.group(1)) - FACE]
    assert outside == []


def test_no_public_signature_of_the_face_says_any() -> None:
    assert any_in_signatures(ishiki_host) == []


def test_no_hook_spec_says_any() -> None:
    specs = [name for name in hookspecs.__all__ if name.startswith("ishiki_")]
    assert len(specs) == 7
    assert any_in_signatures(hookspecs, specs) == []


def test_the_check_finds_any_where_it_is() -> None:
    """A check that finds nothing anywhere proves nothing: the test kit's fakes still say ``Any`` here and there."""
    assert ANY.search("dict[str, typing.Any] | None")
    assert not ANY.search("Json | AnyStr | MyAny")
    assert any_in_signatures(ishiki_host.testing) != []


def test_the_aliases_that_stand_for_any_say_why() -> None:
    for alias in ("Json", "EventValue", "PluginConfig"):
        assert alias in ishiki_host.__all__
    for text in (
        (REPO / "ishiki_host/jsontypes.py").read_text(),
        (REPO / "ishiki_host/core/bus.py").read_text(),
        (REPO / "ishiki_host/config/services.py").read_text(),
    ):
        assert "arbitrary" in text


def test_the_face_names_itself() -> None:
    own = [
        name
        for name in ishiki_host.__all__
        if isinstance(getattr(ishiki_host, name), type) or callable(getattr(ishiki_host, name))
    ]
    elsewhere = {
        name: getattr(ishiki_host, name).__module__
        for name in own
        if getattr(ishiki_host, name).__module__ not in ("ishiki_host", "pluggy._hooks")
        and getattr(ishiki_host, name).__module__.startswith("ishiki_host")
    }
    assert elsewhere == {}
    assert repr(ishiki_host.RuntimeContext) == "<class 'ishiki_host.RuntimeContext'>"
    assert ishiki_host.split_message.__module__ == "ishiki_host"
