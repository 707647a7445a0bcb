"""Calling extension hooks: pluggy checks and parses them, the host calls them in ``extends`` order.

pluggy is the contract's keeper: ``make_plugin_manager`` builds a fresh manager that knows every hook of
``hookspecs`` (there is no global one), and registering an instance checks it at once (``check_pending``), so a
misnamed ``@hookimpl`` is a ``PluginLoadFailed`` at start-up rather than silently ignored.

The host owns the call loop, openly (``docs/plugins.md``). pluggy calls implementations last-registered-first
and has no order by a list the caller gives, while extension hooks run in ``extends`` order; and a runtime
mounts new instances of its extensions every time it spawns. So a runtime calls each of its instances through
``InstanceHooks``: the instance's implementations, found by registering it in a pluggy manager (the same checks,
the same parse, pluggy's public API only) and read back once, then called directly in pluggy's order for one
plugin. ``HookCatalog`` remembers what it found per class, for one host (no process-wide cache); an instance
that brings implementations of its own is looked at by itself. ``call_in_order`` does the same over a manager,
for a caller that has one.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable, Sequence
from typing import Any

import pluggy

from ishiki_host.errors import PluginLoadFailed
from ishiki_host.plugins import hookspecs

__all__ = [
    "HookCatalog",
    "InstanceHooks",
    "IshikiPluginManager",
    "await_results",
    "call_hook",
    "call_in_order",
    "make_plugin_manager",
]

_MARKER = hookspecs.PROJECT + "_impl"

_Table = dict[str, tuple[tuple[str, tuple[str, ...]], ...]]
"""Hook name -> the (attribute, argument names) of its implementations, in pluggy's call order."""


class IshikiPluginManager(pluggy.PluginManager):
    """A pluggy ``PluginManager`` whose ``register`` checks the plugin at once.

    A hook implementation that names no hook of ``hookspecs`` (or takes an argument the hook does not have)
    raises ``PluginLoadFailed`` and the plugin is not left registered. Only attributes that can be hook
    implementations are read when an instance registers (``parse_hookimpl_opts``, which pluggy documents for
    subclasses to override): pluggy itself reads every attribute, so a property would run before the instance
    was ever attached.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        """pluggy's own parse, for an attribute of the instance carrying the marker or a marked name of its
        class (and for modules and classes, which have no properties to run)."""
        if isinstance(plugin, type | types.ModuleType):
            return super().parse_hookimpl_opts(plugin, name)
        own = getattr(plugin, "__dict__", None)
        if isinstance(own, dict) and name in own:
            return super().parse_hookimpl_opts(plugin, name) if _carries(own[name]) else None
        if name not in _marked_names(type(plugin)):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register ``plugin`` (an instance) and check every hook implementation it brings."""
        try:
            registered = super().register(plugin, name)
            self.check_pending()
        except pluggy.PluginValidationError as exc:
            if self.is_registered(plugin):
                self.unregister(plugin)
            raise PluginLoadFailed(f"{type(plugin).__name__}: {exc}") from exc
        return registered


def make_plugin_manager() -> IshikiPluginManager:
    """A fresh plugin manager that knows every hook of ``hookspecs``."""
    manager = IshikiPluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    return manager


async def await_results(results: Iterable[Any]) -> list[Any]:
    """Await the results that are awaitable (async implementations return coroutines); keep the others."""
    return [await result if inspect.isawaitable(result) else result for result in results]


async def call_hook(manager: pluggy.PluginManager, name: str, **kwargs: Any) -> list[Any]:
    """Call hook ``name`` in pluggy's order and return the awaited results."""
    results = getattr(manager.hook, name)(**kwargs)
    return await await_results(results)


async def call_in_order(
    manager: pluggy.PluginManager,
    name: str,
    plugins: Sequence[object],
    *,
    return_exceptions: bool = False,
    **kwargs: Any,
) -> list[Any]:
    """Call hook ``name`` on each of ``plugins`` in the given order and return their awaited results.

    Plugins without an implementation of the hook are skipped; an implementation returning ``None`` adds
    ``None``. With ``return_exceptions`` an exception (raised, or raised by the awaited coroutine) is put in
    the list in place of a result and the remaining implementations still run, as ``ishiki_stop`` requires.
    """
    implementations = getattr(manager.hook, name).get_hookimpls()
    calls = (
        (impl.function, {arg: kwargs[arg] for arg in impl.argnames})
        for plugin in plugins
        for impl in implementations
        if impl.plugin is plugin
    )
    return await _collect(calls, return_exceptions)


async def _collect(calls: Iterable[tuple[Any, dict[str, Any]]], return_exceptions: bool) -> list[Any]:
    """Call each function with its arguments, in order, and return the awaited results; with
    ``return_exceptions`` an exception stands in for its result and the remaining calls still run."""
    results: list[Any] = []
    for function, arguments in calls:
        try:
            result = function(**arguments)
            results.append(await result if inspect.isawaitable(result) else result)
        except Exception as exc:
            if not return_exceptions:
                raise
            results.append(exc)
    return results


