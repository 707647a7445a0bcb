"""Plugin managers for extension hooks, and the one helper that awaits async hook results.

There is no global plugin manager: ``make_plugin_manager`` builds a fresh one (one per runtime, and one per
test). Registering an instance checks it at once, so a misnamed ``@hookimpl`` fails at start-up rather than
being silently ignored.

pluggy calls implementations last-registered-first; extension hooks must run in ``extends`` order instead, so
``call_in_order`` calls them in an order the caller gives.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any

import pluggy

from ishiki_host.errors import PluginLoadFailed
from ishiki_host.plugins import hookspecs

__all__ = ["IshikiPluginManager", "await_results", "call_hook", "call_in_order", "make_plugin_manager"]


class IshikiPluginManager(pluggy.PluginManager):
    """A pluggy ``PluginManager`` whose ``register`` validates the plugin at once.

    A hook implementation that names no hook of ``hookspecs`` (or takes an argument the hook does not have)
    raises ``PluginLoadFailed`` and the plugin is not left registered.
    """

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
