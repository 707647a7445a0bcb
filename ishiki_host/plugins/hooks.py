"""Plugin managers for extension hooks, and the one helper that awaits async hook results.

There is no global plugin manager: ``make_plugin_manager`` builds a fresh one (one per runtime, and one per
test). Registering an instance checks it at once, so a misnamed ``@hookimpl`` fails at start-up rather than
being silently ignored.

pluggy calls implementations last-registered-first; extension hooks must run in ``extends`` order instead, so
``call_in_order`` calls them in an order the caller gives.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Iterable, Sequence
from typing import Any

import pluggy

from ishiki_host.errors import PluginLoadFailed
from ishiki_host.plugins import hookspecs

__all__ = ["IshikiPluginManager", "await_results", "call_hook", "call_in_order", "make_plugin_manager"]


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
        """pluggy's own parse, for the names that may be hook implementations (see the class docstring)."""
        kind: object = type(plugin)
        if (
            name in _marked_names(kind, self._impl_marker)
            or name in getattr(plugin, "__dict__", ())
            or isinstance(plugin, type | types.ModuleType)
        ):
            return super().parse_hookimpl_opts(plugin, name)
        return None

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> pluggy.HookspecOpts | None:
        """pluggy's own parse, for the marked names only (a manager is made per runtime)."""
        if name not in _marked_names(module_or_class, self.project_name + "_spec"):
            return None
        return super().parse_hookspec_opts(module_or_class, name)

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
    results: list[Any] = []
    for plugin in plugins:
        for impl in implementations:
            if impl.plugin is not plugin:
                continue
            arguments = {arg: kwargs[arg] for arg in impl.argnames}
            try:
                result = impl.function(**arguments)
                results.append(await result if inspect.isawaitable(result) else result)
            except Exception as exc:
                if not return_exceptions:
                    raise
                results.append(exc)
    return results
