"""Errors of the OneBot channel: one small tree under the host's ``ChannelError``.

Every failure of an action or of the link is raised as one of these at the boundary; the WebSocket library's
and httpx's own exceptions never escape, and no message carries the access token.

    ChannelError                        (ishiki_host.errors)
    └── OneBotError                     action (the action's name, when one failed)
        ├── OneBotAuthError             the implementation refused the access token (401/403; passing: the
        │                               channel retries with back-off, the status says why)
        ├── OneBotUnavailable           no link (down, reconnecting), a network error (passing)
        ├── OneBotTimeout               an action had no answer within its deadline (passing)
        └── OneBotActionFailed          the implementation answered ``status: failed``; ``retcode`` and
                                        ``wording`` are its own (1400 bad request, 1404 no such action...)
"""

from __future__ import annotations

from ishiki_host.errors import ChannelError

__all__ = ["OneBotActionFailed", "OneBotAuthError", "OneBotError", "OneBotTimeout", "OneBotUnavailable"]


class OneBotError(ChannelError):
    """A OneBot action or link failed; ``action`` names the action when one did."""

    def __init__(self, message: str, *, action: str = ""):
        self.action = action
        super().__init__(message)


class OneBotAuthError(OneBotError):
    """The implementation refused the access token (HTTP 401 or 403 at the handshake or on the HTTP API)."""

    fatal = False


class OneBotUnavailable(OneBotError):
    """There is no link to the implementation now, or the network failed under a call."""

    fatal = False


class OneBotTimeout(OneBotError):
    """An action had no answer within its deadline (the implementation is slow, or the frame was lost)."""

    fatal = False


class OneBotActionFailed(OneBotError):
    """The implementation answered the action with ``status: failed``: ``retcode`` and ``wording`` say why."""

    def __init__(self, message: str, *, action: str, retcode: int, wording: str = ""):
        self.retcode = retcode
        self.wording = wording
        super().__init__(message, action=action)
