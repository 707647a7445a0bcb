"""Errors of the ``web`` backend, under the package's ``WhatsAppError`` (one tree for the whole channel).

Whatever neonize raises (``neonize.exc.NeonizeError`` and its kin) is wrapped into one of these by the client
module; neonize's own exceptions never escape it. ``fatal`` follows the host's ``ChannelError`` contract.

    WhatsAppError                       (ishiki_channel_whatsapp.errors)
    └── WhatsAppWebError                a call of the linked device failed (send, upload, download...)
        ├── WhatsAppWebLoggedOut        the device was unlinked (or never finished linking): pair again (fatal)
        ├── WhatsAppWebRefused          WhatsApp will not serve this device as it is: banned, outdated, its
        │                               session in use elsewhere, linked to another number (fatal)
        └── WhatsAppWebUnavailable      not connected, connecting failed, pairing timed out (passing)
"""

from __future__ import annotations

from ishiki_channel_whatsapp.errors import WhatsAppError

__all__ = ["WhatsAppWebError", "WhatsAppWebLoggedOut", "WhatsAppWebRefused", "WhatsAppWebUnavailable"]


class WhatsAppWebError(WhatsAppError):
    """A call of the linked device failed; ``what`` names it (``send``, ``upload``, ``download``...).

    ``forget_session``: the session is of no more use (logged out, linked to the wrong number); the connection
    removes it once the client has stopped.
    """

    def __init__(self, message: str, *, what: str = "", details: str = "", forget_session: bool = False):
        self.forget_session = forget_session
        super().__init__(message, what=what, details=details)


class WhatsAppWebLoggedOut(WhatsAppWebError):
    """The linked device was removed (from the phone, or by WhatsApp): its session is gone; pair again."""


class WhatsAppWebRefused(WhatsAppWebError):
    """WhatsApp refuses this device: banned for a while, too old a client, the session used by another
    process, or linked to another number than ``web.phone``. Restarting would not help."""


class WhatsAppWebUnavailable(WhatsAppWebError):
    """The device is not connected (starting, pairing, reconnecting or stopped), or could not connect."""

    fatal = False
