"""Errors of the Telegram channel: one small tree under the host's ``ChannelError``.

Every error the Bot API or the network causes is raised as one of these at the client boundary; httpx's
own exceptions never escape, and no message carries the bot token (the client redacts it). ``fatal`` (the
host's ``ChannelError`` contract) is false for the passing troubles: when one ends ``run`` (``getMe`` failed for
``startup_timeout``), the host restarts the connection with back-off instead of stopping the channel.

    ChannelError                        (ishiki_host.errors)
    └── TelegramError                   method, status, description
        ├── TelegramAuthError           401/404: the token was refused (fatal: the host does not restart)
        ├── TelegramConflict            409: a webhook is set, or another poller uses the token (passing)
        ├── TelegramRateLimited         429: ``retry_after`` seconds to wait (passing)
        ├── TelegramUnavailable         5xx, timeouts, network errors (``sent``: the request may have arrived;
        │                               passing: the host restarts the connection with back-off)
        ├── TelegramForbidden           403: blocked by the user, removed from the chat
        └── TelegramBadRequest          any other 4xx (``can't parse entities``, ``message is too long``...)
"""

from __future__ import annotations

from ishiki_host.errors import ChannelError

__all__ = [
    "TelegramAuthError",
    "TelegramBadRequest",
    "TelegramConflict",
    "TelegramError",
    "TelegramForbidden",
    "TelegramRateLimited",
    "TelegramUnavailable",
]


class TelegramError(ChannelError):
    """A Bot API call failed. ``method`` is the API method, ``status`` the HTTP status when there was one."""

    def __init__(self, message: str, *, method: str = "", status: int | None = None, description: str = ""):
        self.method = method
        self.status = status
        self.description = description or message
        super().__init__(message)


class TelegramAuthError(TelegramError):
    """The Bot API refused the token (401 Unauthorized, or 404 for a token it cannot even parse)."""


class TelegramConflict(TelegramError):
    """409: a webhook is set for the bot, or another process polls with the same token."""

    fatal = False


class TelegramRateLimited(TelegramError):
    """429: too many requests; ``retry_after`` is the wait Telegram asked for, in seconds."""

    fatal = False

    def __init__(self, message: str, *, retry_after: float, method: str = "", description: str = ""):
        self.retry_after = retry_after
        super().__init__(message, method=method, status=429, description=description)


class TelegramUnavailable(TelegramError):
    """The Bot API could not be reached, timed out or answered 5xx.

    ``sent`` is False only when the request certainly never left (the connection was not made), so a send
    may be retried without risking a duplicate message.
    """

    fatal = False

    def __init__(
        self, message: str, *, method: str = "", status: int | None = None, description: str = "", sent: bool = True
    ):
        self.sent = sent
        super().__init__(message, method=method, status=status, description=description)


class TelegramForbidden(TelegramError):
    """403: the bot may not act in that chat (blocked by the user, removed from the group)."""


class TelegramBadRequest(TelegramError):
    """Any other refusal (400...): ``description`` is Telegram's own words."""

    @property
    def cannot_parse_entities(self) -> bool:
        """Telegram rejected the formatting of the text (``can't parse entities``)."""
        return "can't parse entities" in self.description.lower()
