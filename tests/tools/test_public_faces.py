"""codemode and toolsearch keep curated public faces: ``__all__`` exact and sorted, every public name documented."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = ["ishiki_host.tools.codemode", "ishiki_host.tools.search_index"]


@pytest.mark.parametrize("module_name", MODULES)
def test_all_is_sorted_exact_and_documented(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__all__ == sorted(module.__all__)
    own = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "").startswith(module_name)
    }
    assert own <= set(module.__all__)
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert (value.__doc__ or "").strip(), name
