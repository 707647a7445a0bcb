"""``/tools``, ``/extensions`` and ``/channels``: per-profile on/off switches in ``plugin_settings``, read live.

A switch written here applies from the next turn without a restart, because the runtime filters every turn's
tools and extensions through them (``ishiki_host.runtime.switches``, one query each). The kernel tools a
reply needs (``OPEN_TOOLS``) cannot be switched off: a persona that cannot send cannot answer.

``/channels`` switches the profile's channel accounts (the ``platform:selfId`` keys of its ``channels``
section; ``here`` is the one the command came from). The command layer reads the switch for every inbound
event, so it applies from the next message: on an account switched off, the profile neither answers nor stores
anything, and only ``/channels`` (from a trusted sender) is answered there, to switch it back on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ishiki_host.errors import CommandError
from ishiki_host.tools.kernel import OPEN_TOOLS

if TYPE_CHECKING:
    from ishiki_host.plugins.commands import CommandContext
    from ishiki_host.store.repos.plugin_settings import PluginKind

__all__ = ["channels_command", "extensions_command", "tools_command"]


def _parse(args: str, what: str, name: str = "NAME") -> tuple[str, str] | None:
    words = args.split()
    if not words:
        return None
    if len(words) != 2 or words[0].lower() not in ("enable", "disable"):
        raise CommandError(f"Say /{what} enable {name} or /{what} disable {name}.")
    return words[0].lower(), words[1]


async def _switch(ctx: CommandContext, kind: PluginKind, name: str, action: str) -> str:
    store = ctx.runtime.services.memory
    if store is None:
        raise CommandError("Switches need the memory database, which is not open on this host.")
    profile = ctx.runtime.profile.id
    await store.plugin_settings.set(kind, name, action == "enable", profile=profile)
    state = "on" if action == "enable" else "off"
    return f"Turned {kind} {name} {state} for {profile}; it applies from the next turn."


def _listing(title: str, names: Sequence[str], switches: dict[str, bool], notes: dict[str, str]) -> str:
    if not names:
        return f"No {title}."
    lines = [f"{title.capitalize()}:"]
    for name in names:
        state = "on" if switches.get(name, True) else "off"
        lines.append(f"- {name}: {state}{notes.get(name, '')}")
    return "\n".join(lines)


async def tools_command(ctx: CommandContext, args: str) -> str:
    """``/tools`` lists the tools and their state; ``/tools enable|disable NAME`` switches one."""
    surface = list(await ctx.host.tool_surface())
    names = [tool.name for tool in surface]
    parsed = _parse(args, "tools")
    store = ctx.runtime.services.memory
    if parsed is None:
        switches = await store.plugin_settings.effective("tool", profile=ctx.runtime.profile.id) if store else {}
        notes = {t.name: f" (needs {t.trust})" for t in surface if t.trust != "untrusted"}
        notes |= {n: " (kernel, always on)" for n in names if n in OPEN_TOOLS}
        return _listing("tools", names, {**switches, **dict.fromkeys(OPEN_TOOLS, True)}, notes)
    action, name = parsed
    match = _find(names, name)
    if match is None:
        raise CommandError(f"No tool {name!r} here; /tools lists them.")
    if match in OPEN_TOOLS:
        raise CommandError(f"{match} is a kernel tool every reply needs; it cannot be switched off or on.")
    return await _switch(ctx, "tool", match, action)


async def extensions_command(ctx: CommandContext, args: str) -> str:
    """``/extensions`` lists the profile's extensions; ``/extensions enable|disable NAME`` switches one."""
    names = [use.name for use in ctx.runtime.profile.extends]
    parsed = _parse(args, "extensions")
    if parsed is None:
        store = ctx.runtime.services.memory
        switches = await store.plugin_settings.effective("extension", profile=ctx.runtime.profile.id) if store else {}
        return _listing("extensions", names, switches, {})
    action, name = parsed
    match = next((n for n in names if n.lower() == name.lower()), None)
    if match is None:
        raise CommandError(f"No extension {name!r} in this profile; /extensions lists them.")
    return await _switch(ctx, "extension", match, action)


async def channels_command(ctx: CommandContext, args: str) -> str:
    """``/channels`` lists the profile's channel accounts; ``/channels enable|disable NAME|here`` switches one."""
    names = sorted(ctx.runtime.profile.claims.by_sid)
    here = ctx.channel.partition(" ")[0]
    parsed = _parse(args, "channels", "NAME|here")
    if parsed is None:
        store = ctx.runtime.services.memory
        switches = await store.plugin_settings.effective("channel", profile=ctx.runtime.profile.id) if store else {}
        return _listing("channels", names, switches, {here: " (here)"})
    action, name = parsed
    match = _find(names, here if name.lower() == "here" else name)
    if match is None:
        raise CommandError(f"No channel {name!r} in this profile; /channels lists them.")
    await _switch(ctx, "channel", match, action)
    profile = ctx.runtime.profile.id
    if action == "enable":
        return f"Turned channel {match} on for {profile}; it answers there from the next message."
    return (
        f"Turned channel {match} off for {profile}: from the next message it neither answers nor keeps what is "
        f"said there. /channels enable {match} (trusted) turns it back on."
    )


def _find(names: Sequence[str], wanted: str) -> str | None:
    """The name ``wanted`` spells exactly, else the one it spells in another case."""
    return next((n for n in names if n == wanted), None) or next(
        (n for n in names if n.lower() == wanted.lower()), None
    )
