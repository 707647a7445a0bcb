"""A scaffolded extension declares its tool names, so ``ishiki check`` finds its clashes before any turn runs
(the check never runs an extension to ask: ``ishiki_host.plugins.toolnames``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ishiki_host import Extension
from ishiki_host.plugins.configdir import load_config_dir
from ishiki_host.plugins.discovery import PluginRegistry, ServiceRecord, discover
from ishiki_host.scaffold import plugin_names, render_plugin

WriteConfig = Callable[..., Path]


def scaffolded_extension(name: str) -> type[Extension]:
    """The extension class ``ishiki new plugin extension NAME`` writes, loaded from its rendered source."""
    names = plugin_names("extension", name)
    source = render_plugin("extension", name)[f"{names.package}/{names.kind.module}.py"]
    namespace: dict[str, Any] = {"__name__": f"scaffolded_{names.package}"}
    exec(compile(source, f"{names.package}.py", "exec"), namespace)
    cls = namespace[names.class_name]
    assert isinstance(cls, type)
    assert issubclass(cls, Extension)
    return cls


def test_the_declared_names_are_the_tools_the_instance_offers() -> None:
    cls = scaffolded_extension("greeter")
    instance = cls().create(None, {"greeting": "Hi"})  # type: ignore[arg-type]  # the template ignores ctx
    assert cls.tool_names == ("greeter_greet",)
    assert cls.tool_names == tuple(tool.name for tool in instance.ishiki_tools())  # type: ignore[attr-defined]


def test_check_finds_a_clash_of_two_scaffolded_extensions(write_config: WriteConfig) -> None:
    cls = scaffolded_extension("greeter")
    extra = [ServiceRecord("ishiki.ext", name, "greeter:Greeter", "greeter", "1", plugin=cls) for name in ("a", "b")]
    registry = PluginRegistry([*discover().records, *extra])
    models = "providers:\n  demo:\n    api: scripted\n    models: [{id: demo}]\n"
    profile = "model: demo:demo\nextends:\n  a: {}\n  b: {}\n"
    root = write_config({"models.yaml": models, "profiles/p/profile.yml": profile, "profiles/p/persona.md": "Hi.\n"})
    state = load_config_dir(root, env={}, registry=registry).profile("p")
    assert state is not None
    assert state.state == "invalid"
    assert [(e.path, e.message) for e in state.errors] == [
        ("extends.b", "extension 'b' offers a tool named 'greeter_greet', as extension 'a' does")
    ]
