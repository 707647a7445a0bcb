"""Start of a connection: ``getMe``, retried while the Bot API cannot be reached, fatal when the token is
refused.

A refused token is one clear ``TelegramAuthError`` naming the account (never the token); the host reports it
and keeps serving its other channels. A network that stays down longer than the account's ``startup_timeout``
ends in ``TelegramUnavailable``, so the host's own restart-with-back-off takes over instead of start-up
hanging.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ishiki_channel_telegram.entities import BotIdentity
from ishiki_channel_telegram.errors import (
    TelegramAuthError,
    TelegramConflict,
    TelegramError,
    TelegramRateLimited,
    TelegramUnavailable,
)

if TYPE_CHECKING:
    import logging

    from ishiki_host import Backoff, Clock

    from ishiki_channel_telegram.api import BotAPI
    from ishiki_channel_telegram.config import TelegramAccount

__all__ = ["connect"]


async def connect(
    api: BotAPI, account: TelegramAccount, clock: Clock, backoff: Backoff, logger: logging.Logger
) -> BotIdentity:
    """Who the bot is, from ``getMe`` (see the module docstring)."""
    bot_id, sep, secret = account.token.partition(":")
    if not (sep and bot_id.isdigit() and secret):
        raise TelegramAuthError(
            f"telegram account {account.label}: the token is not of the form <bot id>:<secret> "
            "(copy it whole from @BotFather)",
            method="getMe",
        )
    deadline = clock.monotonic() + account.startup_timeout
    while True:
        try:
            me = await api.get_me()
            break
        except TelegramAuthError as exc:
            raise TelegramAuthError(
                f"telegram account {account.label}: the Bot API at {account.api_base} refused the token "
                f"({exc.description}); check channels.telegram.accounts[].token",
                method="getMe",
                status=exc.status,
            ) from None
        except (TelegramRateLimited, TelegramUnavailable, TelegramConflict) as exc:
            delay = exc.retry_after if isinstance(exc, TelegramRateLimited) else backoff.next_delay()
            if clock.monotonic() + delay > deadline:
                raise TelegramUnavailable(
                    f"telegram account {account.label}: the Bot API at {account.api_base} could not be reached "
                    f"for {account.startup_timeout:g} s (last: {exc})",
                    method="getMe",
                ) from None
            logger.warning("telegram account %s: getMe failed (%s); retrying in %.1f s", account.label, exc, delay)
            await clock.sleep(delay)
        except TelegramError as exc:
            raise TelegramError(f"telegram account {account.label}: getMe failed: {exc}", method="getMe") from None
    return _identity(me, account)


def _identity(me: Mapping[str, object], account: TelegramAccount) -> BotIdentity:
    bot_id, username = me.get("id"), me.get("username")
    if not isinstance(bot_id, int) or not isinstance(username, str) or not username:
        raise TelegramError(f"telegram account {account.label}: getMe answered without an id and a username")
    name = me.get("first_name")
    return BotIdentity(id=bot_id, username=username, name=name if isinstance(name, str) else "")
