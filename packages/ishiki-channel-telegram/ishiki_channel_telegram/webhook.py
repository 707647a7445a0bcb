"""Webhook mode: Telegram posts each update to the host's HTTP server instead of being polled.

Start (``serve_webhook``): the account's mount (``/hooks/telegram/<index>``) is entered and its route added
first, then ``setWebhook`` registers ``http.public_url`` + that path with the secret token, the account's
``allowed_updates`` and ``webhook_max_connections`` (queued updates are kept), and ``getWebhookInfo`` checks
it (Telegram's last delivery error, if any, is logged). Only then is the connection ready. A stop leaves the
webhook set: Telegram queues the updates meanwhile and delivers them once the host answers again. Switching
an account back to polling deletes the webhook first (``clear_webhook``), or ``getUpdates`` answers 409.

Every request (``WebhookReceiver``): the ``X-Telegram-Bot-Api-Secret-Token`` header is compared with the
secret in constant time before the body is even parsed (missing or wrong: 401, nothing recorded); a body that
is not a JSON object is 400, logged once until a good one comes; the update then goes through the same intake
as polling (``Intake.take``), and the answer is 200 only once it is handled (durable in the host, a repeat,
or set aside). A failure the intake will try again is 503, and Telegram sends the update again later.

The secret (``webhook_secret``): when the account names none, it is derived from the bot token with
HMAC-SHA256 (``derive_secret``). It is the same at every start, with no state to lose, so deliveries Telegram
queued while the host was down verify after a restart; it changes when the token does, and it reveals
nothing of the token. (A secret kept in the state directory would also survive restarts, but not a wiped or
moved data directory; anyone holding the token can change the webhook anyway, so tying it to the token costs
nothing.)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import TYPE_CHECKING, Any

import anyio
from ishiki_host import HttpRequest, HttpResponse
from ishiki_host.errors import HostConfigInvalid

from ishiki_channel_telegram.errors import TelegramError, TelegramRateLimited

if TYPE_CHECKING:
    import logging

    from anyio.abc import TaskStatus
    from ishiki_host import ChannelHost, HttpMount, Json

    from ishiki_channel_telegram.api import BotAPI
    from ishiki_channel_telegram.config import TelegramAccount
    from ishiki_channel_telegram.intake import Intake
    from ishiki_channel_telegram.shaping import Shaper

__all__ = ["SECRET_HEADER", "WebhookReceiver", "clear_webhook", "derive_secret", "serve_webhook"]

SECRET_HEADER = "x-telegram-bot-api-secret-token"
"""The header Telegram puts the ``secret_token`` in (lower case, as ``HttpRequest.headers`` has it)."""

_SECRET_LABEL = b"ishiki-channel-telegram webhook secret_token v1"


def derive_secret(token: str) -> str:
    """The default secret token of a bot: HMAC-SHA256 of a fixed label keyed by ``token``, in base64url
    without padding (43 characters of ``A-Za-z0-9_-``, as ``setWebhook`` takes)."""
    digest = hmac.new(token.encode(), _SECRET_LABEL, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _text(status: int, text: str) -> HttpResponse:
    return HttpResponse(status, text + "\n")


class WebhookReceiver:
    """The handler of the webhook route of ``account`` (see the module docstring); ``status()`` counts the
    requests refused."""

    def __init__(self, intake: Intake, shaper: Shaper, account: TelegramAccount, *, logger: logging.Logger):
        self._intake = intake
        self._shaper = shaper
        self.secret_token = account.webhook_secret or derive_secret(account.token)
        self._secret = self.secret_token.encode("ascii")
        self._log = logger
        self._label = account.label
        self.unauthorized = 0
        self.malformed = 0
        self._malformed_episode = False

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        """Verify, parse and take one update."""
        given = request.headers.get(SECRET_HEADER)
        # Starlette decodes header values as latin-1, so this gives back the bytes that were sent.
        if given is None or not hmac.compare_digest(given.encode("latin-1"), self._secret):
            return self._unauthorized(request, missing=given is None)
        update = self._parse(request.body)
        if update is None:
            return _text(400, "the body is not a JSON object")
        self._malformed_episode = False
        if await self._intake.take(update, self._shaper):
            return HttpResponse(200)
        return HttpResponse(503, "not taken yet; send it again\n", headers={"Retry-After": "5"})

    def status(self) -> dict[str, Json]:
        """``unauthorized`` (401s) and ``malformed`` (400s) so far."""
        return {"unauthorized": self.unauthorized, "malformed": self.malformed}

    def _unauthorized(self, request: HttpRequest, *, missing: bool) -> HttpResponse:
        self.unauthorized += 1
        level = self._log.warning if self.unauthorized == 1 else self._log.debug  # a flood must not fill the log
        what = "without the secret token header" if missing else "with a wrong secret token"
        level("telegram account %s: refused a webhook request from %s %s (401)", self._label, request.client, what)
        return _text(401, "unauthorized")

    def _parse(self, body: bytes) -> dict[str, Any] | None:
        try:
            update = json.loads(body)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
            problem = f"is not JSON ({type(exc).__name__})"
        else:
            if isinstance(update, dict):
                return update
            problem = f"is JSON but not an object ({type(update).__name__})"
        self.malformed += 1
        if not self._malformed_episode:  # Telegram resends what it did not get 200 for: one line, not one a try
            self._malformed_episode = True
            self._log.warning(
                "telegram account %s: a webhook body of %d bytes %s (400)", self._label, len(body), problem
            )
        return None


def _public_url(mount: HttpMount, account: TelegramAccount) -> str:
    url = mount.public_url
    if url is None:
        raise HostConfigInvalid(
            f"telegram account {account.label} has mode: webhook, which needs http.public_url in ishiki.yaml: "
            f"the HTTPS address Telegram calls (e.g. https://bot.example.com), at which the host serves "
            f"{mount.prefix}",
            path="http.public_url",
        )
    return url


async def serve_webhook(
    host: ChannelHost,
    api: BotAPI,
    account: TelegramAccount,
    receiver: WebhookReceiver,
    *,
    task_status: TaskStatus[None],
) -> None:
    """Mount the route, register the webhook, report readiness, then serve until cancelled (see the module
    docstring). ``IngressError`` without ``http.listen``; ``HostConfigInvalid`` without ``http.public_url``."""
    async with host.http_mount() as mount:
        url = _public_url(mount, account)
        mount.route("/", receiver)
        await _register(api, url, receiver.secret_token, account, host.logger)
        task_status.started()
        await anyio.sleep_forever()


async def _register(api: BotAPI, url: str, secret: str, account: TelegramAccount, log: logging.Logger) -> None:
    label = account.label
    try:
        await api.set_webhook(
            url,
            secret_token=secret,
            allowed_updates=account.allowed_updates,
            max_connections=account.webhook_max_connections,
        )
        info = await api.get_webhook_info()
    except TelegramError as exc:
        hint = "; check http.public_url in ishiki.yaml (Telegram calls HTTPS on port 443, 80, 88 or 8443)"
        message = f"telegram account {label}: could not set the webhook to {url}: {exc}"
        raise _relabelled(exc, message + (hint if exc.status == 400 else "")) from None
    if info.get("url") != url:
        log.warning(
            "telegram account %s: getWebhookInfo shows %r, not %s (set by another process?)",
            label,
            info.get("url"),
            url,
        )
    if info.get("last_error_message"):
        log.warning(
            "telegram account %s: Telegram's last delivery to the webhook failed: %s", label, info["last_error_message"]
        )
    pending = info.get("pending_update_count", 0)
    log.info("telegram account %s takes its updates by webhook at %s (%s queued)", label, url, pending)


def _relabelled(exc: TelegramError, message: str) -> TelegramError:
    """``exc`` again, of its own class (so ``fatal`` stays what it was), with ``message``."""
    if isinstance(exc, TelegramRateLimited):
        return TelegramRateLimited(message, retry_after=exc.retry_after, method=exc.method, description=exc.description)
    return type(exc)(message, method=exc.method, status=exc.status, description=exc.description)


async def clear_webhook(api: BotAPI, account: TelegramAccount, log: logging.Logger) -> None:
    """Delete the bot's webhook if one is set (polling start: ``getUpdates`` answers 409 while it is)."""
    url = (await api.get_webhook_info()).get("url")
    if url:
        log.warning(
            "telegram account %s polls: deleting the webhook set to %s (its queued updates come by getUpdates)",
            account.label,
            url,
        )
        await api.delete_webhook()
