"""The session and memory built-ins: ``/clear`` (``/reset``), ``/compact``, ``/memory``, ``/memories``.

``/memory about @name [new text|forget]`` is the owner's view of the profile the persona keeps of a person
(``memory.people``): shown, rewritten (its trust level kept) or deleted. ``@name`` is the person's name, their
user id or ``platform:userId``; a group's profile is named by its chat, ``platform:selfId group:id``.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from ishiki_host.errors import CommandError
from ishiki_host.store.repos.memory_types import MAX_LIST, MEMORY_TYPES, MemoryScope

if TYPE_CHECKING:
    from ishiki_host.plugins.commands import CommandContext
    from ishiki_host.store.repos.memory_types import Memory, MemoryType

__all__ = [
    "DEFAULT_MEMORIES",
    "about_command",
    "clear_command",
    "compact_command",
    "memories_command",
    "memory_command",
    "parse_memories_args",
]

DEFAULT_MEMORIES = 10
_SHOWN_CHARS = 300


async def clear_command(ctx: CommandContext, args: str) -> str:
    """``/clear``: a fresh session, nothing carried; an empty session stays as it is."""
    if ctx.runtime.agent.busy:
        await ctx.reply("I will clear the session once the current reply is done.")
    return (await ctx.runtime.sessions.clear()).message


async def compact_command(ctx: CommandContext, args: str) -> str:
    """``/compact``: summarize into memory and start a session seeded with the summary."""
    if ctx.runtime.agent.busy or ctx.runtime.sessions.busy:
        await ctx.reply("I will compact the session once the current work is done.")
    return (await ctx.runtime.sessions.compact()).message


async def memory_command(ctx: CommandContext, args: str) -> str:
    """``/memory``: the summary carried into this session, when the asker's level may read it;
    ``/memory about @name ...``: a person's profile (the module docstring)."""
    words = args.split(maxsplit=1)
    if words and words[0].lower() == "about":
        return await about_command(ctx, words[1] if len(words) > 1 else "")
    if args.strip():
        raise CommandError("Use /memory, or /memory about @name [new text|forget].")
    carried = await ctx.runtime.sessions.carried_summary()
    if carried is None:
        return "No summary is carried into this session."
    if not carried.readable_at(ctx.trust):
        who = "the owner" if carried.readers == "owner" else "trusted people"
        return f"A summary is carried into this session, but it covers what only {who} may read; it is not shown here."
    return f"Summary carried into this session:\n{carried.text}"


async def about_command(ctx: CommandContext, args: str) -> str:
    """``/memory about @name [new text|forget]``: the owner reads, rewrites or deletes a person's profile."""
    if ctx.trust != "owner":
        return "Only the owner may read or change what I keep about people."
    store = ctx.runtime.services.memory
    if store is None:
        return "Long-term memory is not available on this host."
    who, _, text = args.strip().partition(" ")
    who = who.removeprefix("@")
    if not who:
        raise CommandError("Name the person: /memory about @name [new text|forget].")
    profile = ctx.runtime.profile.id
    found = await store.people.find(profile, who)
    if not found:
        return f"I keep no profile of @{who}."
    if len(found) > 1:
        return f"@{who} could be {', '.join(p.subject for p in found)}: name one of them."
    person, text = found[0], text.strip()
    if text.lower() == "forget":
        await store.people.delete(profile, person.subject)
        return f"Forgot the profile of {person.label}."
    if text:
        edited = await store.people.edit(profile, person.subject, text)
        person = edited if edited is not None else person
    head = (
        f"What I keep about {person.label} ({person.subject}; shown at {person.min_trust} level and above, "
        f"last written by the {person.edited_by}):"
    )
    return f"{head}\n{person.content}"


def parse_memories_args(args: str) -> tuple[MemoryType | None, int, bool]:
    """``[type] [count]`` in any order: the type (``None``: all), the count (clamped to 50) and whether clamped."""
    kind: MemoryType | None = None
    count = DEFAULT_MEMORIES
    for word in args.lower().split():
        singular = word[:-1] if word.endswith("s") and word[:-1] in MEMORY_TYPES else word
        if singular in MEMORY_TYPES and kind is None:
            kind = next(t for t in MEMORY_TYPES if t == singular)
        elif word.isdigit() and count == DEFAULT_MEMORIES:
            count = int(word)
        else:
            raise CommandError(f"{word!r} is neither a memory type ({', '.join(MEMORY_TYPES)}) nor a count.")
    if count < 1:
        raise CommandError("The count must be at least 1.")
    return kind, min(count, MAX_LIST), count > MAX_LIST


def _render(memory: Memory) -> str:
    day = dt.datetime.fromtimestamp(memory.created_at, dt.UTC).strftime("%Y-%m-%d")
    text = " ".join(memory.content.split())
    text = text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"
    return f"#{memory.id} {day} {memory.type}: {text}"


async def memories_command(ctx: CommandContext, args: str) -> str:
    """``/memories [type] [count]``: the newest memories readable at the sender's level, within the host's
    ``memory.scope`` for this chat and this sender."""
    store = ctx.runtime.services.memory
    if store is None:
        return "Long-term memory is not available on this host."
    kind, count, clamped = parse_memories_args(args)
    runtime = ctx.runtime
    scope = MemoryScope(runtime.services.memory_scope, str(runtime.key), (ctx.channel,), (ctx.sender,))
    found = await store.memories.latest(
        runtime.profile.id, trust=ctx.trust, types=[kind] if kind else None, count=count, scope=scope
    )
    if not found:
        return f"No {kind} memories yet." if kind else "No memories yet."
    head = f"The newest {len(found)} {kind or 'memories'}" + (f" (at most {MAX_LIST} are shown):" if clamped else ":")
    return "\n".join([head, *(_render(m) for m in found)])
