"""Plugin managers for extension hooks, and the one helper that awaits async hook results.

There is no global plugin manager: ``make_plugin_manager`` builds a fresh one. Registering an instance checks
it at once, so a misnamed ``@hookimpl`` fails at start-up rather than being silently ignored.

pluggy calls implementations last-registered-first; extension hooks must run in ``extends`` order instead, so
``call_in_order`` calls them in an order the caller gives. A runtime calls each of its extension instances
by itself, through ``InstanceHooks``: the same checks and the same calls without a manager per runtime.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Iterable, Sequence
from typing import Any, cast

import pluggy

from ishiki_host.errors import PluginLoadFailed
from ishiki_host.plugins import hookspecs

__all__ = [
    "InstanceHooks",
    "IshikiPluginManager",
    "await_results",
    "call_hook",
    "call_in_order",
    "make_plugin_manager",
]


@functools.lru_cache(maxsize=512)
def _marked_names(namespace: Any, marker: str) -> frozenset[str]:
    """Names of a class (and its bases) or a module that may carry ``marker``: marked functions, and slots."""
    names: set[str] = set()
    for klass in namespace.__mro__ if inspect.isclass(namespace) else (namespace,):
        for name, value in vars(klass).items():
            inner = getattr(value, "__func__", value)
            marked = getattr(value, marker, None) is not None or getattr(inner, marker, None) is not None
            if marked or isinstance(value, types.MemberDescriptorType):
                names.add(name)
    return frozenset(names)


@functools.lru_cache(maxsize=512)
def _slot_names(klass: Any) -> frozenset[str]:
    """Names of a class (and its bases) that are slots: their values belong to each instance."""
    return frozenset(
        name
        for base in klass.__mro__
        for name, value in vars(base).items()
        if isinstance(value, types.MemberDescriptorType)
    )


def _carries(value: object, marker: str) -> bool:
    """Whether ``value`` (or the function it wraps) carries ``marker``."""
    inner = getattr(value, "__func__", value)
    return getattr(value, marker, None) is not None or getattr(inner, marker, None) is not None


_CLASS_OPTS: dict[tuple[type, str, str], pluggy.HookimplOpts | None] = {}
"""pluggy's options of each (class, name, marker) parsed so far (emptied when it reaches ``_CLASS_OPTS_LIMIT``)."""
_CLASS_OPTS_LIMIT = 4096
_SPEC_OPTS: dict[tuple[Any, str, str], pluggy.HookspecOpts | None] = {}
"""pluggy's options of each hook spec parsed so far (same bound)."""


class IshikiPluginManager(pluggy.PluginManager):
    """A pluggy ``PluginManager`` whose ``register`` validates the plugin at once.

    A hook implementation that names no hook of ``hookspecs`` (or takes an argument the hook does not have)
    raises ``PluginLoadFailed`` and the plugin is not left registered.

    Every runtime registers its extension instances in a manager of its own, so registering is on the path
    of a new runtime: pluggy looks at every attribute of an instance, and here only the attributes that can
    be hook implementations are looked at (the marked functions of its class, whatever is stored on the
    instance itself), found once per class.
    """

    def __init__(self, project_name: str):
        super().__init__(project_name)
        self._impl_marker = project_name + "_impl"

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        """pluggy's own parse, for the names that may be hook implementations (see the class docstring).

        An attribute of the instance itself is parsed only when it carries the marker; a marked function of
        the class is parsed once per class (its options do not depend on the instance) and handed out as a
        copy, because pluggy fills in the options it is given.
        """
        if isinstance(plugin, type | types.ModuleType):
            return super().parse_hookimpl_opts(plugin, name)
        own = getattr(plugin, "__dict__", None)
        if isinstance(own, dict) and name in own:
            return super().parse_hookimpl_opts(plugin, name) if _carries(own[name], self._impl_marker) else None
        kind: Any = type(plugin)
        if name not in _marked_names(kind, self._impl_marker):
            return None
        if name in _slot_names(kind):
            return super().parse_hookimpl_opts(plugin, name)  # a slot's value belongs to the instance
        key = (kind, name, self._impl_marker)
        if key not in _CLASS_OPTS:
            if len(_CLASS_OPTS) >= _CLASS_OPTS_LIMIT:
                _CLASS_OPTS.clear()  # classes made on the fly (tests) must not pile up
            _CLASS_OPTS[key] = super().parse_hookimpl_opts(plugin, name)
        opts = _CLASS_OPTS[key]
        return None if opts is None else cast("pluggy.HookimplOpts", dict(opts))

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> pluggy.HookspecOpts | None:
        """pluggy's own parse, for the marked names only, once per (module or class, name): a manager is made
        per runtime, and the specs do not change."""
        marker = self.project_name + "_spec"
        if name not in _marked_names(module_or_class, marker):
            return None
        key = (module_or_class, name, marker)
        if key not in _SPEC_OPTS:
            if len(_SPEC_OPTS) >= _CLASS_OPTS_LIMIT:
                _SPEC_OPTS.clear()
            _SPEC_OPTS[key] = super().parse_hookspec_opts(module_or_class, name)
        opts = _SPEC_OPTS[key]
        return None if opts is None else cast("pluggy.HookspecOpts", dict(opts))

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


