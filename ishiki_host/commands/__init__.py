"""The command layer (the message gateway): slash commands, trust and admission of senders.

- ``table``: ``Command`` and ``CommandTable`` (case-insensitive names and aliases, ``/cmd@bot``, duplicates
  reported and skipped); ``dispatch.run_command`` answers a command message (trust gate, handler, reply);
- ``context``: ``CommandContext``, what the runtime gives a handler, and ``Invocation``, a ready implementation;
- ``trust``: ``TrustPolicy`` (sender levels, ``refused``, turn levels), ``Refusals``, ``OPEN_TOOLS``,
  ``tools_for``;
- the built-ins (``builtin_commands()``): ``/help``, ``/whoami``, ``/status``, ``/clear`` (``/reset``),
  ``/compact``, ``/memory``, ``/memories``, ``/tools``, ``/extensions``; ``switches`` holds the per-turn
  filters ``enabled_tools`` / ``enabled_extensions`` behind ``/tools`` and ``/extensions``.

Extensions add their own commands through the ``ishiki_commands`` hook, returning ``Command`` objects.
"""

from ishiki_host.commands.context import CommandContext, HostView, Invocation, memory_store
from ishiki_host.commands.dispatch import CommandResult, refusal, run_command
from ishiki_host.commands.info import help_command, render_help, status_command, whoami_command
from ishiki_host.commands.session import clear_command, compact_command, memories_command, memory_command
from ishiki_host.commands.switches import enabled_extensions, enabled_tools, extensions_command, tools_command
from ishiki_host.commands.table import Command, CommandHandler, CommandMatch, CommandTable
from ishiki_host.commands.trust import (
    OPEN_TOOLS,
    REFUSAL_TEXT,
    Admission,
    Refusals,
    TrustPolicy,
    entry_sender,
    highest,
    lowest,
    sender_key,
    tools_for,
)

__all__ = [
    "OPEN_TOOLS",
    "REFUSAL_TEXT",
    "Admission",
    "Command",
    "CommandContext",
    "CommandHandler",
    "CommandMatch",
    "CommandResult",
    "CommandTable",
    "HostView",
    "Invocation",
    "Refusals",
    "TrustPolicy",
    "builtin_commands",
    "enabled_extensions",
    "enabled_tools",
    "entry_sender",
    "highest",
    "lowest",
    "memory_store",
    "refusal",
    "render_help",
    "run_command",
    "sender_key",
    "tools_for",
]


def builtin_commands() -> tuple[Command, ...]:
    """The host's own commands, registered first (source ``host``) in every runtime's table."""
    return (
        Command("help", help_command, "Show the commands, or one command in full.", "[command]"),
        Command("whoami", whoami_command, "Show your id, your trust level and this channel."),
        Command("status", status_command, "Show the profile, model, summarizer and session size."),
        Command("clear", clear_command, "Start a fresh session; nothing is carried over.", aliases=("reset",)),
        Command("compact", compact_command, "Summarize this session into memory and continue from the summary."),
        Command("memory", memory_command, "Show the summary carried into this session."),
        Command("memories", memories_command, "List the newest long-term memories.", "[type] [count]", trust="trusted"),
        Command("tools", tools_command, "List the tools, or switch one.", "[enable|disable NAME]", trust="trusted"),
        Command(
            "extensions",
            extensions_command,
            "List the extensions, or switch one.",
            "[enable|disable NAME]",
            trust="trusted",
        ),
    )
