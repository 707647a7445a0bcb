"""Start of a cloud connection: ``GET /{version}/{phone_number_id}`` proves the token may use the number, and
says which number it is.

A refused token (190, HTTP 401) is one clear ``WhatsAppAuthError`` naming the account (never the token); a
number the Graph API does not know, or that the token may not use, is one clear fatal ``WhatsAppBadRequest``;
the host reports either and keeps serving its other channels. A Graph API that stays unreachable (network,
5xx, rate limits) longer than ``startup_timeout`` ends in ``WhatsAppUnavailable``, so the host's own
restart-with-back-off takes over instead of start-up hanging.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_channel_whatsapp.errors import (
    WhatsAppAuthError,
    WhatsAppBadRequest,
    WhatsAppError,
    WhatsAppRateLimited,
    WhatsAppUnavailable,
)

if TYPE_CHECKING:
    import logging

    from ishiki_host import Backoff, Clock

    from ishiki_channel_whatsapp.cloud.graph import GraphAPI
    from ishiki_channel_whatsapp.config import CloudAccount

__all__ = ["PhoneNumber", "connect"]


@dataclass(frozen=True, slots=True)
class PhoneNumber:
    """The number an account sends from: its id, as people see it (``+1 555-010-0000``), and its verified
    business name."""

    id: str
    display_phone_number: str | None = None
    verified_name: str | None = None


async def connect(
    api: GraphAPI, account: CloudAccount, clock: Clock, backoff: Backoff, logger: logging.Logger
) -> PhoneNumber:
    """Which number the account is (see the module docstring)."""
    deadline = clock.monotonic() + account.startup_timeout
    fields = {"fields": "display_phone_number,verified_name"}
    where = f"whatsapp account {account.label}"
    while True:
        try:
            info = await api.get(account.phone_number_id, fields, what="phone number")
            break
        except WhatsAppAuthError as exc:
            raise WhatsAppAuthError(
                f"{where}: the Graph API at {account.graph_base} refused the access token ({exc.details}); it may "
                "have expired or been revoked: make a new one and set channels.whatsapp.accounts[].access_token",
                what=exc.what,
                status=exc.status,
                code=exc.code,
            ) from None
        except (WhatsAppRateLimited, WhatsAppUnavailable) as exc:
            delay = backoff.next_delay()
            if clock.monotonic() + delay > deadline:
                raise WhatsAppUnavailable(
                    f"{where}: the Graph API at {account.graph_base} could not be reached for "
                    f"{account.startup_timeout:g} s (last: {exc})",
                    what="phone number",
                ) from None
            logger.warning("%s: the start-up check failed (%s); retrying in %.1f s", where, exc, delay)
            await clock.sleep(delay)
        except WhatsAppError as exc:
            raise WhatsAppBadRequest(
                f"{where}: the Graph API does not let this token use phone number id {account.phone_number_id} "
                f"({exc.details}); check phone_number_id (WhatsApp Manager > API setup) and the token's permissions",
                what=exc.what,
                status=exc.status,
                code=exc.code,
            ) from None
    display, name = info.get("display_phone_number"), info.get("verified_name")
    return PhoneNumber(
        account.phone_number_id,
        display if isinstance(display, str) else None,
        name if isinstance(name, str) else None,
    )
