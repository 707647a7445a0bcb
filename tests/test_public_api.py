"""The public face of the package stays curated: ``__all__`` exact and sorted, every public name documented."""

from __future__ import annotations

import importlib
import inspect

import pytest

PUBLIC_MODULES = [
    "ishiki_host",
    "ishiki_host.channels",
    "ishiki_host.config",
    "ishiki_host.core",
    "ishiki_host.errors",
    "ishiki_host.gateway",
    "ishiki_host.plugins",
    "ishiki_host.heartbeat",
    "ishiki_host.observe",
    "ishiki_host.runtime",
    "ishiki_host.resources",
    "ishiki_host.scaffold",
    "ishiki_host.testing",
    "ishiki_host.tools",
]


def _isort_style(name: str) -> tuple[int, str]:
    """The order ruff keeps ``__all__`` in (RUF022): SCREAMING_CASE constants, then CamelCase, then the rest."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name


def _exported_candidates(module: object) -> set[str]:
    """Classes and functions of our own that a module binds under a public name."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "").startswith("ishiki_host")
    }


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_is_sorted_and_exact(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__all__ == sorted(module.__all__, key=_isort_style)
    assert all(hasattr(module, name) for name in module.__all__)
    assert _exported_candidates(module) <= set(module.__all__)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_name_is_documented(module_name: str) -> None:
    module = importlib.import_module(module_name)
    undocumented = [
        name
        for name in module.__all__
        if (inspect.isclass(getattr(module, name)) or inspect.isfunction(getattr(module, name)))
        and not (getattr(module, name).__doc__ or "").strip()
    ]
    assert not undocumented
