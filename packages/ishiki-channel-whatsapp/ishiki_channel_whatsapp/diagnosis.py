"""``ishiki doctor`` for one WhatsApp account, by backend.

- ``cloud``: ``GET /{version}/{phone_number_id}`` (cut at ``seconds``) proves the access token may use the
  number and shows it as people see it (``display_phone_number``, the verified name) with the latency; a
  refused token (190, HTTP 401) and a number the token may not use are errors naming the key to fix.
- ``web`` (a linked device): no network call; the session on disk says whether the device is linked (to which
  number) or must be paired first, which ``ishiki run`` does (a QR code or a pairing code in the log). The
  session lives in the account's state directory (``state_dir``, given by the doctor).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
from ishiki_host import Finding
from ishiki_host.errors import HostConfigInvalid

from ishiki_channel_whatsapp.cloud.graph import GraphAPI
from ishiki_channel_whatsapp.config import CloudAccount, check_account
from ishiki_channel_whatsapp.errors import WhatsAppAuthError, WhatsAppError, WhatsAppUnavailable
from ishiki_channel_whatsapp.web.config import WebSettings
from ishiki_channel_whatsapp.web.session import Session

__all__ = ["diagnose"]

_LOG = logging.getLogger(__name__)

_TOKEN_FIX = (
    "make a new access token (a system user's token does not expire) and put it in "
    "channels.whatsapp.accounts[].access_token of ishiki.yaml (usually access_token: ${WHATSAPP_TOKEN})"
)
_NUMBER_FIX = "copy phone_number_id from WhatsApp Manager > API setup, and give the token whatsapp_business_messaging"


async def diagnose(account: Mapping[str, Any], *, seconds: float, state_dir: Path) -> list[Finding]:
    """The findings for one account entry (see the module docstring)."""
    try:
        check_account(account)
        if account["backend"] == "cloud":
            return [await _cloud(CloudAccount.from_config(account), seconds)]
        return [await _web(WebSettings.from_config(account), state_dir)]
    except HostConfigInvalid as exc:
        return [Finding("error", "whatsapp account", str(exc), "fix the entry in ishiki.yaml")]


async def _cloud(account: CloudAccount, seconds: float) -> Finding:
    what = f"whatsapp account {account.label}"
    fields = {"fields": "display_phone_number,verified_name"}
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=httpx.Timeout(seconds), trust_env=False) as client:
        api = GraphAPI(account.access_token, account.graph_base, account.graph_version, client=client)
        try:
            with anyio.fail_after(seconds):
                info = await api.get(account.phone_number_id, fields, what="phone number")
        except TimeoutError:
            return _unreachable(what, account, f"the Graph API did not answer within {seconds:g} s")
        except WhatsAppAuthError as exc:
            return Finding("error", what, f"the access token is refused ({exc.details})", _TOKEN_FIX)
        except WhatsAppUnavailable as exc:
            return _unreachable(what, account, exc.details)
        except WhatsAppError as exc:
            detail = f"the token may not use phone number id {account.phone_number_id} ({exc.details})"
            return Finding("error", what, detail, _NUMBER_FIX)
    elapsed = (time.perf_counter() - started) * 1000
    number, name = info.get("display_phone_number") or account.phone_number_id, info.get("verified_name")
    named = f" ({name})" if name else ""
    return Finding("ok", what, f"number {number}{named} answers in {elapsed:.0f} ms ({account.graph_base})")


async def _web(settings: WebSettings, state_dir: Path) -> Finding:
    what = f"whatsapp account {settings.label} (linked device)"
    pair = "run `ishiki run DIR` on a terminal and link it: WhatsApp > Settings > Linked devices > Link a device"
    if settings.pairing == "code":
        pair = "run `ishiki run DIR`: the log shows a pairing code; type it on the phone (Link with phone number)"
    session = Session(state_dir, logger=_LOG)
    if not session.exists():
        return Finding("warning", what, f"not linked yet (no session in {state_dir})", pair)
    identity = await session.load_identity()
    if identity is None or not identity.phone:
        return Finding("warning", what, f"a session is in {state_dir} but no linked number is known", pair)
    if settings.phone and identity.phone != settings.phone:
        detail = f"linked to +{identity.phone}, but web.phone is +{settings.phone}"
        return Finding("error", what, detail, "fix web.phone, or remove the session and link the configured number")
    return Finding("ok", what, f"linked to +{identity.phone} (session in {state_dir})")


def _unreachable(what: str, account: CloudAccount, detail: str) -> Finding:
    return Finding(
        "error",
        what,
        f"the Graph API at {account.graph_base} cannot be reached: {detail}",
        "check the network and channels.whatsapp.accounts[].graph_base of ishiki.yaml",
    )
