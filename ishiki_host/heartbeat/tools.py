"""The beat tools: ``set_beat``, ``list_beats``, ``update_beat``, ``delete_beat`` (trust ``trusted``).

A runtime sees the beats it made and the beats that speak in its chat; the others do not exist for it. Beats
from ``heartbeats.json`` are listed but never changed here. A beat records the level of the turn that made it
(``ToolContext.trust``) and its turns never run above it; an edit lowers it to the editor's level.
``make_beat_tools`` is called once per runtime:

    tools = make_beat_tools(store, scheduler, default_tz="Europe/Berlin", target_validator=host.check_target,
                            runtime_target=BeatTarget("alice", "telegram:1", "private:9"))
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ishiki_host.core.tools import TRUST_ORDER, Tool, ToolContext, ToolResult, TrustLevel
from ishiki_host.errors import HeartbeatInvalid, StoreError, ToolError
from ishiki_host.heartbeat.render import describe_beat, format_target, render_beats
from ishiki_host.heartbeat.rules import TOOL_RULES, check_beat
from ishiki_host.heartbeat.tool_args import ID_SCHEMA, check_args, resolve_target, set_schema, update_schema
from ishiki_host.store.repos.beat_types import Beat, BeatSpec, BeatTarget

if TYPE_CHECKING:
    from ishiki_host.heartbeat.beatfile import TargetValidator
    from ishiki_host.store.memory_store import MemoryStore

__all__ = ["BEAT_TOOL_NAMES", "Poker", "TargetSource", "beat_data", "make_beat_tools", "visible_beats"]

BEAT_TOOL_NAMES = ("set_beat", "list_beats", "update_beat", "delete_beat")
TargetSource = BeatTarget | Callable[[], BeatTarget | None] | None
"""The current chat: fixed for a channel-mode runtime, a callable for a cross-mode one, ``None`` for none."""
_FIELDS = ("text", "cron", "type", "recurring", "timezone", "target", "background")


class Poker(Protocol):
    """What the tools need of the scheduler: a nudge after beats changed."""

    def poke(self) -> None:
        """Re-arm the timer."""
        ...


async def visible_beats(store: MemoryStore, *, target: BeatTarget | None, created_by: str | None) -> list[Beat]:
    """The beats of one runtime: those it made (``created_by``) and those that speak at ``target``."""
    found: dict[str, Beat] = {}
    if created_by is not None:
        found.update((b.id, b) for b in await store.heartbeats.find(created_by=created_by))
    if target is not None:
        found.update((b.id, b) for b in await store.heartbeats.find(target=target))
    return sorted(found.values(), key=lambda b: (b.created_at, b.id))


def beat_data(beat: Beat) -> dict[str, Any]:
    """A beat as the structured part of a tool result."""
    data = dataclasses.asdict(beat)
    data["target"] = dataclasses.asdict(beat.target) if beat.target else None
    return data


@dataclasses.dataclass
class _BeatTools:
    store: MemoryStore
    scheduler: Poker
    default_tz: str
    validator: TargetValidator
    current: TargetSource
    created_by: str | None
    max_beats: int
    rng: random.Random

    def here(self) -> BeatTarget | None:
        return self.current() if callable(self.current) else self.current

    async def mine(self) -> list[Beat]:
        return await visible_beats(self.store, target=self.here(), created_by=self.created_by)

    async def find(self, beat_id: str) -> Beat:
        for beat in await self.mine():
            if beat.id == beat_id:
                return beat
        raise ToolError(f"no beat {beat_id!r} here; list_beats shows the beats of this chat")

    def check(self, spec: BeatSpec) -> float:
        try:
            first = check_beat(spec, default_tz=self.default_tz, now=self.store.clock.now(), rules=TOOL_RULES)
        except HeartbeatInvalid as exc:
            raise ToolError(exc.message) from exc
        reason = self.validator(spec.target) if spec.target is not None else None
        if reason:
            raise ToolError(f"cannot speak at {format_target(spec.target)}: {reason}")
        return first

    async def check_room(self) -> None:
        if self.created_by is None:
            return
        made = await self.store.heartbeats.find(created_by=self.created_by)
        if len(made) >= self.max_beats:
            raise ToolError(f"this chat already has {self.max_beats} beats; delete some first")

    async def new_id(self) -> str:
        for _ in range(20):
            beat_id = f"b-{self.rng.getrandbits(24):06x}"
            if await self.store.heartbeats.get(beat_id) is None:
                return beat_id
        raise ToolError("could not find a free beat id; try again")

    async def set_beat(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        check_args("set_beat", set_schema(self.default_tz), args)
        await self.check_room()
        spec = BeatSpec(
            await self.new_id(), args["text"], args["type"], args["cron"], args.get("timezone") or None,
            resolve_target(args, self.here()), args.get("recurring", True), ctx.trust,
        )  # fmt: skip
        next_run = self.check(spec)
        try:
            beat = await self.store.heartbeats.add(spec, next_run=next_run, created_by=self.created_by)
        except StoreError as exc:
            raise ToolError(str(exc)) from exc
        self.scheduler.poke()
        return ToolResult(f"Set {describe_beat(beat, self.default_tz)}", data=beat_data(beat))

    async def list_beats(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        beats = await self.mine()
        return ToolResult(render_beats(beats, self.default_tz), data=[beat_data(b) for b in beats])

    async def update_beat(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        check_args("update_beat", update_schema(self.default_tz), args)
        if not any(name in args for name in _FIELDS):
            raise ToolError(f"update_beat: give at least one field to change ({', '.join(_FIELDS)})")
        beat = await self.find(args["id"])
        _refuse_managed(beat)
        spec = _updated(beat, args, self.here(), ctx.trust)
        first = self.check(spec)
        next_run = beat.next_run if spec.schedule_key() == beat.spec.schedule_key() else first
        try:
            updated = await self.store.heartbeats.update(spec, next_run=next_run)
        except StoreError as exc:
            raise ToolError(str(exc)) from exc
        self.scheduler.poke()
        return ToolResult(f"Updated {describe_beat(updated, self.default_tz)}", data=beat_data(updated))

    async def delete_beat(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        check_args("delete_beat", ID_SCHEMA, args)
        beat = await self.find(args["id"])
        _refuse_managed(beat)
        try:
            await self.store.heartbeats.delete(beat.id)
        except StoreError as exc:
            raise ToolError(str(exc)) from exc
        self.scheduler.poke()
        return ToolResult(f"Deleted beat {beat.id}.", data={"id": beat.id})


def _refuse_managed(beat: Beat) -> None:
    if beat.managed:
        raise ToolError(f"beat {beat.id!r} comes from heartbeats.json; only the operator can change it there")


def _updated(beat: Beat, args: Mapping[str, Any], here: BeatTarget | None, editor: TrustLevel) -> BeatSpec:
    timezone = (args["timezone"] or None) if "timezone" in args else beat.timezone
    # The beat's turns now do what the editor asked too: they run at most at the lower of the two levels.
    trust = editor if beat.trust is None else min(beat.trust, editor, key=TRUST_ORDER.__getitem__)
    return dataclasses.replace(
        beat.spec, text=args.get("text", beat.text), type=args.get("type", beat.type), cron=args.get("cron", beat.cron),
        timezone=timezone, target=_updated_target(beat, args, here), recurring=args.get("recurring", beat.recurring),
        trust=trust,
    )  # fmt: skip


def _updated_target(beat: Beat, args: Mapping[str, Any], here: BeatTarget | None) -> BeatTarget | None:
    if "target" not in args and "background" not in args:
        return beat.target
    if args.get("target") or args.get("background"):
        return resolve_target(args, beat.target or here)
    # ``background: false`` alone: speak again, where it spoke or else in this chat.
    return beat.target or resolve_target({}, here)


def make_beat_tools(
    store: MemoryStore,
    scheduler: Poker,
    *,
    default_tz: str,
    target_validator: TargetValidator,
    runtime_target: TargetSource,
    created_by: str | None = None,
    max_beats: int = 100,
    rng: random.Random | None = None,
) -> list[Tool]:
    """The four beat tools of one runtime.

    ``runtime_target`` is the current chat (the default target); ``created_by`` the runtime's key, recorded on
    the beats it makes (default: ``profile/sid/channel`` of a fixed ``runtime_target``). ``target_validator``
    refuses targets no profile claims. ``rng`` draws beat ids (seed it in tests).
    """
    if created_by is None and isinstance(runtime_target, BeatTarget):
        created_by = f"{runtime_target.profile}/{runtime_target.sid}/{runtime_target.channel}"
    impl = _BeatTools(
        store, scheduler, default_tz, target_validator, runtime_target, created_by, max_beats, rng or random.Random()
    )
    return [
        Tool(
            "set_beat",
            "Schedule a beat: a reminder or a task that wakes you on a cron schedule (once or repeating) and "
            "speaks in this chat unless told otherwise. Returns its id and next run.",
            impl.set_beat,
            set_schema(default_tz),
        ),
        Tool("list_beats", "List the beats of this chat with their ids, schedules and next runs.", impl.list_beats),
        Tool(
            "update_beat",
            "Change a beat by id: give only the fields to change. Beats from heartbeats.json cannot be changed.",
            impl.update_beat,
            update_schema(default_tz),
        ),
        Tool("delete_beat", "Delete a beat by id (not those from heartbeats.json).", impl.delete_beat, ID_SCHEMA),
    ]
