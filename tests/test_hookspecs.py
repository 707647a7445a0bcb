"""The extension hook contract: documented specs, fail-fast registration, ordered and async calls, and
``InstanceHooks`` (one instance's hooks without a manager) answering as a manager does."""

from __future__ import annotations

import inspect
import logging
from typing import cast

import pytest

from ishiki_host import RuntimeContext, hookimpl
from ishiki_host.errors import PluginLoadFailed
from ishiki_host.plugins import hookspecs
from ishiki_host.plugins.hooks import (
    HookCatalog,
    InstanceHooks,
    await_results,
    call_hook,
    call_in_order,
    make_plugin_manager,
)
from ishiki_host.plugins.reference import hook_names
from ishiki_host.runtime.extensions import MountedExtensions


def test_every_hook_is_documented_and_typed() -> None:
    names = hook_names()
    assert names == [
        "ishiki_attach",
        "ishiki_stop",
        "ishiki_tools",
        "ishiki_instructions",
        "ishiki_turn_finished",
        "ishiki_commands",
        "ishiki_status",
    ]
    for name in names:
        function = getattr(hookspecs, name)
        doc = inspect.getdoc(function) or ""
        assert len(doc.split()) >= 15, f"{name} needs a docstring saying when it is called and what it returns"
        signature = inspect.signature(function)
        assert signature.return_annotation is not inspect.Signature.empty, name
        assert all(p.annotation is not inspect.Parameter.empty for p in signature.parameters.values()), name


def test_every_hook_belongs_to_one_phase() -> None:
    listed = [name for names in hookspecs.PHASES.values() for name in names]
    assert sorted(listed) == sorted(hook_names())


def test_every_hook_is_known_to_the_manager() -> None:
    manager = make_plugin_manager()
    assert set(hook_names()) <= {name for name in dir(manager.hook) if name.startswith("ishiki_")}


def test_managers_are_fresh() -> None:
    first, second = make_plugin_manager(), make_plugin_manager()

    class Plugin:
        @hookimpl
        def ishiki_status(self) -> list[str]:
            return ["x"]

    first.register(Plugin())
    assert first.hook.ishiki_status(runtime=None) == [["x"]]
    assert second.hook.ishiki_status(runtime=None) == []


def test_misnamed_hook_fails_at_registration() -> None:
    manager = make_plugin_manager()

    class Typo:
        @hookimpl
        def ishiki_tool(self) -> list[object]:
            return []

    plugin = Typo()
    with pytest.raises(PluginLoadFailed, match="ishiki_tool"):
        manager.register(plugin)
    assert not manager.is_registered(plugin)


def test_unknown_argument_fails_at_registration() -> None:
    manager = make_plugin_manager()

    class Wrong:
        @hookimpl
        def ishiki_status(self, runtime: object, verbose: bool) -> list[str]:
            return []

    with pytest.raises(PluginLoadFailed, match="verbose"):
        manager.register(Wrong())


class Named:
    """Contributes its name to the instructions, optionally asynchronously."""

    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    def ishiki_instructions(self, runtime: dict[str, str]) -> str:
        return f"{self.name}@{runtime['key']}"


class AsyncNamed(Named):
    @hookimpl
    async def ishiki_instructions(self, runtime: dict[str, str]) -> str:  # type: ignore[override]
        return f"async {self.name}@{runtime['key']}"


class NoHooks:
    pass


@pytest.mark.anyio
async def test_call_in_order_follows_extends_order_not_registration() -> None:
    manager = make_plugin_manager()
    a, b, c, none = Named("a"), AsyncNamed("b"), Named("c"), NoHooks()
    for plugin in (a, b, c, none):
        manager.register(plugin)
    runtime = {"key": "p/main"}
    assert await call_hook(manager, "ishiki_instructions", runtime=runtime) == [
        "c@p/main",
        "async b@p/main",
        "a@p/main",
    ]
    ordered = await call_in_order(manager, "ishiki_instructions", [b, none, a, c], runtime=runtime)
    assert ordered == ["async b@p/main", "a@p/main", "c@p/main"]


