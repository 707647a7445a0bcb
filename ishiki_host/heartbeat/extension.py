"""``ishiki.ext.heartbeat``: the beat tools and ``/beats`` in every runtime (on by default, like memory).

The scheduler is the host's, one per host (``services.get(HEARTBEATS)``, a ``HeartbeatService`` the host
starts when its memory store is open); without it the extension offers nothing and ``/beats`` says why. Each
runtime's instance offers ``set_beat``, ``list_beats``, ``update_beat`` and ``delete_beat`` (trust
``trusted``) with the runtime's own chat as the default target and its key as the maker. A cross-mode runtime
serves many chats: its "here" is the chat of the turn's newest message (none in a turn without messages, so a
beat then needs an explicit target or ``background: true``).

A beat's own turn (its trigger carries ``heartbeat``, see ``heartbeat.runner``) is offered no beat tools, so a
beat never schedules more beats. Config (``extends.heartbeat.config``): ``max_beats``, how many beats one
runtime may make.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host.errors import CommandError
from ishiki_host.heartbeat.render import format_time, render_beats
from ishiki_host.heartbeat.runner import is_beat_turn
from ishiki_host.heartbeat.service import HEARTBEATS, HeartbeatService
from ishiki_host.heartbeat.tools import BEAT_TOOL_NAMES, make_beat_tools, visible_beats
from ishiki_host.plugins.base import Extension, PluginConfig
from ishiki_host.plugins.commands import Command
from ishiki_host.plugins.hookspecs import hookimpl
from ishiki_host.store.repos.beat_types import BeatTarget

if TYPE_CHECKING:
    from ishiki_host.core.bus import BusEvent
    from ishiki_host.core.tools import Tool
    from ishiki_host.plugins.commands import CommandContext
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.store.repos.beat_types import Beat

__all__ = ["HeartbeatExtension", "HeartbeatInstance"]

NOT_RUNNING = "Heartbeats are not running on this host: the memory database is not open (see the host log)."


class HeartbeatExtension(Extension):
    """Heartbeats: the beat tools (``set_beat``, ``list_beats``, ``update_beat``, ``delete_beat``, trust
    ``trusted``) and the ``/beats`` command in every runtime; on by default. The scheduler is the host's, one
    per host; see docs/heartbeats.md. A beat's own turn is offered no beat tools.
    """

    default_enabled: ClassVar[bool] = True
    tool_names: ClassVar[tuple[str, ...] | None] = BEAT_TOOL_NAMES
    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "max_beats": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10_000,
                "default": 100,
                "description": "How many beats one runtime (one chat, or a cross-mode persona) may make with the "
                "beat tools; set_beat refuses more.",
            }
        },
    }

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> HeartbeatInstance:
        """The instance for one runtime."""
        return HeartbeatInstance(ctx, max_beats=int(config.get("max_beats", 100)))


class HeartbeatInstance:
    """The heartbeat extension in one runtime: tools, ``/beats``, a status line."""

    def __init__(self, runtime: RuntimeContext, *, max_beats: int = 100):
        self._runtime = runtime
        self._max_beats = max_beats
        self._beat_turn: int | None = None  # the number of the last turn a beat started
        self._tools: list[Tool] | None = None

    @property
    def service(self) -> HeartbeatService | None:
        """The host's heartbeat service, if it runs."""
        return self._runtime.services.get(HEARTBEATS)

    @property
    def maker(self) -> str:
        """The runtime's key, recorded on the beats it makes."""
        return str(self._runtime.key)

    def here(self) -> BeatTarget | None:
        """This runtime's chat; in cross mode, the chat of the running turn's newest message."""
        rt = self._runtime
        if rt.sid is not None and rt.channel_id is not None:
            return BeatTarget(rt.profile.id, rt.sid, rt.channel_id)
        latest = rt.turn_state.latest_target()
        return BeatTarget(rt.profile.id, latest.sid, latest.channel_id) if latest is not None else None

    @hookimpl
    def ishiki_attach(self, runtime: RuntimeContext) -> Callable[[], None]:
        """Watch turn starts, to know whether the turn being set up is a beat's own."""
        return runtime.bus.subscribe("turn.start", self._on_turn_start)

    def _on_turn_start(self, event: BusEvent) -> None:
        turn = event["turn"]
        self._beat_turn = turn.number if is_beat_turn(turn.triggers) else None

    @hookimpl
    def ishiki_tools(self, runtime: RuntimeContext) -> Sequence[Tool]:
        """The beat tools, except in a beat's own turn or when the host runs no heartbeats."""
        service = self.service
        if service is None or (self._beat_turn is not None and runtime.turn_state.number == self._beat_turn):
            return ()
        if self._tools is None:
            self._tools = make_beat_tools(
                service.store,
                service,
                default_tz=service.default_tz,
                target_validator=service.check_target,
                runtime_target=self.here,
                created_by=self.maker,
                max_beats=self._max_beats,
                rng=runtime.rng,
            )
        return self._tools

    @hookimpl
    def ishiki_commands(self, runtime: RuntimeContext) -> Sequence[Command]:
        """``/beats``."""
        return (Command("beats", self.beats_command, "List the beats of this chat, soonest first.", trust="trusted"),)

    async def beats_command(self, ctx: CommandContext, args: str) -> str:
        """The ``/beats`` handler: the beats this runtime made and those that speak in the command's chat."""
        if args.strip():
            raise CommandError("/beats takes no arguments")
        service = self.service
        if service is None:
            return NOT_RUNNING
        sid, _, channel = ctx.channel.partition(" ")
        here = self.here() if self._runtime.sid is not None else BeatTarget(self._runtime.profile.id, sid, channel)
        beats = await visible_beats(service.store, target=here, created_by=self.maker)
        return render_beats(beats, service.default_tz)

    @hookimpl
    async def ishiki_status(self, runtime: RuntimeContext) -> Sequence[str]:
        """``heartbeats: 2 beats, next Mon 2024-06-03 09:00 CEST`` (the beats this runtime made or hears)."""
        service = self.service
        if service is None:
            return ["heartbeats: not running (the memory database is not open)"]
        beats = await visible_beats(service.store, target=self.here(), created_by=self.maker)
        return [_status(beats, service.default_tz)]


def _status(beats: list[Beat], tz: str) -> str:
    scheduled = [b for b in beats if b.next_run is not None]
    count = f"{len(beats)} beat{'s' if len(beats) != 1 else ''}"
    if not scheduled:
        return f"heartbeats: {count}"
    first = min(scheduled, key=lambda b: b.next_run or 0.0)
    assert first.next_run is not None
    return f"heartbeats: {count}, next {format_time(first.next_run, first.timezone or tz)} ({first.id})"
