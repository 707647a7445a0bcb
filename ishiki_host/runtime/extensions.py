"""The extension instances mounted on one runtime: their hooks, called in order, and their end.

Each instance is checked when it is mounted (``HookCatalog.hooks``: a misnamed hook implementation is
``PluginLoadFailed``; the host's catalog reads each class once) and asked in ``extends`` order (mounted order for
instances added later). ``stop_all`` calls every ``ishiki_stop`` (an exception is logged and the others still run)
and then every dispose callable ``ishiki_attach`` returned, in reverse order.

The per-turn hooks take ``only``: the names of the extensions switched on for the turn (``/extensions``
writes the switches); ``None`` asks every instance.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from ishiki_host.plugins.hooks import HookCatalog, InstanceHooks, await_results

if TYPE_CHECKING:
    from ishiki_host.core.tools import Tool
    from ishiki_host.plugins.commands import Command
    from ishiki_host.plugins.runtime_api import RuntimeContext, TurnReport

__all__ = ["MountedExtensions"]


class MountedExtensions:
    """The extension instances of one runtime (see the module docstring)."""

    def __init__(self, runtime: RuntimeContext, logger: logging.Logger, catalog: HookCatalog | None = None):
        self._runtime = runtime
        self._logger = logger
        self._catalog = catalog if catalog is not None else HookCatalog()
        self._mounted: list[tuple[str, InstanceHooks]] = []
        self._disposers: list[tuple[str, Any]] = []

    @property
    def names(self) -> tuple[str, ...]:
        """The mounted extensions, in order."""
        return tuple(name for name, _ in self._mounted)

    @property
    def instances(self) -> tuple[object, ...]:
        """The mounted instances, in order."""
        return tuple(hooks.instance for _, hooks in self._mounted)

    def implements(self, hook: str) -> bool:
        """Whether some mounted instance implements ``hook`` (so callers can skip work nobody wants)."""
        return any(hooks.implements(hook) for _, hooks in self._mounted)

    def register(self, name: str, instance: object) -> None:
        """Mount ``instance`` (``PluginLoadFailed`` when a hook implementation is misnamed)."""
        self._mounted.append((name, self._catalog.hooks(instance)))

    async def attach(self, name: str, instance: object) -> None:
        """Run ``ishiki_attach`` of one instance; an exception is logged, the instance stays mounted."""
        hooks = next((hooks for _, hooks in self._mounted if hooks.instance is instance), None)
        hooks = hooks or self._catalog.hooks(instance)
        try:
            results = await hooks.call("ishiki_attach", runtime=self._runtime)
        except Exception:
            self._logger.exception("extension %r failed in ishiki_attach; it stays mounted without it", name)
            return
        self._disposers.extend((name, d) for d in results if callable(d))

    def _selected(self, only: Collection[str] | None) -> list[tuple[str, InstanceHooks]]:
        return self._mounted if only is None else [(n, i) for n, i in self._mounted if n in only]

    async def tools(self, only: Collection[str] | None = None) -> list[tuple[str, Sequence[Tool]]]:
        """Each extension's tools for this turn (an exception fails the turn, naming the extension)."""
        offered: list[tuple[str, Sequence[Tool]]] = []
        for name, hooks in self._selected(only):
            try:
                batches = await hooks.call("ishiki_tools", runtime=self._runtime)
            except Exception:
                self._logger.error("extension %r raised in ishiki_tools; this turn fails", name)
                raise
            offered.append((name, [tool for batch in batches for tool in (batch or ())]))
        return offered

    async def instructions(self, only: Collection[str] | None = None) -> list[str]:
        """Each extension's non-empty instructions, in order (an exception fails the turn)."""
        sections: list[str] = []
        for name, hooks in self._selected(only):
            try:
                found = await hooks.call("ishiki_instructions", runtime=self._runtime)
            except Exception:
                self._logger.error("extension %r raised in ishiki_instructions; this turn fails", name)
                raise
            sections.extend(s for s in found if isinstance(s, str) and s.strip())
        return sections

    async def turn_finished(self, report: TurnReport, only: Collection[str] | None = None) -> None:
        """``ishiki_turn_finished`` of every instance; exceptions are logged."""
        await self._each("ishiki_turn_finished", only, outcome=report)

    async def commands(self) -> list[tuple[str, list[Command]]]:
        """Each extension's ``ishiki_commands``, in order; an exception is logged and that extension adds none."""
        found: list[tuple[str, list[Command]]] = []
        for name, results in await self._each("ishiki_commands", None):
            found.append((name, [command for batch in results for command in (batch or ())]))
        return found

    async def status(self, only: Collection[str] | None = None) -> list[str]:
        """The ``ishiki_status`` lines of the extensions, in order (a failing one says so in its line)."""
        lines: list[str] = []
        for _, results in await self._each("ishiki_status", only, failed=lambda n: [[f"{n}: status failed"]]):
            lines.extend(str(line) for batch in results for line in (batch or ()))
        return lines

    async def stop_all(self) -> None:
        """Every ``ishiki_stop``, then every dispose in reverse order; nothing stops the rest."""
        await self._each("ishiki_stop", None)
        for name, dispose in reversed(self._disposers):
            try:
                await await_results([dispose()])
            except Exception:
                self._logger.exception("the dispose of extension %r failed", name)
        self._disposers.clear()

    async def _each(
        self, hook: str, only: Collection[str] | None, failed: Any = lambda name: [], **kwargs: Any
    ) -> list[tuple[str, list[Any]]]:
        """Each selected instance's results of ``hook``; an exception is logged and ``failed(name)`` stands in."""
        answers: list[tuple[str, list[Any]]] = []
        if not self._mounted:
            return answers
        for name, hooks in self._selected(only):
            results = await hooks.call(hook, return_exceptions=True, runtime=self._runtime, **kwargs)
            errors = [r for r in results if isinstance(r, Exception)]
            for error in errors:
                self._logger.error("extension %r raised in %s", name, hook, exc_info=error)
            answers.append((name, failed(name) if errors else results))
        return answers
