"""Forward mode: the host connects to the implementation's WebSocket server and keeps a link up.

Each attempt opens a WebSocket to ``url`` with the access token, reads frames while ``get_login_info`` is
asked (its answer comes on the same link), begins serving as that QQ number the first time, and reads until
the link ends (``link.run_link``: closed, or silent past its heartbeats). Then it connects again: at once after
a link that was up for a second or more, with back-off (jitter from the injected random source, waits on the
host's clock) while attempts fail. A handshake refused with 401 or 403 ends ``run`` with ``OneBotAuthError``
(passing: the host restarts the channel with its own back-off, and its status says why); any other failure is
one log line per episode (``status.LinkStatus.trouble``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
import websockets
from ishiki_host import Backoff
from websockets.asyncio.client import ClientConnection, connect

from ishiki_channel_onebot.auth import bearer
from ishiki_channel_onebot.errors import OneBotAuthError, OneBotError
from ishiki_channel_onebot.link import run_link

if TYPE_CHECKING:
    from ishiki_host import Clock, RandomSource

    from ishiki_channel_onebot.api import OneBotAPI
    from ishiki_channel_onebot.sides import LinkSide

__all__ = ["ForwardClient"]

STABLE_SECONDS = 1.0
"""A link up this long was a working one: the next attempt goes at once."""

_MAX_FRAME = 32 * 1024 * 1024


class ForwardClient:
    """The forward links of one account (see the module docstring)."""

    def __init__(self, side: LinkSide, api: OneBotAPI, clock: Clock, rng: RandomSource):
        self._side = side
        self._api = api
        self._clock = clock
        self._rng = rng

    async def run(self, self_id: str | None, begin: Callable[[str], Awaitable[None]]) -> None:
        """Keep a link up until cancelled; ``begin(self_id)`` is awaited once, when the QQ number is first
        known (``self_id``: the configured one, checked against each login)."""
        account, status = self._side.account, self._side.status
        backoff = Backoff(self._rng, initial=0.5, maximum=account.backoff_max)
        while True:
            try:
                async with self._connect() as socket:
                    self_id = await self._link(socket, self_id, begin)
            except websockets.InvalidStatus as exc:
                code = exc.response.status_code
                if code in (401, 403):
                    raise OneBotAuthError(
                        f"onebot account {account.label}: the implementation at {account.url} refused the access "
                        f"token (HTTP {code}); check channels.onebot.accounts[].access_token"
                    ) from None
                status.trouble(f"the handshake was answered HTTP {code}", self._side.log, account.label)
            except (OSError, TimeoutError, websockets.InvalidHandshake, websockets.ConnectionClosed) as exc:
                status.trouble(f"cannot connect to {account.url} ({_short(exc)})", self._side.log, account.label)
            except OneBotError as exc:
                status.trouble(f"get_login_info failed ({exc})", self._side.log, account.label)
            if status.take_stable(STABLE_SECONDS):
                backoff.reset()
            else:
                await self._clock.sleep(backoff.next_delay())

    def _connect(self) -> connect:
        account = self._side.account
        return connect(
            account.url or "",
            additional_headers=bearer(account.access_token),
            open_timeout=account.action_timeout,
            max_size=_MAX_FRAME,
        )

    async def _link(
        self, socket: ClientConnection, self_id: str | None, begin: Callable[[str], Awaitable[None]]
    ) -> str | None:
        """One link: read while logging in, begin serving the first time, then read until it ends."""

        async def receive() -> str | bytes | None:
            try:
                return await socket.recv()
            except websockets.ConnectionClosed:
                return None

        side = self._side
        async with side.opened(socket.send) as link, anyio.create_task_group() as reading:

            async def read() -> None:
                link.why = await run_link(receive, socket.close, link.router, link.watch)
                reading.cancel_scope.cancel()

            reading.start_soon(read)
            known = await side.login(self._api, self_id, f"the implementation at {side.account.url}")
            if self_id is None:
                await begin(known)
            side.status.up(side.log, side.account.label)
            await anyio.sleep_forever()
        return known


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
