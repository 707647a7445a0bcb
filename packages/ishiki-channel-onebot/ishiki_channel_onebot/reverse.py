"""Reverse mode: the implementation opens a WebSocket to the host's ingress, ``/hooks/onebot/<account>``.

A handshake without the access token is refused with 401 (logged once per burst, counted in ``refused`` with
``lastRefusal``); one whose ``X-Self-ID`` names another bot with 403. An accepted link carries events and
actions as a forward one does; ``X-Client-Role: Event`` makes it an events-only link (actions go over the
newest link that takes them). The implementation reconnects by itself when a link ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ishiki_channel_onebot.auth import token_matches
from ishiki_channel_onebot.link import run_link

if TYPE_CHECKING:
    from ishiki_host import HttpWebSocket

    from ishiki_channel_onebot.sides import LinkSide

__all__ = ["ReverseServer"]


class ReverseServer:
    """The WebSocket route handler of one account in reverse mode (see the module docstring)."""

    def __init__(self, side: LinkSide, self_id: str):
        self._side = side
        self._self_id = self_id

    async def __call__(self, socket: HttpWebSocket) -> None:
        """Serve one link the implementation opened, until it ends."""
        side, label = self._side, self._side.account.label
        if not token_matches(side.account.access_token, socket.headers, socket.query):
            side.status.refuse(f"a connection from {socket.client} without the access token", side.log, label)
            await socket.refuse(401, "wrong or missing access token")
            return
        claimed = socket.headers.get("x-self-id")
        if claimed and claimed != self._self_id:
            side.status.refuse(f"a connection for bot {claimed}, not {self._self_id}", side.log, label)
            await socket.refuse(403, f"this path serves bot {self._self_id}")
            return
        await socket.accept()
        answers = socket.headers.get("x-client-role", "Universal").lower() != "event"
        async with side.opened(socket.send, answers=answers) as link:
            side.status.up(side.log, label)
            link.why = await run_link(socket.receive, socket.close, link.router, link.watch)