@pytest.mark.anyio
async def test_stop_keeps_going_past_failures() -> None:
    stopped: list[str] = []

    class Stopper:
        def __init__(self, name: str, fail: bool) -> None:
            self.name, self.fail = name, fail

        @hookimpl
        async def ishiki_stop(self) -> None:
            stopped.append(self.name)
            if self.fail:
                raise RuntimeError(f"{self.name} failed")

    manager = make_plugin_manager()
    plugins = [Stopper("a", True), Stopper("b", False), Stopper("c", True)]
    for plugin in plugins:
        manager.register(plugin)
    results = await call_in_order(manager, "ishiki_stop", plugins, return_exceptions=True, runtime=None)
    assert stopped == ["a", "b", "c"]
    assert [str(r) if r else r for r in results] == ["a failed", None, "c failed"]
    with pytest.raises(RuntimeError, match="a failed"):
        await call_in_order(manager, "ishiki_stop", plugins, runtime=None)


@pytest.mark.anyio
async def test_await_results_keeps_plain_values() -> None:
    async def later() -> int:
        return 2

    assert await await_results([1, later(), None]) == [1, 2, None]


def test_registration_finds_inherited_static_and_instance_implementations_and_any_typo() -> None:
    class Base:
        @hookimpl
        def ishiki_status(self) -> list[str]:
            return ["base"]

    class Child(Base):
        @staticmethod
        @hookimpl
        def ishiki_instructions() -> str:
            return "static"

        @property
        def ishiki_tools(self) -> list[object]:  # a property is never a hook (and is not run to find out)
            raise AssertionError("evaluated")

    child = Child()

    @hookimpl
    def stop(runtime: object) -> None:
        return None

    child.ishiki_stop = stop  # type: ignore[attr-defined]
    manager = make_plugin_manager()
    manager.register(child)
    hooks = {name for name in hook_names() if getattr(manager.hook, name).get_hookimpls()}
    assert hooks == {"ishiki_status", "ishiki_instructions", "ishiki_stop"}

    class Typo:
        @hookimpl
        def tools(self) -> list[object]:  # no prefix at all: still a marked function naming no hook
            return []

    with pytest.raises(PluginLoadFailed, match="tools"):
        make_plugin_manager().register(Typo())


def test_each_instance_of_a_class_registers_its_own_implementations() -> None:
    class Ext:
        def __init__(self, label: str):
            self.label = label

        @hookimpl
        def ishiki_status(self) -> list[str]:
            return [self.label]

        @hookimpl
        def ishiki_instructions(self) -> str:
            return self.label

    first, second, shadowed = Ext("first"), Ext("second"), Ext("shadowed")
    shadowed.ishiki_instructions = lambda: "not a hook"  # type: ignore[method-assign]
    manager = make_plugin_manager()
    for instance in (first, second, shadowed):
        manager.register(instance)
    statuses = manager.hook.ishiki_status.get_hookimpls()
    assert sorted(impl.function() for impl in statuses) == [["first"], ["second"], ["shadowed"]]
    instructions = manager.hook.ishiki_instructions.get_hookimpls()
    assert sorted(impl.function() for impl in instructions) == ["first", "second"]
    assert all(impl.opts["tryfirst"] is False for impl in statuses)  # pluggy filled in a copy of its own


class Several:
    """Two implementations of one hook (``specname``), a hook with no argument, and state of its own."""

    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl(specname="ishiki_status")
    def first_status(self, runtime: object) -> list[str]:
        return [f"{self.name}: first"]

    @hookimpl(specname="ishiki_status", tryfirst=True)
    async def early_status(self) -> list[str]:
        return [f"{self.name}: early"]

    @hookimpl
    def ishiki_stop(self) -> None:
        raise RuntimeError(f"{self.name} cannot stop")


