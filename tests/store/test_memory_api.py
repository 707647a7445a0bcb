"""The memory package's public face: ``__all__`` sorted and exact, every public name documented."""

from __future__ import annotations

import inspect

import ishiki_host.memory as memory


def test_all_is_sorted_and_exact() -> None:
    assert memory.__all__ == sorted(memory.__all__)
    assert all(hasattr(memory, name) for name in memory.__all__)
    ours = {
        name
        for name, value in vars(memory).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "").startswith("ishiki_host.memory")
    }
    assert ours <= set(memory.__all__)


def test_every_public_class_and_method_is_documented() -> None:
    missing = []
    for name in memory.__all__:
        value = getattr(memory, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        if not (value.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(value):
            for attr, member in vars(value).items():
                if not attr.startswith("_") and inspect.isfunction(member) and not (member.__doc__ or "").strip():
                    missing.append(f"{name}.{attr}")
    assert missing == []
