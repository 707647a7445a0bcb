"""``/tools`` and ``/extensions``: per-profile on/off switches in ``plugin_settings``, read live.

A switch written here applies from the next turn without a restart, because the runtime filters every turn's
tools and extensions through them (``ishiki_host.runtime.switches``, one query each). The kernel tools a
reply needs (``OPEN_TOOLS``) cannot be switched off: a persona that cannot send cannot answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ishiki_host.errors import CommandError
from ishiki_host.tools.kernel import OPEN_TOOLS

if TYPE_CHECKING:
    from ishiki_host.plugins.commands import CommandContext
    from ishiki_host.store.repos.plugin_settings import PluginKind

__all__ = ["extensions_command", "tools_command"]


def _parse(args: str, what: str) -> tuple[str, str] | None:
    words = args.split()
    if not words:
        return None
    if len(words) != 2 or words[0].lower() not in ("enable", "disable"):
        raise CommandError(f"Say /{what} enable NAME or /{what} disable NAME.")
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
    match = next((n for n in names if n == name), None) or next((n for n in names if n.lower() == name.lower()), None)
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
