"""``ishiki doctor`` for one Telegram account: is the token accepted, and in webhook mode, is the webhook set.

``diagnose(account, seconds=...)`` calls ``getMe`` (the bot's ``@username`` and how long the Bot API took to
answer) and, in webhook mode, ``getWebhookInfo`` (the URL Telegram posts to, the updates waiting, the last
delivery error). Each call is cut at ``seconds``. A refused token (401, or 404 for one Telegram cannot even
parse) is an error whose fix names the account's ``token`` key and the variable it is usually written with;
a Bot API that cannot be reached or does not answer in time is an error naming ``api_base``. Nothing here
changes the bot: no webhook is set or deleted, no update is confirmed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import anyio
import httpx
from ishiki_host import Finding
from ishiki_host.errors import HostConfigInvalid

from ishiki_channel_telegram.api import BotAPI
from ishiki_channel_telegram.config import TelegramAccount
from ishiki_channel_telegram.errors import TelegramAuthError, TelegramError, TelegramUnavailable

__all__ = ["diagnose"]

_TOKEN_FIX = (
    "put the token @BotFather gave this bot in channels.telegram.accounts[].token of ishiki.yaml "
    "(usually token: ${TELEGRAM_BOT_TOKEN}, with TELEGRAM_BOT_TOKEN set in the environment); "
    "/token in @BotFather shows it again"
)


async def diagnose(account: Mapping[str, Any], *, seconds: float) -> list[Finding]:
    """The findings for one account entry (see the module docstring)."""
    try:
        parsed = TelegramAccount.from_config(account)
    except HostConfigInvalid as exc:
        what = f"telegram account {account.get('name') or '(unnamed)'}" if isinstance(account, Mapping) else ""
        return [Finding("error", what or "telegram account", str(exc), "fix the entry in ishiki.yaml")]
    what = f"telegram account {parsed.label}"
    timeouts = httpx.Timeout(seconds)
    async with httpx.AsyncClient(timeout=timeouts, trust_env=False) as client:
        api = BotAPI(parsed.token, parsed.api_base, client=client)
        me = await _bot(api, parsed, what, seconds)
        if me.level != "ok" or parsed.mode != "webhook":
            return [me]
        return [me, await _webhook(api, parsed, seconds)]


async def _bot(api: BotAPI, account: TelegramAccount, what: str, seconds: float) -> Finding:
    started = time.perf_counter()
    try:
        with anyio.fail_after(seconds):
            me = await api.get_me()
    except TimeoutError:
        return _unreachable(what, account, f"getMe did not answer within {seconds:g} s")
    except TelegramAuthError as exc:
        return Finding("error", what, f"the token is refused ({exc.description})", _TOKEN_FIX)
    except TelegramUnavailable as exc:
        return _unreachable(what, account, exc.description)
    except TelegramError as exc:
        return Finding("error", what, f"getMe failed: {exc.description}", "see Telegram's words above")
    elapsed = (time.perf_counter() - started) * 1000
    username = me.get("username")
    return Finding("ok", what, f"bot @{username} answers getMe in {elapsed:.0f} ms ({account.api_base})")


async def _webhook(api: BotAPI, account: TelegramAccount, seconds: float) -> Finding:
    what = f"telegram account {account.label} webhook"
    try:
        with anyio.fail_after(seconds):
            info = await api.get_webhook_info()
    except TimeoutError:
        return _unreachable(what, account, f"getWebhookInfo did not answer within {seconds:g} s")
    except TelegramError as exc:
        return Finding("error", what, f"getWebhookInfo failed: {exc.description}", "run the check again")
    url, pending = str(info.get("url") or ""), info.get("pending_update_count", 0)
    if not url:
        return Finding(
            "warning",
            what,
            f"no webhook is set ({pending} updates waiting)",
            "start the host: it sets the webhook to http.public_url of ishiki.yaml at start",
        )
    error = info.get("last_error_message")
    if isinstance(error, str) and error:
        when = info.get("last_error_date")
        ago = f", {time.time() - when:.0f} s ago" if isinstance(when, int | float) else ""
        return Finding(
            "warning",
            what,
            f"Telegram posts to {url}; {pending} updates waiting; its last delivery failed{ago}: {error}",
            "check that http.public_url reaches the host over HTTPS (port 443, 80, 88 or 8443) and that the "
            "host is running",
        )
    return Finding("ok", what, f"Telegram posts to {url}; {pending} updates waiting")


def _unreachable(what: str, account: TelegramAccount, detail: str) -> Finding:
    return Finding(
        "error",
        what,
        f"the Bot API at {account.api_base} cannot be reached: {detail}",
        "check the network and channels.telegram.accounts[].api_base of ishiki.yaml",
    )
