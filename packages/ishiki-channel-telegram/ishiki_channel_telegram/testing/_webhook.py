"""The fake's webhook: ``setWebhook``, ``deleteWebhook``, ``getWebhookInfo``, and delivery over real HTTP.

Telegram posts each update to the webhook's URL (``Content-Type: application/json``, the secret token in
``X-Telegram-Bot-Api-Secret-Token``) and forgets it once the answer is 2xx; any other answer, or none, keeps
it queued and is sent again later. Here "later" is when the test says: ``deliver()`` sends every queued
update once, so a test delivers, looks, and delivers again, with no timer anywhere. Deliveries go out through
a lean client of the fake's own (``_client``), so a benchmark measures the bot's server, not the fake's.

Telegram only calls ``https`` URLs on ports 443, 80, 88 and 8443, and ``setWebhook`` refuses others with
Telegram's wording. A test's server listens on plain HTTP on a loopback port, so ``proxy(public, local)``
stands for the reverse proxy in front of a real bot: a webhook under ``public`` is delivered to ``local``.
Given several local URLs (``proxy(public, a, b, c)``: hosts of one fleet behind a load balancer), each
request goes to the next of them in turn; one that does not answer fails that delivery, which stays queued.
A URL no proxy covers cannot be reached (``Failed to resolve host``), as a name without DNS would be.
"""

from __future__ import annotations

import http
import json
import re
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from ishiki_channel_telegram.testing._client import DeliveryFailed, WebhookClient
from ishiki_channel_telegram.testing._wire import ApiError
from ishiki_channel_telegram.testing.builders import WebhookDelivery

if TYPE_CHECKING:
    import collections

    from ishiki_channel_telegram.testing._http import Request

__all__ = ["Webhooks"]

_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
_PORTS = (443, 80, 88, 8443)
_TIMEOUT = httpx.Timeout(60.0)