class HookCatalog:
    """The hook implementations of the plugin classes one host has mounted, found once per class.

    A class's table holds for every instance that brings no implementation of its own (see ``InstanceHooks``).
    Classes made on the fly (tests) must not pile up: past ``limit`` classes the catalog starts again.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._classes: dict[type, _ClassHooks] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._classes)

    def hooks(self, instance: object) -> InstanceHooks:
        """The hooks of ``instance`` (``PluginLoadFailed`` when one is misnamed)."""
        kind = type(instance)
        known = self._classes.get(kind)
        if known is None:
            known = _ClassHooks(_marked_names(kind), _slot_names(kind))
            if len(self._classes) >= self._limit:
                self._classes.clear()
            self._classes[kind] = known
        if not known.holds_for(instance):
            return InstanceHooks(instance)
        if known.table is None:
            known.table = _table_of(instance)
        return InstanceHooks(instance, known.table)


class _ClassHooks:
    """What a catalog knows of one class: the names that can hold implementations, and its table once read."""

    __slots__ = ("marked", "slots", "table")

    def __init__(self, marked: frozenset[str], slots: frozenset[str]) -> None:
        self.marked = marked
        self.slots = slots
        self.table: _Table | None = None

    def holds_for(self, instance: object) -> bool:
        """Whether the class's table holds for ``instance``: it adds no implementation of its own, shadows none
        of the class's (an attribute set on the instance under that name) and keeps none in a slot."""
        own = getattr(instance, "__dict__", None) or {}
        if self.marked & self.slots or own.keys() & self.marked:
            return False
        return not any(_carries(value) for value in own.values())


class InstanceHooks:
    """The hook implementations of one plugin instance, called without a plugin manager.

    ``InstanceHooks(instance)`` checks the instance as ``IshikiPluginManager.register`` does
    (``PluginLoadFailed`` for a ``@hookimpl`` that names no hook, or takes an argument its hook does not have)
    and finds its implementations in the order ``call_in_order`` calls them. ``HookCatalog.hooks`` passes the
    table of the instance's class instead, when it has one.
    """

    __slots__ = ("_table", "instance")

    def __init__(self, instance: object, table: _Table | None = None):
        self.instance = instance
        self._table = table if table is not None else _table_of(instance)

    def implements(self, hook: str) -> bool:
        """Whether the instance implements ``hook``."""
        return hook in self._table

    async def call(self, hook: str, *, return_exceptions: bool = False, **kwargs: Any) -> list[Any]:
        """``call_in_order(manager, hook, [instance], ...)``: the awaited results of the instance's
        implementations of ``hook`` (none: ``[]``), each given the arguments it names from ``kwargs``."""
        implementations = self._table.get(hook)
        if not implementations:
            return []  # the common case for most hooks of most instances: no generator, no second coroutine
        calls = (
            (getattr(self.instance, attribute), {arg: kwargs[arg] for arg in argnames})
            for attribute, argnames in implementations
        )
        return await _collect(calls, return_exceptions)


def _marked_names(klass: type) -> frozenset[str]:
    """Names of a class (and its bases) that may hold a hook implementation: marked functions, and slots."""
    names: set[str] = set()
    for base in klass.__mro__:
        for name, value in vars(base).items():
            if _carries(value) or isinstance(value, types.MemberDescriptorType):
                names.add(name)
    return frozenset(names)


def _slot_names(klass: type) -> frozenset[str]:
    """Names of a class (and its bases) that are slots: their values belong to each instance."""
    return frozenset(
        name
        for base in klass.__mro__
        for name, value in vars(base).items()
        if isinstance(value, types.MemberDescriptorType)
    )


def _carries(value: object) -> bool:
    """Whether ``value`` (or the function it wraps) carries the ``@hookimpl`` marker."""
    inner = getattr(value, "__func__", value)
    return getattr(value, _MARKER, None) is not None or getattr(inner, _MARKER, None) is not None


def _table_of(instance: object) -> _Table:
    """Register ``instance`` in a fresh manager (the checks) and read its implementations back."""
    manager = make_plugin_manager()
    manager.register(instance)
    own = getattr(instance, "__dict__", None) or {}
    names = sorted(_marked_names(type(instance)) | own.keys())
    bound = [(name, value) for name in names if callable(value := getattr(instance, name, None))]
    table: _Table = {}
    for hook, caller in vars(manager.hook).items():
        implementations = caller.get_hookimpls()
        if implementations:
            table[hook] = tuple((_attribute_of(impl.function, bound), tuple(impl.argnames)) for impl in implementations)
    return table


def _attribute_of(function: object, bound: list[tuple[str, object]]) -> str:
    """The attribute of the instance that ``function`` (what pluggy registered) was read from."""
    for name, value in bound:
        # A bound method is made anew on every read: equal (same function, same instance), never identical.
        if value is function or (isinstance(value, types.MethodType) and value == function):
            return name
    raise PluginLoadFailed(f"cannot find the attribute of hook implementation {function!r}")
