"""The host's own slash commands (``builtin_commands()``): ``/help``, ``/whoami``, ``/status``, ``/clear``
(``/reset``), ``/compact``, ``/memory``, ``/memories``, ``/tools``, ``/extensions``, ``/channels``, ``/usage``,
``/stop``.

They are written against the same contract as an extension's commands (``ishiki_host.plugins.commands``:
``Command``, ``CommandContext``); the runtime registers them first in every runtime's table (source
``host``), then each extension's ``ishiki_commands``.
"""

from ishiki_host.commands.info import help_command, render_help, status_command, whoami_command
from ishiki_host.commands.session import clear_command, compact_command, memories_command, memory_command
from ishiki_host.commands.switches import channels_command, extensions_command, tools_command
from ishiki_host.commands.turn import stop_command
from ishiki_host.commands.usage import usage_command
from ishiki_host.plugins.commands import Command

__all__ = [
    "builtin_commands",
    "channels_command",
    "clear_command",
    "compact_command",
    "extensions_command",
    "help_command",
    "memories_command",
    "memory_command",
    "render_help",
    "status_command",
    "stop_command",
    "tools_command",
    "usage_command",
    "whoami_command",
]


def builtin_commands() -> tuple[Command, ...]:
    """The host's own commands, registered first (source ``host``) in every runtime's table."""
    return (
        Command("help", help_command, "Show the commands, or one command in full.", "[command]"),
        Command("whoami", whoami_command, "Show your id, your trust level and this channel."),
        Command("status", status_command, "Show the profile, model, summarizer and session size."),
        # The whole chat shares the session: clearing or compacting it is not any group member's call.
        Command(
            "clear",
            clear_command,
            "Start a fresh session; nothing is carried over.",
            aliases=("reset",),
            trust="trusted",
        ),
        Command(
            "compact",
            compact_command,
            "Summarize this session into memory and continue from the summary.",
            trust="trusted",
        ),
        Command(
            "memory",
            memory_command,
            "Show the summary carried into this session, or (the owner) what I keep about a person.",
            "[about @name [new text|forget]]",
        ),
        Command("memories", memories_command, "List the newest long-term memories.", "[type] [count]", trust="trusted"),
        Command("tools", tools_command, "List the tools, or switch one.", "[enable|disable NAME]", trust="trusted"),
        Command(
            "extensions",
            extensions_command,
            "List the extensions, or switch one.",
            "[enable|disable NAME]",
            trust="trusted",
        ),
        Command(
            "channels",
            channels_command,
            "List this profile's channels, or switch one.",
            "[enable|disable NAME|here]",
            trust="trusted",
        ),
        Command(
            "usage",
            usage_command,
            "Show this profile's model calls, tokens and tool calls, by channel, model and tool.",
            "[today|N days]",
            trust="trusted",
        ),
        # Ending someone's turn is not any group member's call either.
        Command("stop", stop_command, "Stop the reply being written now.", trust="trusted"),
    )
