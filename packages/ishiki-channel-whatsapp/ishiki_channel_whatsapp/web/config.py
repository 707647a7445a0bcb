"""The ``web`` backend's settings: ``WEB_SCHEMA`` (the ``web`` key of a WhatsApp account entry) and its parsed
form, ``WebSettings``.

Everything about the linked device lives under that one key; the keys every account has (``id``,
``max_download_bytes``, ``backoff_max``, ``dispatch_tries``, ``startup_timeout``) stay at the account's top
level and are read from there. ``WebSettings.from_config`` validates the whole entry again (the connection may
be built without the host's loader) and adds what a schema cannot say: ``pairing: code`` needs ``phone``, a
phone is written in international form, and the cloud backend's keys do not belong to a ``web`` account.
Every problem is a ``HostConfigInvalid`` naming its key (``channels.whatsapp.accounts[].web.phone``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ishiki_host import with_defaults
from ishiki_host.errors import HostConfigInvalid

__all__ = ["WEB_SCHEMA", "WebSettings", "normalize_phone"]

_CHAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mention_required": {"type": "boolean", "description": "Overrides web.mention_required in this group."},
    },
}

WEB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "web: the linked device's settings.",
    "properties": {
        "pairing": {
            "enum": ["qr", "code"],
            "default": "qr",
            "description": "How a new device is linked: qr prints a QR code on the host's stderr (WhatsApp > "
            "Linked devices > Link a device); code prints an 8-character code to type on the phone instead "
            "(Link with phone number), for servers without a terminal anyone looks at. Needs phone.",
        },
        "phone": {
            "type": ["string", "integer"],
            "description": "The number of the WhatsApp account, in international form (+49 151 2345678). "
            "Required with pairing: code; recommended with qr, since the sid whatsapp:<digits> is then known "
            "before the first pairing.",
        },
        "device_name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 60,
            "default": "Ishiki Host",
            "description": "The name the phone lists under Linked devices.",
        },
        "mention_required": {
            "type": "boolean",
            "default": True,
            "description": "true: in groups, only a message that @mentions the account or replies to it counts as "
            "addressed (the standard wake-up engine answers only those; the others are recorded); false: every "
            "group message counts as addressed. Direct chats never need a mention.",
        },
        "chats": {
            "type": "object",
            "default": {},
            "propertyNames": {"pattern": "^group:[0-9-]+(@g\\.us)?$"},
            "additionalProperties": _CHAT_SCHEMA,
            "description": "Per-group overrides, keyed by channel id (group:120363012345678901@g.us).",
        },
        "self_chat": {
            "type": "boolean",
            "default": True,
            "description": "What the account's owner writes from the phone in 'Message yourself' is input (talk "
            "to the persona on a personal number). Elsewhere the owner's own messages are never input.",
        },
        "mark_read": {
            "type": "boolean",
            "default": True,
            "description": "Send read receipts (blue ticks) for messages once they are durable in the host.",
        },
        "typing": {
            "type": "boolean",
            "default": True,
            "description": "Show 'typing...' while a turn runs. WhatsApp shows it only from a device that is "
            "online, so the device marks itself online when it connects (the phone then holds back its own "
            "notifications while the host runs); false: never online, no typing indicator.",
        },
        "proxy": {
            "type": "string",
            "pattern": "^(socks5|http|https)://[^\\s]+$",
            "description": "A proxy for the device's connections (socks5://host:port, http://host:port).",
        },
        "pairing_timeout": {
            "type": "number",
            "minimum": 30,
            "default": 180,
            "description": "How long one pairing attempt waits (WhatsApp rotates QR codes for about 160 s), in "
            "seconds; then the device starts again and shows a new code.",
        },
        "reconnect_timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 120,
            "description": "How long a dropped connection may take to come back by itself before the client is "
            "restarted (with back-off), in seconds.",
        },
    },
}

_CLOUD_KEYS = ("phone_number_id", "access_token", "app_secret", "verify_token", "graph_base", "graph_version")
_PHONE_PUNCTUATION = re.compile(r"[\s().\-/]")
_GROUP_ID = re.compile(r"^group:([0-9-]+)(@g\.us)?$")
_PATH = "channels.whatsapp.accounts[]"
# The account-level keys this backend reads, with the defaults of the package's ACCOUNT_SCHEMA (a connection
# built by hand, without the host's loader, gets the same values).
_ACCOUNT_DEFAULTS: dict[str, Any] = {
    "max_download_bytes": 25 * 1024 * 1024,
    "backoff_max": 60.0,
    "dispatch_tries": 3,
    "startup_timeout": 60.0,
}


def _default(key: str) -> Any:
    return WEB_SCHEMA["properties"][key]["default"]


def normalize_phone(value: object) -> str:
    """The digits of a phone number in international form (``+49 151 2345678`` -> ``491512345678``).

    ``ValueError`` says what is wrong: a leading ``0`` or ``00`` (write ``+`` and the country code instead), a
    letter, or fewer than 7 or more than 15 digits (E.164).
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"must be a phone number, got {type(value).__name__}")
    text = _PHONE_PUNCTUATION.sub("", str(value))
    digits = text.removeprefix("+")
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(f"{value!r} is not a phone number (digits, spaces and a leading + only)")
    if digits.startswith("0"):
        raise ValueError(f"{value!r} starts with 0: write it with + and the country code (+49 151 ...)")
    if not 7 <= len(digits) <= 15:
        raise ValueError(f"{value!r} has {len(digits)} digits; an international number has 7 to 15")
    return digits