@pytest.mark.anyio
@pytest.mark.parametrize("plugin_class", [Several, Named, AsyncNamed, NoHooks])
async def test_instance_hooks_answer_as_a_manager_does(plugin_class: type) -> None:
    for name in ("x", "y"):  # the second instance of a class is read from its class's table: its own state
        plugin = plugin_class(name) if plugin_class is not NoHooks else plugin_class()
        hooks = InstanceHooks(plugin)
        manager = make_plugin_manager()
        manager.register(plugin)
        runtime = {"key": "p/main"}
        for hook in hook_names():
            expected = bool(getattr(manager.hook, hook).get_hookimpls())
            assert hooks.implements(hook) == expected, hook
            if hook in ("ishiki_status", "ishiki_instructions"):
                assert await hooks.call(hook, runtime=runtime) == await call_in_order(
                    manager, hook, [plugin], runtime=runtime
                )
    assert await InstanceHooks(Several("z")).call("ishiki_status", runtime=None) == [["z: first"], ["z: early"]]


@pytest.mark.anyio
async def test_instance_hooks_raise_or_return_exceptions_as_asked() -> None:
    hooks = InstanceHooks(Several("s"))
    with pytest.raises(RuntimeError, match="s cannot stop"):
        await hooks.call("ishiki_stop", runtime=None)
    (error,) = await hooks.call("ishiki_stop", return_exceptions=True, runtime=None)
    assert str(error) == "s cannot stop"
    assert await hooks.call("ishiki_tools", runtime=None) == []  # not implemented: nothing to call


def test_instance_hooks_check_every_instance_of_a_bad_class() -> None:
    class Typo:
        @hookimpl
        def ishiki_tool(self) -> list[object]:
            return []

    for _ in range(2):  # a class that failed is not remembered as good
        with pytest.raises(PluginLoadFailed, match="ishiki_tool"):
            InstanceHooks(Typo())


@pytest.mark.anyio
async def test_an_implementation_stored_on_the_instance_is_its_own() -> None:
    class Holder:
        pass

    def status_of(text: str) -> object:
        @hookimpl(specname="ishiki_status")
        def status() -> list[str]:
            return [text]

        return status

    first, second, bare = Holder(), Holder(), Holder()
    first.status = status_of("first")  # type: ignore[attr-defined]
    second.status = status_of("second")  # type: ignore[attr-defined]
    assert await InstanceHooks(first).call("ishiki_status", runtime=None) == [["first"]]
    assert await InstanceHooks(second).call("ishiki_status", runtime=None) == [["second"]]
    assert not InstanceHooks(bare).implements("ishiki_status")

    @hookimpl
    def ishiki_tool() -> list[object]:
        return []

    bare.ishiki_tool = ishiki_tool  # type: ignore[attr-defined]
    with pytest.raises(PluginLoadFailed, match="ishiki_tool"):
        InstanceHooks(bare)  # checked by itself, though Holder's table says it has no hooks


@pytest.mark.anyio
async def test_an_instance_attribute_shadowing_an_implementation_is_not_called() -> None:
    plain, shadowed = Named("plain"), Named("shadowed")
    shadowed.ishiki_instructions = lambda runtime: "not a hook"  # type: ignore[method-assign]
    assert await InstanceHooks(plain).call("ishiki_instructions", runtime={"key": "k"}) == ["plain@k"]
    manager = make_plugin_manager()
    manager.register(shadowed)
    assert not manager.hook.ishiki_instructions.get_hookimpls()  # pluggy sees no implementation either
    assert not InstanceHooks(shadowed).implements("ishiki_instructions")


def test_a_hook_catalog_reads_each_class_once() -> None:
    catalog = HookCatalog()
    first, second = catalog.hooks(Named("a")), catalog.hooks(Named("b"))
    assert first._table is second._table
    assert len(catalog) == 1


def test_mounted_extensions_use_the_catalog_they_are_given_even_an_empty_one() -> None:
    """An empty catalog is falsy (it has a length): it must still be the one used, or every runtime of a host
    would read its extension classes again."""
    catalog = HookCatalog()
    mounted = MountedExtensions(cast("RuntimeContext", None), logging.getLogger("test"), catalog)
    mounted.register("named", Named("a"))
    mounted.register("again", Named("b"))
    assert len(catalog) == 1
