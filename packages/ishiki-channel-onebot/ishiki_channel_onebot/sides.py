"""``LinkSide``: what the channel does around each link, the same in every mode: the link's transport, frame
router and heartbeat watch made and attached when it opens, and taken down, counted and logged when it ends;
and the login check (``get_login_info``) a link to the implementation starts with."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ishiki_host.errors import ChannelError

from ishiki_channel_onebot.actions import WsTransport
from ishiki_channel_onebot.link import FrameRouter, HeartbeatWatch

if TYPE_CHECKING:
    from ishiki_host import Clock

    from ishiki_channel_onebot.actions import Actions
    from ishiki_channel_onebot.api import OneBotAPI
    from ishiki_channel_onebot.config import OneBotAccount
    from ishiki_channel_onebot.status import LinkStatus

__all__ = ["LinkSide", "OpenLink"]


@dataclass(slots=True)
class OpenLink:
    """One open link: its transport (``None`` for an events-only link), router and watch, and ``why`` it
    ended (set by whoever reads it)."""

    transport: WsTransport | None
    router: FrameRouter
    watch: HeartbeatWatch
    why: str = "the link closed"


class LinkSide:
    """The channel's side of the links of one account; ``events(frame)`` takes the event frames they bring,
    ``watch`` is the heartbeat watch of the newest link (http mode: of the posts)."""

    def __init__(
        self,
        account: OneBotAccount,
        clock: Clock,
        logger: logging.Logger,
        actions: Actions,
        status: LinkStatus,
        events: Callable[[dict[str, Any]], Awaitable[None]],
    ):
        self.account = account
        self._clock = clock
        self.log = logger
        self.actions = actions
        self.status = status
        self._events = events
        self.watch = HeartbeatWatch(clock, account.heartbeat_misses)

    @contextlib.asynccontextmanager
    async def opened(self, send: Callable[[str], Awaitable[None]], *, answers: bool = True) -> AsyncIterator[OpenLink]:
        """A link that carries action requests over ``send`` (unless ``answers`` is false) for the block."""
        transport = WsTransport(send) if answers else None
        self.watch = watch = HeartbeatWatch(self._clock, self.account.heartbeat_misses)
        link = OpenLink(transport, FrameRouter(transport, watch, self._events, self.log, self.account.label), watch)
        if transport is not None:
            self.actions.attach(transport)
        try:
            yield link
        finally:
            if transport is not None:
                self.actions.detach(transport, link.why)
                transport.close(link.why)
            self.status.malformed += link.router.malformed
            self.status.heartbeats += watch.beats
            self.status.down(link.why, self.log, self.account.label)

    async def login(self, api: OneBotAPI, expected: str | None, where: str) -> str:
        """The QQ number ``get_login_info`` answers; ``ChannelError`` (fatal) when it is not ``expected``."""
        me = await api.get_login_info()
        self_id = str(me.get("user_id", ""))
        if expected is not None and self_id != expected:
            raise ChannelError(
                f"onebot account {self.account.label}: {where} is logged in as {self_id}, not {expected} "
                "(self_id); fix one of them"
            )
        return self_id
