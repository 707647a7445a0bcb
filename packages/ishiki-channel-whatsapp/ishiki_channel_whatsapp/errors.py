"""Errors of the WhatsApp channel: one small tree under the host's ``ChannelError``.

Every error the Graph API or the network causes is raised as one of these at the client boundary
(``ishiki_channel_whatsapp.cloud.graph``); httpx's own exceptions never escape, and no message carries the
access token. ``code`` is the Graph API's error code (``190``, ``131047``...) when it gave one. ``fatal`` (the
host's ``ChannelError`` contract) is false for the passing troubles: when one ends ``run``, the host restarts
the connection with back-off instead of stopping the channel.

    ChannelError                        (ishiki_host.errors)
    └── WhatsAppError                   what (the call), status, code, details
        ├── WhatsAppAuthError           190 or HTTP 401: the access token expired or is invalid (fatal)
        ├── WhatsAppRateLimited         130429 (throughput), 131056 (pair rate), 4, 80007 (passing)
        ├── WhatsAppWindowClosed        131047: the 24-hour customer-service window is closed (not retried)
        ├── WhatsAppUnavailable         5xx, 1, 2, 131000, 131016, timeouts, network errors (passing; ``sent``:
        │                               the request may have arrived)
        └── WhatsAppBadRequest          any other refusal (100 invalid parameter, 131026 undeliverable...)
"""

from __future__ import annotations

from ishiki_host.errors import ChannelError

__all__ = [
    "WhatsAppAuthError",
    "WhatsAppBadRequest",
    "WhatsAppError",
    "WhatsAppRateLimited",
    "WhatsAppUnavailable",
    "WhatsAppWindowClosed",
]


class WhatsAppError(ChannelError):
    """A platform call failed. ``what`` names the call, ``status`` the HTTP status, ``code`` the Graph API's
    error code, ``details`` its own words (``error_data.details``, else ``message``)."""

    def __init__(
        self, message: str, *, what: str = "", status: int | None = None, code: int | None = None, details: str = ""
    ):
        self.what = what
        self.status = status
        self.code = code
        self.details = details or message
        super().__init__(message)


class WhatsAppAuthError(WhatsAppError):
    """The Graph API refused the access token (code 190, or HTTP 401): expired, revoked or mistyped."""


class WhatsAppRateLimited(WhatsAppError):
    """Too many messages: the number's throughput (130429), to one person (131056), or the app's calls (4,
    80007). Waited out with back-off."""

    fatal = False


class WhatsAppWindowClosed(WhatsAppError):
    """131047: more than 24 hours passed since the person last wrote; only a template may be sent until they
    write again."""


class WhatsAppUnavailable(WhatsAppError):
    """The Graph API could not be reached, timed out, or answered 5xx (or a code Meta calls temporary).

    ``sent`` is False only when the request certainly never left (the connection was not made).
    """

    fatal = False

    def __init__(
        self,
        message: str,
        *,
        what: str = "",
        status: int | None = None,
        code: int | None = None,
        details: str = "",
        sent: bool = True,
    ):
        self.sent = sent
        super().__init__(message, what=what, status=status, code=code, details=details)


class WhatsAppBadRequest(WhatsAppError):
    """Any other refusal; ``details`` is Meta's own words."""
