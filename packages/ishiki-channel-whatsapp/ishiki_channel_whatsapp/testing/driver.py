"""``WebhookDriver``: Meta's side of a webhook, for tests: it posts notifications to a URL, signed as Meta signs
them (``X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw body with the app secret>``), over real HTTP.

::

    driver = WebhookDriver(connection.status()["webhook"], app_secret=APP_SECRET)
    answer, (wamid,) = await driver.text("4915112345678", "hello", name="Alice")
    assert answer.status_code == 200

It can also misbehave as the internet does: ``post(..., signature=None)`` sends no signature,
``signature="sha256=00"`` a wrong one, ``post(b"{not json")`` a body that is not JSON, ``post(b"x" * n)`` an
oversized one; and ``handshake`` plays the subscription check Meta makes when a callback URL is set.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Self

import httpx

from ishiki_channel_whatsapp.cloud.signature import sign
from ishiki_channel_whatsapp.testing.payloads import (
    DEFAULT_DISPLAY_PHONE_NUMBER,
    DEFAULT_PHONE_NUMBER_ID,
    contact,
    media_message,
    notification,
    status,
    text_message,
)

__all__ = ["DEFAULT_APP_SECRET", "DEFAULT_VERIFY_TOKEN", "SIGNED", "WebhookDriver"]

DEFAULT_APP_SECRET = "fake-app-secret-0123456789abcdef"
DEFAULT_VERIFY_TOKEN = "fake-verify-token"
SIGNED = "signed"
"""The default ``signature`` of ``post``: the body's true signature."""


class WebhookDriver:
    """Posts to ``url`` as Meta would, for the number ``phone_number_id`` (see the module docstring).

    Without ``client`` it makes its own httpx client (closed by ``aclose`` or ``async with``).
    """

    def __init__(
        self,
        url: str,
        *,
        app_secret: str = DEFAULT_APP_SECRET,
        phone_number_id: str = DEFAULT_PHONE_NUMBER_ID,
        display_phone_number: str = DEFAULT_DISPLAY_PHONE_NUMBER,
        client: httpx.AsyncClient | None = None,
    ):
        self.url = url
        self.app_secret = app_secret
        self.phone_number_id = phone_number_id
        self.display_phone_number = display_phone_number
        self._owned = client is None
        self._client = client or httpx.AsyncClient(timeout=30.0, trust_env=False)
        self.posted: list[bytes] = []

    async def aclose(self) -> None:
        """Close the client, if this driver made it."""
        if self._owned:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def signed(self, payload: Mapping[str, Any] | bytes) -> tuple[bytes, dict[str, str]]:
        """The raw body of ``payload`` and the headers Meta sends with it (the signature included)."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        return body, {"content-type": "application/json", "x-hub-signature-256": sign(body, self.app_secret)}

    async def post(
        self,
        payload: Mapping[str, Any] | bytes,
        *,
        signature: str | None = SIGNED,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """Post ``payload`` (a notification, or raw bytes); ``signature``: ``SIGNED`` (the true one), ``None``
        (no header), or a header value to send instead."""
        body, sent = self.signed(payload)
        if signature is None:
            del sent["x-hub-signature-256"]
        elif signature != SIGNED:
            sent["x-hub-signature-256"] = signature
        self.posted.append(body)
        return await self._client.post(self.url, content=body, headers={**sent, **(headers or {})})

    async def notify(self, **parts: Any) -> httpx.Response:
        """Post ``payloads.notification(self.phone_number_id, **parts)`` (``messages=``, ``statuses=``...)."""
        parts.setdefault("display_phone_number", self.display_phone_number)
        return await self.post(notification(self.phone_number_id, **parts))

    async def messages(
        self, *messages: Mapping[str, Any], names: Iterable[tuple[str, str | None]] = ()
    ) -> tuple[httpx.Response, list[str]]:
        """Post ``messages`` in one notification, with ``contacts`` for ``names`` (``(wa_id, name)``); the answer
        and the ids of the messages."""
        contacts = [contact(wa_id, name) for wa_id, name in names]
        answer = await self.notify(messages=messages, contacts=contacts)
        return answer, [str(item["id"]) for item in messages]

    async def text(
        self, sender: str, text: str, *, name: str | None = "Alice", **keys: Any
    ) -> tuple[httpx.Response, list[str]]:
        """Post one text message from ``sender`` (``payloads.message`` keywords: ``reply_to=``...)."""
        keys.setdefault("reply_from", self.display_phone_number)
        return await self.messages(text_message(sender, text, **keys), names=[(sender, name)])

    async def media(
        self, sender: str, kind: str, media_id: str, *, name: str | None = "Alice", **keys: Any
    ) -> tuple[httpx.Response, list[str]]:
        """Post one media message (``payloads.media_message`` keywords: ``caption=``, ``mime_type=``...)."""
        return await self.messages(media_message(sender, kind, media_id, **keys), names=[(sender, name)])

    async def statuses(self, *entries: Mapping[str, Any]) -> httpx.Response:
        """Post statuses (``payloads.status``) in one notification."""
        return await self.notify(statuses=entries)

    async def status(self, message_id: str, state: str = "delivered", **keys: Any) -> httpx.Response:
        """Post one status of ``message_id``."""
        return await self.statuses(status(message_id, state, **keys))

    async def handshake(
        self, verify_token: str = DEFAULT_VERIFY_TOKEN, challenge: str = "1158201444", *, mode: str = "subscribe"
    ) -> httpx.Response:
        """Meta's subscription check: ``GET ?hub.mode=subscribe&hub.verify_token=...&hub.challenge=...``."""
        params = {"hub.mode": mode, "hub.verify_token": verify_token, "hub.challenge": challenge}
        return await self._client.get(self.url, params=params)