_Table = dict[str, tuple[tuple[str, tuple[str, ...]], ...]]
"""Hook name -> the (attribute, argument names) of its implementations, in pluggy's call order."""
_TABLES: dict[type, _Table] = {}
"""The table of each class whose implementations are all its own (bounded as ``_CLASS_OPTS``)."""


class InstanceHooks:
    """The hook implementations of one plugin instance, called without a plugin manager.

    ``InstanceHooks(instance)`` checks the instance as ``IshikiPluginManager.register`` does
    (``PluginLoadFailed`` for a ``@hookimpl`` that names no hook, or takes an argument its hook does not have)
    and finds its implementations in the order ``call_in_order`` calls them. Both are done once per class: a
    runtime mounts new instances of its extensions every time it spawns, and a pluggy manager built and
    filled for them was an eighth of a new runtime's first turn. An instance that carries implementations of
    its own (stored on the instance, or in a slot) is looked at by itself.
    """

    __slots__ = ("_table", "instance")

    def __init__(self, instance: object):
        self.instance = instance
        kind: Any = type(instance)
        marker = hookspecs.PROJECT + "_impl"
        own = getattr(instance, "__dict__", None) or {}
        marked = _marked_names(kind, marker)
        # The class's table holds for an instance that adds no implementation of its own, shadows none of the
        # class's (an attribute set on the instance under that name) and keeps none in a slot.
        shared = (
            not any(_carries(value, marker) for value in own.values())
            and not (own.keys() & marked)
            and not (marked & _slot_names(kind))
        )
        table = _TABLES.get(kind) if shared else None
        if table is None:
            table = _table_of(instance)
            if shared:
                if len(_TABLES) >= _CLASS_OPTS_LIMIT:
                    _TABLES.clear()
                _TABLES[kind] = table
        self._table = table

    def implements(self, hook: str) -> bool:
        """Whether the instance implements ``hook``."""
        return hook in self._table

    async def call(self, hook: str, *, return_exceptions: bool = False, **kwargs: Any) -> list[Any]:
        """``call_in_order(manager, hook, [instance], ...)``: the awaited results of the instance's
        implementations of ``hook`` (none: ``[]``), each given the arguments it names from ``kwargs``."""
        calls = (
            (getattr(self.instance, attribute), {arg: kwargs[arg] for arg in argnames})
            for attribute, argnames in self._table.get(hook, ())
        )
        return await _collect(calls, return_exceptions)


def _table_of(instance: object) -> _Table:
    """Register ``instance`` in a fresh manager (the checks) and read its implementations back."""
    manager = make_plugin_manager()
    manager.register(instance)
    # Only these can be implementations (IshikiPluginManager.parse_hookimpl_opts); no other attribute is read.
    own = getattr(instance, "__dict__", None) or {}
    kind: Any = type(instance)
    names = sorted(_marked_names(kind, hookspecs.PROJECT + "_impl") | own.keys())
    bound = [(name, value) for name in names if callable(value := getattr(instance, name, None))]
    table: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}
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
