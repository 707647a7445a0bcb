"""Discovery over real entry points: the built-ins, the test distribution, and plugins broken on purpose."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ishiki_host.errors import PluginAPIIncompatible, PluginLoadFailed
from ishiki_host.plugins.base import Extension
from ishiki_host.plugins.discovery import PluginRegistry, ServiceRecord, discover

BUILTINS = {
    "ishiki.engine.context.standard",
    "ishiki.engine.wakeup.standard",
    "ishiki.engine.toolcall.native",
    "ishiki.channel.console",
}


def test_builtins_register_through_entry_points() -> None:
    registry = discover()
    for name in BUILTINS:
        record = registry.record(name)
        assert record is not None, name
        assert record.status == "ok"
        assert record.distribution == "ishiki-host"
        assert record.builtin


def test_test_distribution_is_recorded_with_its_distribution(plugin_registry: PluginRegistry) -> None:
    record = plugin_registry.record("ishiki.engine.context.testctx")
    assert record is not None
    assert (record.status, record.distribution, record.version) == ("ok", "ishiki-test-plugins", "0.3.1")
    assert record.target == "ishiki_test_plugins.engines:WindowContext"
    assert not record.builtin
    assert plugin_registry.spec("ishiki.engine.context.testctx") is not None
    assert "testctx" in plugin_registry.names("ishiki.engine.context")


@pytest.mark.parametrize(
    ("service", "kind", "error"),
    [
        ("ishiki.ext.broken", "load", "RuntimeError: ishiki-test-plugins: broken on purpose"),
        ("ishiki.ext.missing", "load", "ModuleNotFoundError: No module named 'ishiki_test_plugins.nowhere'"),
        ("ishiki.engine.wakeup.notaclass", "invalid", "names a function, not a class (subclass WakeupEngine)"),
        (
            "ishiki.engine.wakeup.wrongbase",
            "invalid",
            "WrongBase is not a subclass of ishiki_host.WakeupEngine",
        ),
        ("ishiki.engine.context.future", "incompatible", "declares plugin API '2.0'; this host speaks 1.0"),
        ("ishiki.ext.badschema", "invalid", "BadSchema.config_schema is not a valid JSON Schema"),
        ("ishiki.ext.exits", "load", "SystemExit: ishiki-test-plugins: exits on import"),
        ("ishiki.ext.asserts", "load", "AssertionError: ishiki-test-plugins: not configured"),
        ("ishiki.ext.badtoolnames", "invalid", "BadToolNames.tool_names must be None or a tuple of tool names"),
        ("ishiki.host.brokenhost", "load", "RuntimeError: ishiki-test-plugins: broken on purpose"),
    ],
)
def test_broken_plugins_are_recorded_not_fatal(
    plugin_registry: PluginRegistry, service: str, kind: str, error: str
) -> None:
    record = plugin_registry.record(service)
    assert record is not None
    assert record.status == "error"
    assert record.error_kind == kind
    assert record.error is not None
    assert error in record.error
    assert "\n" not in record.error
    assert plugin_registry.spec(service) is None
    assert plugin_registry.plugin(service) is None
    expected = PluginAPIIncompatible if kind == "incompatible" else PluginLoadFailed
    assert type(record.as_error()) is expected
    assert "ishiki-test-plugins 0.3.1" in record.as_error().message


def test_other_plugins_load_despite_the_broken_ones(plugin_registry: PluginRegistry) -> None:
    ok = {r.full_name for r in plugin_registry.records if r.status == "ok"}
    third_party = {"ishiki.ext.greeter", "ishiki.channel.testchat", "ishiki.provider.echo", "ishiki.host.hello"}
    assert BUILTINS | third_party <= ok
    assert len(plugin_registry.errors) == 10


def test_a_name_registered_by_two_distributions_is_an_error_for_both(
    plugin_registry: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "rival_plugins-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rival-plugins\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[ishiki.engine.context]\ntestctx = ishiki_test_plugins.engines:WindowContext\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = discover()
    clashing = [r for r in registry.records if r.full_name == "ishiki.engine.context.testctx"]
    assert {r.distribution for r in clashing} == {"ishiki-test-plugins", "rival-plugins"}
    assert all(r.status == "error" and r.error_kind == "conflict" for r in clashing)
    assert registry.spec("ishiki.engine.context.testctx") is None


def test_a_plugin_installed_later_is_found_by_the_next_discovery(
    plugin_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert discover().record("ishiki.ext.greeter") is None
    monkeypatch.syspath_prepend(str(plugin_site))
    try:
        assert discover().record("ishiki.ext.greeter") is not None
    finally:
        for name in [m for m in sys.modules if m.startswith("ishiki_test_plugins")]:
            del sys.modules[name]


class _DefaultOn(Extension):
    """A default-on extension for the registry tests."""

    default_enabled = True

    def create(self, ctx: object, config: object) -> object:
        return object()


def test_default_enabled_is_honoured_only_for_the_host_distribution(plugin_registry: PluginRegistry) -> None:
    assert "sticky" not in plugin_registry.default_extensions()
    spec = plugin_registry.spec("ishiki.ext.sticky")
    assert spec is not None
    assert not spec.default_enabled
    builtin = ServiceRecord("ishiki.ext", "memo", "x:_DefaultOn", "ishiki-host", "0.1.0", plugin=_DefaultOn)
    third = ServiceRecord("ishiki.ext", "other", "y:_DefaultOn", "ishiki-ext-other", "1.0", plugin=_DefaultOn)
    assert PluginRegistry([builtin, third]).default_extensions() == ("memo",)
