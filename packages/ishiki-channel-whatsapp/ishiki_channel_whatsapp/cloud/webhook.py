"""The webhook of one cloud account: Meta's subscription handshake (``GET``) and its notifications (``POST``).

``GET ?hub.mode=subscribe&hub.verify_token=...&hub.challenge=...``: 200 with the challenge as plain text when
the verify token is the account's, else 403.

``POST``, in this order, each step before anything of the next:

1. ``X-Hub-Signature-256`` must be the HMAC-SHA256 of the raw body with the app secret, else **401**: nothing
   is parsed, nothing recorded (logged once per burst; counted in ``status()``);
2. the body must be JSON, else **400** (logged once per burst);
3. a notification of another shape than Meta documents is set aside whole (kept, counted) and answered 200:
   Meta would only send the same again;
4. each ``messages`` change for another phone number id is logged (once per burst) and skipped: 200, so Meta
   stops sending it;
5. statuses are counted and errors logged; the messages are taken (``Intake``): **200** once every one is
   durable, set aside or a repeat, **503** when one must come again (Meta redelivers).

Over-long bodies (413) and handlers past their deadline (503) are answered by the host's ingress.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import TYPE_CHECKING, Any

from ishiki_host import HttpRequest, HttpResponse

from ishiki_channel_whatsapp.cloud.payload import BUSINESS_ACCOUNT, NotificationInvalid, read_notification
from ishiki_channel_whatsapp.cloud.signature import SIGNATURE_HEADER, verify
from ishiki_channel_whatsapp.throttle import Throttled

if TYPE_CHECKING:
    from ishiki_host import Clock, Json

    from ishiki_channel_whatsapp.cloud.intake import Intake
    from ishiki_channel_whatsapp.cloud.payload import Change
    from ishiki_channel_whatsapp.cloud.statuses import StatusBook
    from ishiki_channel_whatsapp.config import CloudAccount

__all__ = ["WebhookHandler"]

OK = HttpResponse(200, "")
AGAIN = HttpResponse(503, "try again later")


class WebhookHandler:
    """The route handler of one cloud account (see the module docstring): ``await handler(request)``."""

    def __init__(
        self, account: CloudAccount, intake: Intake, statuses: StatusBook, clock: Clock, logger: logging.Logger
    ):
        self._account = account
        self._intake = intake
        self._statuses = statuses
        self._clock = clock
        self._log = logger
        self._throttled = Throttled(clock, logger)
        self.refused: dict[str, int] = {"signature": 0, "json": 0, "verifyToken": 0}

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        """Answer one request to the account's webhook."""
        if request.method == "GET":
            return self._handshake(request)
        return await self._notification(request)

    def status(self) -> dict[str, Json]:
        """How many requests were refused, by reason (``signature``, ``json``, ``verifyToken``)."""
        return dict(self.refused)

    def _handshake(self, request: HttpRequest) -> HttpResponse:
        query = request.query
        if query.get("hub.mode") != "subscribe" or "hub.challenge" not in query:
            return HttpResponse(400, "not a webhook subscription handshake (hub.mode=subscribe, hub.challenge)")
        token = query.get("hub.verify_token", "")
        if not hmac.compare_digest(token.encode("utf-8", "replace"), self._account.verify_token.encode("utf-8")):
            self.refused["verifyToken"] += 1
            self._warn("verify", "a webhook handshake from %s gave a wrong verify token; refused (403)", request.client)
            return HttpResponse(403, "wrong verify token")
        self._log.info("whatsapp account %s: Meta verified the webhook (subscription handshake)", self._account.label)
        return HttpResponse(200, query["hub.challenge"])

    async def _notification(self, request: HttpRequest) -> HttpResponse:
        if not verify(request.body, request.headers.get(SIGNATURE_HEADER), self._account.app_secret):
            self.refused["signature"] += 1
            missing = SIGNATURE_HEADER not in request.headers
            why = "without an X-Hub-Signature-256" if missing else "with a wrong X-Hub-Signature-256"
            self._warn("signature", "refused a webhook %s from %s (401; is app_secret right?)", why, request.client)
            return HttpResponse(401, "bad signature")
        try:
            data = json.loads(request.body)
        except (ValueError, RecursionError) as exc:
            self.refused["json"] += 1
            self._warn("json", "a signed webhook is not JSON (%s); answered 400", _short(exc))
            return HttpResponse(400, "the body is not JSON")
        return await self._take(data)

    async def _take(self, data: Any) -> HttpResponse:
        try:
            notification = read_notification(data)
        except NotificationInvalid as exc:
            await self._intake.set_aside("(notification)", data, f"malformed notification: {exc}", malformed=True)
            return OK
        if notification.object != BUSINESS_ACCOUNT:
            self._warn("object", "ignored a webhook about %r, not a WhatsApp business account", notification.object)
            return OK
        for field in notification.ignored:
            self._log.debug("whatsapp account %s: ignored a %r change", self._account.label, field)
        for change in notification.changes:
            if not await self._change(change):
                return AGAIN
        return OK

    async def _change(self, change: Change) -> bool:
        ours = self._account.phone_number_id
        if change.phone_number_id != ours:
            self._warn(
                f"number {change.phone_number_id}",
                "a webhook for phone number id %s reached the account of %s; skipped (answered 200). Give each "
                "number its own callback URL (phone number webhook override) or its own app.",
                change.phone_number_id,
                ours,
            )
            return True
        for status in change.statuses:
            self._statuses.take(status)
        for error in change.errors:
            self._log.error("whatsapp account %s: Meta reported an error: %s", self._account.label, error)
        return await self._intake.take(change)

    def _warn(self, key: str, message: str, *args: Any) -> None:
        self._throttled.log(logging.WARNING, key, f"whatsapp account %s: {message}", self._account.label, *args)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."
