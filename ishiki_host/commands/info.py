"""The informational built-ins: ``/help [cmd]``, ``/whoami``, ``/status``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ishiki_host.core.tools import trust_allows
from ishiki_host.errors import CommandError

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.plugins.commands import Command, CommandContext, CommandTable

__all__ = ["help_command", "render_help", "status_command", "whoami_command"]


def _line(command: Command) -> str:
    aliases = f" (also {', '.join('/' + a for a in command.aliases)})" if command.aliases else ""
    return f"{command.synopsis} - {command.help}{aliases}"


def render_help(table: CommandTable, trust: TrustLevel, name: str = "") -> str:
    """``/help``: the commands open to ``trust``; ``/help NAME``: one command in full."""
    name = name.strip().lstrip("/")
    if name:
        command = table.get(name.split()[0])
        if command is None:
            raise CommandError(f"There is no command /{name.split()[0]}; /help lists them.")
        lines = [command.synopsis, command.help]
        if command.aliases:
            lines.append("Aliases: " + ", ".join("/" + a for a in command.aliases))
        if command.trust != "untrusted":
            lines.append(f"Needs a {command.trust} sender.")
        return "\n".join(lines)
    usable = [c for c in table.commands() if trust_allows(trust, c.trust)]
    return "\n".join(["Commands:", *(_line(c) for c in usable), "/help <command> shows one command in full."])


async def help_command(ctx: CommandContext, args: str) -> str:
    """``/help [cmd]``."""
    return render_help(ctx.table, ctx.trust, args)


async def whoami_command(ctx: CommandContext, args: str) -> str:
    """``/whoami``: where the sender is, their id and trust level."""
    return f"channel: {ctx.channel}\nid: {ctx.sender}\ntrust: {ctx.trust}"


async def status_command(ctx: CommandContext, args: str) -> str:
    """``/status``: profile, model and breakers, summarizer mode, session size, extension lines."""
    runtime = ctx.runtime
    profile = runtime.profile
    session = profile.session
    size = await ctx.runtime.sessions.size()
    seeded = await ctx.runtime.sessions.carried_summary()
    lines = [f"profile: {profile.id} (runtime {runtime.key})"]
    lines += list(await ctx.host.model_status())
    lines.append(
        f"summarizer: {session.summarizer} (compaction at {session.compact_threshold:.0%} of "
        f"{runtime.context_window:,} tokens)"
    )
    lines.append(
        f"session: ~{size.tokens:,} tokens in {size.messages} messages" + (", seeded with a summary" if seeded else "")
    )
    lines += list(await ctx.host.extension_status())
    return "\n".join(lines)