class Webhooks:
    """The webhook part of ``FakeBotAPI`` (see the module docstring)."""

    updates: collections.deque[dict[str, Any]]
    confirmed: int
    _allowed: frozenset[str] | None
    _now: Callable[[], float]

    def _init_webhooks(self) -> None:
        self.webhook_url: str | None = None
        self.webhook_secret: str | None = None
        self.webhook_max_connections = 40
        self.webhook_deliveries: list[WebhookDelivery] = []
        self._last_error: tuple[int, str] | None = None  # (date, message), as getWebhookInfo reports it
        self._proxies: dict[str, tuple[str, ...]] = {}
        self._balanced = 0  # the requests a load balancer (``proxy`` with several URLs) has spread so far

    def _wanted(self, kind: str) -> bool:
        raise NotImplementedError  # FakeBotAPI's: whether ``allowed_updates`` lets an update of ``kind`` out

    def _notify(self) -> None:
        raise NotImplementedError  # FakeBotAPI's: wake whoever waits in ``until``

    def proxy(self, public_url: str, local_url: str, *more: str) -> None:
        """Deliver webhooks whose URL starts with ``public_url`` to ``local_url`` and the rest of the path (a
        reverse proxy, e.g. ``proxy("https://bot.example.com", ingress.base_url)``); with ``more`` URLs, each
        request to the next of them in turn (a load balancer in front of several hosts)."""
        self._proxies[public_url.rstrip("/")] = tuple(url.rstrip("/") for url in (local_url, *more))

    async def deliver(self, *, concurrency: int = 1) -> list[WebhookDelivery]:
        """Post each queued update to the webhook once, ``concurrency`` at a time (in update order when 1);
        a 2xx answer confirms it, anything else keeps it queued for the next call. Returns what each got."""
        if not self.webhook_url:
            raise RuntimeError("no webhook is set: nothing to deliver to")
        queued = [update for update in list(self.updates) if self._kept_for_delivery(update)]
        answers: dict[int, WebhookDelivery] = {}
        limit = anyio.CapacityLimiter(concurrency)
        client = WebhookClient()
        try:
            async with anyio.create_task_group() as tg:
                for update in queued:
                    tg.start_soon(self._deliver_one, client, limit, update, answers)
        finally:
            await client.aclose()
        return [answers[update["update_id"]] for update in queued]

    async def post_to_webhook(
        self, body: bytes | dict[str, Any], *, secret_token: str | None = None, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        """Post ``body`` (bytes as they are, a dict as JSON) to the webhook as Telegram would, but with
        ``secret_token`` in the header (``None``: the registered one; ``""``: no header), plus ``headers``:
        what a forger, a broken proxy or a replay sends. Nothing is recorded or confirmed."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = {"content-type": "application/json", **self._secret_header(secret_token), **(headers or {})}
        async with httpx.AsyncClient(timeout=_TIMEOUT, trust_env=False) as client:
            return await client.post(self._reachable(), content=data, headers=sent)

    async def _deliver_one(
        self,
        client: WebhookClient,
        limit: anyio.CapacityLimiter,
        update: dict[str, Any],
        answers: dict[int, WebhookDelivery],
    ) -> None:
        async with limit:
            delivery = await self._post(client, update)
        answers[update["update_id"]] = delivery
        self.webhook_deliveries.append(delivery)
        if delivery.ok:
            self._forget(update["update_id"])
        else:
            self._last_error = (int(self._now()), str(delivery.error))
        self._notify()

    async def _post(self, client: WebhookClient, update: dict[str, Any]) -> WebhookDelivery:
        update_id = update["update_id"]
        try:
            url = self._reachable()
            headers = {"content-type": "application/json", **self._secret_header(None)}
            status = await client.post(url, json.dumps(update).encode(), headers)
        except (_Unreachable, DeliveryFailed) as exc:
            return WebhookDelivery(update_id, None, str(exc))
        if 200 <= status < 300:
            return WebhookDelivery(update_id, status)
        return WebhookDelivery(update_id, status, f"Wrong response from the webhook: {_phrase(status)}")

    def _kept_for_delivery(self, update: dict[str, Any]) -> bool:
        """Whether ``update`` is to be sent; a kind ``allowed_updates`` leaves out is dropped, as Telegram does."""
        if self._wanted(next((key for key in update if key != "update_id"), "")):
            return True
        self._forget(update["update_id"])
        return False

    def _forget(self, update_id: int) -> None:
        if self.updates and self.updates[0]["update_id"] == update_id:
            self.updates.popleft()  # the usual case, in order: no pass over a queue of thousands per update
        else:
            kept = [update for update in self.updates if update["update_id"] != update_id]
            self.updates.clear()
            self.updates.extend(kept)
        self.confirmed = max(self.confirmed, update_id + 1)

    def _secret_header(self, secret_token: str | None) -> dict[str, str]:
        secret = self.webhook_secret if secret_token is None else secret_token
        return {"x-telegram-bot-api-secret-token": secret} if secret else {}

    def _reachable(self) -> str:
        """The URL a request to the webhook really goes to (through a ``proxy``)."""
        url = self.webhook_url or ""
        for public, locals_ in self._proxies.items():
            if url == public or url.startswith(public + "/"):
                self._balanced += 1
                return locals_[self._balanced % len(locals_)] + url[len(public) :]
        raise _Unreachable("Failed to resolve host: Name or service not known")

    def _set_webhook(self, request: Request) -> bool:
        params = request.params
        url = str(params.get("url") or "")
        if not url:
            return self._delete_webhook(request)
        _check_url(url)
        secret = params.get("secret_token")
        if secret is not None and not (isinstance(secret, str) and _SECRET.fullmatch(secret)):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        connections = int(params.get("max_connections", 40))
        if not 1 <= connections <= 100:
            raise ApiError(400, "Bad Request: max_connections must be between 1 and 100")
        if isinstance(params.get("allowed_updates"), list):
            self._allowed = frozenset(params["allowed_updates"]) or None
        if _flag(params.get("drop_pending_updates")):
            self._forget_all()
        self.webhook_url, self.webhook_secret, self.webhook_max_connections = url, secret, connections
        return True  # the last delivery error stays reported, as Telegram's does

    def _delete_webhook(self, request: Request) -> bool:
        if _flag(request.params.get("drop_pending_updates")):
            self._forget_all()
        self.webhook_url = self.webhook_secret = None
        return True

    def _get_webhook_info(self, request: Request) -> dict[str, Any]:
        info: dict[str, Any] = {
            "url": self.webhook_url or "",
            "has_custom_certificate": False,
            "pending_update_count": len(self.updates),
        }
        if self.webhook_url:
            info["max_connections"] = self.webhook_max_connections
            if self._allowed is not None:
                info["allowed_updates"] = sorted(self._allowed)
        if self._last_error is not None:
            info["last_error_date"], info["last_error_message"] = self._last_error
        return info

    def _forget_all(self) -> None:
        for update in list(self.updates):
            self._forget(update["update_id"])


class _Unreachable(Exception):
    """The webhook's host cannot be reached from the fake (no ``proxy`` covers it)."""


def _check_url(url: str) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ApiError(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
    if (parts.port or 443) not in _PORTS:
        raise ApiError(400, "Bad Request: bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443")


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _phrase(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)
