"""The extension hooks: the whole contract between a runtime and the extension instances mounted on it.

Each extension's ``create`` returns an instance; the runtime registers it in its own plugin manager (pluggy,
project name ``ishiki``) and calls the hooks below. An implementation is a method of that instance decorated
with ``@hookimpl`` (``from ishiki_host import hookimpl``) and named like the hook; it may take any subset of
the hook's arguments. Hooks only grow: arguments are added, never renamed or removed.

pluggy is synchronous: an implementation may be ``async def``, in which case it returns a coroutine that the
host awaits (``ishiki_host.plugins.hooks.await_results``). No hook is ``firstresult`` and none takes wrappers.

``runtime`` is the ``RuntimeContext`` of the runtime the instance is mounted on
(``ishiki_host.plugins.runtime_api``): its key, profile, clock, resource center, sessions, services,
``wake(prompt)``, ``notice(text)`` and logger. Extensions contribute tools, instructions, commands, status
lines and lifecycle; which tools a turn may use (trust, plugin switches) is the host's to decide.

Hooks are grouped by phase: lifecycle (attach, stop), every turn (tools, instructions, turn finished), and
the command layer (commands, status).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ishiki_host.core.tools import Tool
    from ishiki_host.plugins.commands import Command
    from ishiki_host.plugins.runtime_api import Dispose, RuntimeContext, TurnReport

__all__ = [
    "PHASES",
    "PROJECT",
    "hookimpl",
    "hookspec",
    "ishiki_attach",
    "ishiki_commands",
    "ishiki_instructions",
    "ishiki_status",
    "ishiki_stop",
    "ishiki_tools",
    "ishiki_turn_finished",
]

PROJECT = "ishiki"
"""The pluggy project name: markers and plugin managers of Ishiki use it."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

PHASES: dict[str, tuple[str, ...]] = {
    "Lifecycle": ("ishiki_attach", "ishiki_stop"),
    "Every turn": ("ishiki_tools", "ishiki_instructions", "ishiki_turn_finished"),
    "Command layer": ("ishiki_commands", "ishiki_status"),
}
"""The hooks by phase, as the reference documents them."""


# --- lifecycle -------------------------------------------------------------------------------------------


@hookspec
def ishiki_attach(runtime: RuntimeContext) -> Dispose | None:
    """Called once after the runtime is constructed, before its first turn.

    Set up subscriptions, timers and resource schemes here. Return a dispose callable (sync, or returning an
    awaitable) that the host calls when the runtime stops, or ``None`` when there is nothing to undo. The
    dispose callables run in reverse ``extends`` order, after ``ishiki_stop``.
    """


@hookspec
def ishiki_stop(runtime: RuntimeContext) -> None:
    """Called when the runtime stops: evicted when idle, reloaded, or the host exits.

    Always called, once per runtime, even when a turn failed or another extension's stop raised; an exception
    here is logged and the remaining implementations still run. Release what the instance holds. The return
    value is ignored.
    """


# --- every turn ----------------------------------------------------------------------------------------


@hookspec
def ishiki_tools(runtime: RuntimeContext) -> Sequence[Tool]:
    """Called at the start of every turn to collect the tools this extension offers in that turn.

    Implementations are asked in ``extends`` order and their tools are offered in that order after the kernel
    tools. Return the tools (possibly none); a name that another tool of the turn already has raises
    ``ToolConflictError`` into the turn's failure handling. Tools above the turn's trust level are dropped by
    the host, so return every tool and let trust decide.
    """
    return ()


@hookspec
def ishiki_instructions(runtime: RuntimeContext) -> str | None:
    """Called at the start of every turn to collect this extension's part of the system prompt.

    Implementations are asked in ``extends`` order; each non-empty string becomes one section after the
    persona and the control-flow sections. Return ``None`` (or an empty string) to add nothing. Text that is
    stable across turns should be cached by the instance.
    """


@hookspec
def ishiki_turn_finished(runtime: RuntimeContext, outcome: TurnReport) -> None:
    """Called after every turn of the runtime, whatever its end (done, failed or aborted).

    ``outcome`` describes the end of the turn (its state, the error when it failed, the ids of the messages it
    sent): a ``TurnReport`` (``ishiki_host.plugins.runtime_api``) with ``turn``, ``status``, ``reason``, ``error``,
    ``inbound`` (the entries the turn answered), ``sent_ids``, the agent's ``outcome``, ``trust`` (the level
    the turn ran at), ``seconds`` (how long it ran) and ``tools`` (the tool calls it made). It runs in the
    background after the reply was sent (the next turn need not wait for it), so use it for work such as
    summarizing. An extension switched off with ``/extensions`` is not called. The return value is ignored.
    """


# --- command layer -------------------------------------------------------------------------------------


@hookspec
def ishiki_commands(runtime: RuntimeContext) -> Sequence[Command]:
    """Called when the runtime's command table is built, to collect this extension's slash commands.

    Return ``Command`` objects (name, aliases, help text, required trust level and an async handler
    ``handler(ctx, args)`` getting a ``CommandContext``). A command is never sent to the model
    and is gated by the sender's trust level. Names are matched case-insensitively; a name already taken is
    reported and skipped. The table is built once, when the runtime starts (after ``ishiki_attach``).
    """
    return ()


@hookspec
def ishiki_status(runtime: RuntimeContext) -> Sequence[str]:
    """Called by ``/status`` to collect this extension's status lines.

    Return short human-readable lines (e.g. ``memory: 124 memories``); they are shown in ``extends`` order
    after the host's own lines. Return an empty sequence to add nothing.
    """
    return ()
