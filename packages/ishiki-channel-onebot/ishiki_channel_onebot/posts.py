"""HTTP mode: the implementation posts each event to ``/hooks/onebot/<account>``; the host calls its HTTP API.

A post without the access token (a bearer, ``?access_token=``, or ``X-Signature`` keyed with it) is answered
401 and counted; a body that is not a JSON object 400. A heartbeat tells the watch; an event is taken with
one try (``Intake.take``): 204 once it is durable (or a repeat, or set aside), 503 when it must come again.
At start ``get_login_info`` over the API checks the token and the QQ number: a refused token ends ``run`` as in
forward mode; an API that does not answer yet is logged, and events are taken meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from ishiki_host import HttpResponse

from ishiki_channel_onebot.auth import token_matches
from ishiki_channel_onebot.errors import OneBotAuthError, OneBotError

if TYPE_CHECKING:
    from ishiki_host import HttpRequest

    from ishiki_channel_onebot.api import OneBotAPI
    from ishiki_channel_onebot.intake import Intake
    from ishiki_channel_onebot.sides import LinkSide

__all__ = ["EventPosts"]

_NO_CONTENT = HttpResponse(204, "")


class EventPosts:
    """The route handler of one account in http mode (see the module docstring); ``intake()`` is the running
    intake, if any."""

    def __init__(self, side: LinkSide, intake: Callable[[], Intake | None]):
        self._side = side
        self._intake = intake

    async def check(self, api: OneBotAPI, self_id: str) -> None:
        """The start's ``get_login_info`` (see the module docstring)."""
        side, label, where = self._side, self._side.account.label, f"the HTTP API at {self._side.account.url}"
        try:
            await side.login(api, self_id, where)
        except OneBotAuthError as exc:
            raise OneBotAuthError(
                f"onebot account {label}: {exc}; check channels.onebot.accounts[].access_token"
            ) from None
        except OneBotError as exc:
            side.status.trouble(f"{where} does not answer get_login_info ({exc})", side.log, label)
            return
        side.status.up(side.log, label)

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        """Answer one post."""
        side = self._side
        if not token_matches(side.account.access_token, request.headers, request.query, request.body):
            side.status.refuse(f"a post from {request.client} without the access token", side.log, side.account.label)
            return HttpResponse(401, "wrong or missing access token")
        try:
            frame = json.loads(request.body)
        except (ValueError, RecursionError):
            frame = None
        if not isinstance(frame, dict):
            side.status.malformed += 1
            side.log.warning("onebot account %s: a post is not a JSON object; answered 400", side.account.label)
            return HttpResponse(400, "not a JSON object")
        side.watch.saw_frame()
        if frame.get("post_type") == "meta_event":
            if frame.get("meta_event_type") == "heartbeat":
                side.watch.beat(frame.get("interval"))
                side.status.heartbeats += 1
            return _NO_CONTENT
        intake = self._intake()
        if intake is None or not await intake.take(frame):
            return HttpResponse(503, "not taken; send it again", headers={"Retry-After": "1"})
        return _NO_CONTENT