@dataclass(frozen=True, slots=True)
class WebSettings:
    """A validated ``web`` account (see ``WEB_SCHEMA`` for each key; the rest come from the account's top level)."""

    pairing: Literal["qr", "code"] = _default("pairing")
    phone: str | None = None
    device_name: str = _default("device_name")
    mention_required: bool = _default("mention_required")
    chats: Mapping[str, bool] = field(default_factory=dict)  # group jid -> mention_required
    self_chat: bool = _default("self_chat")
    mark_read: bool = _default("mark_read")
    typing: bool = _default("typing")
    pairing_timeout: float = _default("pairing_timeout")
    reconnect_timeout: float = _default("reconnect_timeout")
    proxy: str | None = None
    id: str | None = None
    max_download_bytes: int = _ACCOUNT_DEFAULTS["max_download_bytes"]
    backoff_max: float = _ACCOUNT_DEFAULTS["backoff_max"]
    dispatch_tries: int = _ACCOUNT_DEFAULTS["dispatch_tries"]
    startup_timeout: float = _ACCOUNT_DEFAULTS["startup_timeout"]

    @classmethod
    def from_config(cls, account: Mapping[str, Any]) -> WebSettings:
        """Parse one ``backend: web`` entry; ``HostConfigInvalid`` names the key."""
        if not isinstance(account, Mapping):
            raise HostConfigInvalid(f"an account must be a mapping, got {type(account).__name__}", path=_PATH)
        _check_account(account)
        web = _web_block(account)
        phone = _phone(web)
        if web["pairing"] == "code" and phone is None:
            message = "pairing: code needs phone, the number to link, in international form (+49 151 2345678)"
            raise HostConfigInvalid(message, path=f"{_PATH}.web.phone")
        return cls(
            pairing=web["pairing"],
            phone=phone,
            device_name=str(web["device_name"]),
            mention_required=bool(web["mention_required"]),
            chats=_chats(web["chats"]),
            self_chat=bool(web["self_chat"]),
            mark_read=bool(web["mark_read"]),
            typing=bool(web["typing"]),
            pairing_timeout=float(web["pairing_timeout"]),
            reconnect_timeout=float(web["reconnect_timeout"]),
            proxy=web.get("proxy"),
            id=account.get("id"),
            max_download_bytes=int(account.get("max_download_bytes", _ACCOUNT_DEFAULTS["max_download_bytes"])),
            backoff_max=float(account.get("backoff_max", _ACCOUNT_DEFAULTS["backoff_max"])),
            dispatch_tries=int(account.get("dispatch_tries", _ACCOUNT_DEFAULTS["dispatch_tries"])),
            startup_timeout=float(account.get("startup_timeout", _ACCOUNT_DEFAULTS["startup_timeout"])),
        )

    @property
    def label(self) -> str:
        """How logs and errors name this account: ``'<id>'``, ``+<phone>``, or ``(web)``."""
        if self.id:
            return repr(self.id)
        return f"+{self.phone}" if self.phone else "(web, not paired yet)"

    def requires_mention(self, group_jid: str) -> bool:
        """Whether a message in the group ``group_jid`` must mention the account to start a turn."""
        return self.chats.get(group_jid, self.mention_required)


def _check_account(account: Mapping[str, Any]) -> None:
    """The whole entry against the package's account schema, then what only a web account must not have."""
    from ishiki_channel_whatsapp.config import check_account

    check_account(account)
    if account.get("backend") != "web":
        raise HostConfigInvalid(f"backend is {account.get('backend')!r}, not 'web'", path=f"{_PATH}.backend")
    for key in _CLOUD_KEYS:
        if key in account:
            message = f"{key} is a setting of backend cloud; this account's backend is web"
            raise HostConfigInvalid(message, path=f"{_PATH}.{key}")


def _web_block(account: Mapping[str, Any]) -> dict[str, Any]:
    web = account.get("web", {})
    if not isinstance(web, Mapping):
        raise HostConfigInvalid(f"web must be a mapping, got {type(web).__name__}", path=f"{_PATH}.web")
    filled = with_defaults(WEB_SCHEMA, dict(web))
    assert isinstance(filled, dict)  # with_defaults keeps a mapping a mapping
    return filled


def _phone(web: Mapping[str, Any]) -> str | None:
    if web.get("phone") is None:
        return None
    try:
        return normalize_phone(web["phone"])
    except ValueError as exc:
        raise HostConfigInvalid(f"phone {exc}", path=f"{_PATH}.web.phone") from None


def _chats(chats: Mapping[str, Any]) -> dict[str, bool]:
    """Per-group overrides keyed by the group's full jid (``group:123-456`` means ``123-456@g.us``)."""
    out: dict[str, bool] = {}
    for key, value in chats.items():
        match = _GROUP_ID.match(key)
        if match is not None and isinstance(value, Mapping) and "mention_required" in value:
            out[f"{match.group(1)}@g.us"] = bool(value["mention_required"])
    return out
