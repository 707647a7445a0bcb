"""One WhatsApp account's settings: the JSON Schema of an entry of ``channels.whatsapp.accounts``, and the parsed
form of a ``cloud`` account (``CloudAccount``).

An account names its ``backend``: ``cloud`` (the WhatsApp Business Cloud API: webhooks in, the Graph API out)
or ``web`` (a linked device). The keys every account may have, and the cloud keys, are in ``ACCOUNT_SCHEMA``;
the ``web`` backend's own settings live under one key, ``web``, whose schema is ``WEB_SCHEMA``.

The schema is the single source of the defaults: the host fills them in before ``create``, and
``CloudAccount.from_config`` fills them in again from the same schema, so code that builds a connection by
hand gets the same values. Secrets (``access_token``, ``app_secret``, ``verify_token``) are never part of a
message: problems with them are described in our own words, never by quoting them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ishiki_host.errors import HostConfigInvalid
from jsonschema import Draft202012Validator

from ishiki_channel_whatsapp.web.config import WEB_SCHEMA  # the web backend's own settings, its schema

__all__ = [
    "ACCOUNT_SCHEMA",
    "CLOUD_REQUIRED",
    "SECRET_KEYS",
    "WEB_SCHEMA",
    "CloudAccount",
    "Template",
    "account_path",
    "check_account",
]


SECRET_KEYS = ("access_token", "app_secret", "verify_token")
"""Keys whose values are never quoted in an error or a log line."""

CLOUD_REQUIRED = ("phone_number_id", *SECRET_KEYS)
"""What a ``cloud`` account must have."""

_SECRET_HELP = {
    "access_token": "the access token of a system user of the Meta app (write access_token: ${WHATSAPP_TOKEN})",
    "app_secret": "the app secret (Meta app dashboard > App settings > Basic; write app_secret: "
    "${WHATSAPP_APP_SECRET})",
    "verify_token": "the verify token you type in the app's webhook settings (write verify_token: "
    "${WHATSAPP_VERIFY_TOKEN})",
}

ACCOUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["backend"],
    "properties": {
        "backend": {
            "enum": ["cloud", "web"],
            "description": "cloud: the WhatsApp Business Cloud API (webhooks through the host's HTTP ingress); "
            "web: a linked device on a personal or business number (paired by QR code).",
        },
        "id": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_.-]+$",
            "description": "The account's id in this host: its state directory and webhook path "
            "(/hooks/whatsapp/<id>); default: its index in the list.",
        },
        "phone_number_id": {
            "type": ["string", "integer"],
            "pattern": "^[0-9]+$",
            "minimum": 0,
            "description": "cloud: the phone number id (WhatsApp Manager > API setup), not the phone number. The "
            "sid is whatsapp:<phone_number_id>.",
        },
        "access_token": {
            "type": "string",
            "minLength": 1,
            "description": "cloud: a system user's access token with whatsapp_business_messaging; write "
            "${WHATSAPP_TOKEN}. Never logged.",
        },
        "app_secret": {
            "type": "string",
            "minLength": 1,
            "description": "cloud: the Meta app's secret; every webhook's X-Hub-Signature-256 is checked with it. "
            "Never logged.",
        },
        "verify_token": {
            "type": "string",
            "minLength": 1,
            "description": "cloud: the verify token typed in the app's webhook settings; answers Meta's "
            "subscription handshake. Never logged.",
        },
        "graph_base": {
            "type": "string",
            "pattern": "^https?://[^\\s]+$",
            "default": "https://graph.facebook.com",
            "description": "cloud: the Graph API server (a test server in tests).",
        },
        "graph_version": {
            "type": "string",
            "pattern": "^v[0-9]+\\.[0-9]+$",
            "default": "v23.0",
            "description": "cloud: the Graph API version in every path.",
        },
        "mark_read": {
            "type": "boolean",
            "default": True,
            "description": "cloud: while a turn runs, mark the chat's last message read and show the typing "
            "indicator (one call does both); false shows neither.",
        },
        "template_on_window_closed": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "An approved template without parameters."},
                "language": {"type": "string", "minLength": 2, "default": "en_US", "description": "Its language."},
            },
            "description": "cloud: a template sent (once until the person writes again) when a reply is refused "
            "because the 24-hour customer-service window is closed (error 131047). Default: none, only logged.",
        },
        "max_download_bytes": {
            "type": "integer",
            "minimum": 1,
            "default": 25 * 1024 * 1024,
            "description": "Inbound media larger than this is not downloaded; the model is told.",
        },
        "startup_timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 60,
            "description": "How long the start-up check is retried while the platform cannot be reached, in seconds.",
        },
        "backoff_max": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 60,
            "description": "The longest wait between retries (network errors, 5xx, rate limits), in seconds.",
        },
        "send_tries": {
            "type": "integer",
            "minimum": 1,
            "maximum": 20,
            "default": 5,
            "description": "How many times a send is tried through rate limits, 5xx and cut connections before it "
            "fails.",
        },
        "dispatch_tries": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 3,
            "description": "How many deliveries of a message the host fails to take are answered 503 (so Meta "
            "delivers it again) before it is set aside (logged, counted, kept in whatsapp-set-aside.jsonl). "
            "Failures the host calls passing are not counted; a message the host rejects is set aside at once.",
        },
        "web": WEB_SCHEMA,
    },
    "allOf": [{"if": {"properties": {"backend": {"const": "cloud"}}}, "then": {"required": list(CLOUD_REQUIRED)}}],
}


def account_path(index: int | None = None) -> str:
    """How errors name an account entry: ``channels.whatsapp.accounts[<index>]`` (``[]`` when unknown)."""
    return f"channels.whatsapp.accounts[{'' if index is None else index}]"


def _default(key: str) -> Any:
    return ACCOUNT_SCHEMA["properties"][key]["default"]


@dataclass(frozen=True, slots=True)
class Template:
    """A message template to send instead of a refused reply: ``name`` and ``language`` code."""

    name: str
    language: str = "en_US"


@dataclass(frozen=True, slots=True)
class CloudAccount:
    """A validated ``cloud`` account entry (see ``ACCOUNT_SCHEMA`` for each key's meaning)."""

    phone_number_id: str
    access_token: str = field(repr=False)
    app_secret: str = field(repr=False)
    verify_token: str = field(repr=False)
    id: str | None = None
    graph_base: str = _default("graph_base")
    graph_version: str = _default("graph_version")
    mark_read: bool = _default("mark_read")
    template_on_window_closed: Template | None = None
    max_download_bytes: int = _default("max_download_bytes")
    startup_timeout: float = _default("startup_timeout")
    backoff_max: float = _default("backoff_max")
    send_tries: int = _default("send_tries")
    dispatch_tries: int = _default("dispatch_tries")

    @classmethod
    def from_config(cls, account: Mapping[str, Any]) -> CloudAccount:
        """Parse one ``cloud`` entry; ``HostConfigInvalid`` names the key (never a secret's value)."""
        check_account(account)
        if account["backend"] != "cloud":
            raise HostConfigInvalid(f"backend is {account['backend']!r}, not 'cloud'", path=f"{account_path()}.backend")
        if "web" in account:
            message = "'web' holds the settings of backend web; this account's backend is cloud"
            raise HostConfigInvalid(message, path=f"{account_path()}.web")
        template = account.get("template_on_window_closed")
        return cls(
            phone_number_id=str(account["phone_number_id"]),
            access_token=account["access_token"],
            app_secret=account["app_secret"],
            verify_token=account["verify_token"],
            id=account.get("id"),
            graph_base=str(account.get("graph_base", _default("graph_base"))).rstrip("/"),
            graph_version=str(account.get("graph_version", _default("graph_version"))),
            mark_read=bool(account.get("mark_read", _default("mark_read"))),
            template_on_window_closed=Template(template["name"], template.get("language", "en_US"))
            if template
            else None,
            max_download_bytes=int(account.get("max_download_bytes", _default("max_download_bytes"))),
            startup_timeout=float(account.get("startup_timeout", _default("startup_timeout"))),
            backoff_max=float(account.get("backoff_max", _default("backoff_max"))),
            send_tries=int(account.get("send_tries", _default("send_tries"))),
            dispatch_tries=int(account.get("dispatch_tries", _default("dispatch_tries"))),
        )

    @property
    def label(self) -> str:
        """How logs and errors name this account: ``'<id>'``, or ``phone number id <digits>``."""
        return repr(self.id) if self.id else f"phone number id {self.phone_number_id}"

    @property
    def sid(self) -> str:
        """``whatsapp:<phone_number_id>``, the key the host routes by."""
        return f"whatsapp:{self.phone_number_id}"


def check_account(account: Mapping[str, Any]) -> None:
    """Validate against ``ACCOUNT_SCHEMA`` (a connection may be built without the host's loader).

    Every problem names its key; a secret's problems are described in our own words (a schema message would
    quote its value), and an unexpanded ``${VARIABLE}`` or an empty secret makes the account invalid.
    """
    path = account_path()
    if not isinstance(account, Mapping):
        raise HostConfigInvalid(f"an account must be a mapping with a backend, got {type(account).__name__}", path=path)
    if account.get("backend") == "cloud":
        for key in SECRET_KEYS:
            _check_secret(account, key, path)
    errors = sorted(_VALIDATOR.iter_errors(dict(account)), key=lambda err: [str(p) for p in err.absolute_path])
    for err in errors:
        where = ".".join(str(part) for part in err.absolute_path)
        if where in SECRET_KEYS:
            raise HostConfigInvalid(f"{where} must be a non-empty string", path=f"{path}.{where}")
        if where == "phone_number_id" and isinstance(account.get(where), bool | float):
            raise HostConfigInvalid("phone_number_id must be the digits of the id", path=f"{path}.{where}")
        raise HostConfigInvalid(err.message, path=f"{path}.{where}" if where else path)


def _check_secret(account: Mapping[str, Any], key: str, path: str) -> None:
    value = account.get(key)
    if not isinstance(value, str) or not value.strip():
        raise HostConfigInvalid(f"{key} is missing or empty: {_SECRET_HELP[key]}", path=f"{path}.{key}")
    if "${" in value:
        raise HostConfigInvalid(f"{key} holds an unexpanded ${{VARIABLE}}; is it set?", path=f"{path}.{key}")


_VALIDATOR = Draft202012Validator(ACCOUNT_SCHEMA)
