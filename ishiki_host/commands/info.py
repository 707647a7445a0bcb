"""The informational built-ins: ``/help [cmd]``, ``/whoami``, ``/status``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ishiki_host.core.tools import trust_allows
from ishiki_host.errors import CommandError

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import SessionConfig, TrustConfig
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.plugins.commands import Command, CommandContext, CommandTable

__all__ = ["help_command", "render_help", "status_command", "summarizer_mode", "whoami_command"]


def _line(command: Command) -> str:
    aliases = f" (also {', '.join('/' + a for a in command.aliases)})" if command.aliases else ""
    return f"{command.synopsis} - {command.help}{aliases}"


def render_help(table: CommandTable, trust: TrustLevel, name: str = "", levels: TrustConfig | None = None) -> str:
    """``/help``: the commands open to ``trust``; ``/help NAME``: one command in full. ``levels``: the profile's
    ``trust`` section, whose ``commands`` may change what a command needs."""
    name = name.strip().lstrip("/")
    if name:
        command = table.get(name.split()[0])
        if command is None:
            raise CommandError(f"There is no command /{name.split()[0]}; /help lists them.")
        lines = [command.synopsis, command.help]
        if command.aliases:
            lines.append("Aliases: " + ", ".join("/" + a for a in command.aliases))
        if command.needs(levels) != "untrusted":
            lines.append(f"Needs a {command.needs(levels)} sender.")
        return "\n".join(lines)
    usable = [c for c in table.commands() if trust_allows(trust, c.needs(levels))]
    return "\n".join(["Commands:", *(_line(c) for c in usable), "/help <command> shows one command in full."])


async def help_command(ctx: CommandContext, args: str) -> str:
    """``/help [cmd]``."""
    return render_help(ctx.table, ctx.trust, args, ctx.runtime.profile.trust)


async def whoami_command(ctx: CommandContext, args: str) -> str:
    """``/whoami``: where the sender is, their id and trust level."""
    return f"channel: {ctx.channel}\nid: {ctx.sender}\ntrust: {ctx.trust}"


def summarizer_mode(session: SessionConfig, context_window: int) -> str:
    """What ``session.summarizer`` does, for ``/status``: only ``manual`` compacts at the threshold (``auto``
    condenses every exchange instead, ``off`` leaves it to ``/compact``), so only ``manual`` shows it."""
    if session.summarizer == "manual":
        return f"compaction at {session.compact_threshold:.0%} of {context_window:,} tokens"
    if session.summarizer == "auto":
        return "each exchange is condensed into long-term memory"
    return "no automatic summaries or compaction; /compact or /clear when the conversation gets long"


async def status_command(ctx: CommandContext, args: str) -> str:
    """``/status``: profile, model and breakers, summarizer mode, session size, what the channel set aside,
    extension lines."""
    runtime = ctx.runtime
    profile = runtime.profile
    session = profile.session
    size = await ctx.runtime.sessions.size()
    seeded = await ctx.runtime.sessions.carried_summary()
    lines = [f"profile: {profile.id} (runtime {runtime.key})"]
    lines += list(await ctx.host.model_status())
    lines.append(f"summarizer: {session.summarizer} ({summarizer_mode(session, runtime.context_window)})")
    lines.append(
        f"session: ~{size.tokens:,} tokens in {size.messages} messages" + (", seeded with a summary" if seeded else "")
    )
    lines += list(await ctx.host.channel_status())
    lines += list(await ctx.host.extension_status())
    return "\n".join(lines)
