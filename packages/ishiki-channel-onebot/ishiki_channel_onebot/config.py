"""One OneBot account's settings: the JSON Schema of an entry of ``channels.onebot.accounts``, and its parsed
form (``OneBotAccount``).

The schema is the single source of the defaults: the host fills them in before ``create``, and
``OneBotAccount.from_config`` fills them in again from the same schema, so code that builds a connection by
hand (tests, the bench) gets the same values. The access token is never part of a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ishiki_host import parse_channel_id
from ishiki_host.errors import HostConfigInvalid
from jsonschema import Draft202012Validator

__all__ = ["ACCOUNT_SCHEMA", "Mode", "OneBotAccount"]

Mode = Literal["forward", "reverse", "http"]

_CHAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mention_required": {"type": "boolean", "description": "Overrides the account's mention_required here."},
    },
}

ACCOUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {
            "enum": ["forward", "reverse", "http"],
            "default": "forward",
            "description": "forward: the host connects to the implementation's WebSocket server (url). reverse: "
            "the implementation connects to the host's HTTP ingress, at /hooks/onebot/<account> (http.listen of "
            "ishiki.yaml). http: the implementation posts events to that path and the host calls its HTTP API "
            "(url).",
        },
        "url": {
            "type": "string",
            "pattern": "^(wss?|https?)://[^\\s]+$",
            "description": "forward: the WebSocket server (ws://127.0.0.1:3001); http: the HTTP API "
            "(http://127.0.0.1:3000). Not used in reverse mode.",
        },
        "access_token": {
            "type": "string",
            "description": "The implementation's access token (write ${ONEBOT_ACCESS_TOKEN}): sent as "
            "'Authorization: Bearer' on every connection and call, and required of the implementation in reverse "
            "and http modes. Never logged.",
        },
        "self_id": {
            "type": "string",
            "pattern": "^[0-9]{4,12}$",
            "description": "The bot's QQ number. Required in reverse and http modes (the profile's claim is "
            "onebot:<self_id>); in forward mode it is learnt from get_login_info and, when given, checked.",
        },
        "name": {"type": "string", "minLength": 1, "description": "A label for logs and errors."},
        "action_timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 30,
            "description": "The deadline of each action (send_group_msg, get_image...), in seconds.",
        },
        "heartbeat_misses": {
            "type": "number",
            "minimum": 1,
            "default": 2.5,
            "description": "The link is taken for dead (and reconnected) after this many heartbeat intervals "
            "(the interval each heartbeat meta-event states) without a frame.",
        },
        "backoff_max": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 60,
            "description": "The longest wait between two connection attempts, in seconds.",
        },
        "max_message_chars": {
            "type": "integer",
            "minimum": 50,
            "maximum": 20000,
            "default": 3000,
            "description": "Longer replies are split into several messages of at most this many characters.",
        },
        "mention_required": {
            "type": "boolean",
            "default": True,
            "description": "true: in groups only a message that @-mentions the bot or replies to it counts as "
            "addressed (the standard wake-up engine answers only those); false: every group message does.",
        },
        "chats": {
            "type": "object",
            "default": {},
            "propertyNames": {"pattern": "^(private|group):[0-9]+$"},
            "additionalProperties": _CHAT_SCHEMA,
            "description": "Per-chat overrides, keyed by channel id (group:123456789).",
        },
        "dispatch_tries": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 3,
            "description": "How many times an event the host fails to take is tried before it is set aside "
            "(logged, counted) so later events flow.",
        },
        "max_download_bytes": {
            "type": "integer",
            "minimum": 1,
            "default": 20 * 1024 * 1024,
            "description": "Larger images, records and files are not downloaded.",
        },
    },
}


def _default(key: str) -> Any:
    return ACCOUNT_SCHEMA["properties"][key]["default"]


@dataclass(frozen=True, slots=True)
class OneBotAccount:
    """A validated account entry (see ``ACCOUNT_SCHEMA`` for each key's meaning)."""

    mode: Literal["forward", "reverse", "http"] = _default("mode")
    url: str | None = None
    access_token: str | None = field(default=None, repr=False)
    self_id: str | None = None
    name: str | None = None
    action_timeout: float = _default("action_timeout")
    heartbeat_misses: float = _default("heartbeat_misses")
    backoff_max: float = _default("backoff_max")
    max_message_chars: int = _default("max_message_chars")
    mention_required: bool = _default("mention_required")
    chats: Mapping[str, bool] = field(default_factory=dict)  # channel id -> mention_required
    dispatch_tries: int = _default("dispatch_tries")
    max_download_bytes: int = _default("max_download_bytes")

    @classmethod
    def from_config(cls, account: Mapping[str, Any]) -> OneBotAccount:
        """Parse one account entry; ``HostConfigInvalid`` names the key (never the token's value)."""
        _check(account)
        chats = {key: value.get("mention_required") for key, value in (account.get("chats") or {}).items()}
        return cls(
            mode=account.get("mode", _default("mode")),
            url=str(account["url"]).rstrip("/") if account.get("url") else None,
            access_token=account.get("access_token") or None,
            self_id=account.get("self_id"),
            name=account.get("name"),
            action_timeout=float(account.get("action_timeout", _default("action_timeout"))),
            heartbeat_misses=float(account.get("heartbeat_misses", _default("heartbeat_misses"))),
            backoff_max=float(account.get("backoff_max", _default("backoff_max"))),
            max_message_chars=int(account.get("max_message_chars", _default("max_message_chars"))),
            mention_required=bool(account.get("mention_required", _default("mention_required"))),
            chats={key: value for key, value in chats.items() if value is not None},
            dispatch_tries=int(account.get("dispatch_tries", _default("dispatch_tries"))),
            max_download_bytes=int(account.get("max_download_bytes", _default("max_download_bytes"))),
        )

    @property
    def label(self) -> str:
        """How logs and errors name this account: ``'name'``, else ``bot <self_id>``, else its URL."""
        if self.name:
            return repr(self.name)
        return f"bot {self.self_id}" if self.self_id else f"at {self.url}"

    def requires_mention(self, channel_id: str) -> bool:
        """Whether a message in ``channel_id`` must address the bot to start a turn (never in private chats)."""
        if parse_channel_id(channel_id)[0] == "private":
            return False
        return self.chats.get(channel_id, self.mention_required)


def _check(account: Mapping[str, Any]) -> None:
    """Validate against ``ACCOUNT_SCHEMA`` and the keys each mode needs (a connection may be built without the
    host's loader); the token is described in our own words, as a schema message would quote it."""
    path = "channels.onebot.accounts[]"
    if not isinstance(account, Mapping):
        raise HostConfigInvalid(f"an account must be a mapping, got {type(account).__name__}", path=path)
    token = account.get("access_token")
    if token is not None and (not isinstance(token, str) or "${" in token):
        message = "the access token must be a string (an unexpanded ${VARIABLE}: is it set?)"
        raise HostConfigInvalid(message, path=f"{path}.access_token")
    for err in sorted(_VALIDATOR.iter_errors(dict(account)), key=lambda err: [str(p) for p in err.absolute_path]):
        where = ".".join(str(part) for part in err.absolute_path)
        raise HostConfigInvalid(err.message, path=f"{path}.{where}" if where else path)
    mode = account.get("mode", _default("mode"))
    url = account.get("url")
    if mode in ("forward", "http") and not url:
        raise HostConfigInvalid(f"mode {mode} needs the implementation's url", path=f"{path}.url")
    wanted = ("ws://", "wss://") if mode == "forward" else ("http://", "https://")
    if mode != "reverse" and not str(url).startswith(wanted):
        raise HostConfigInvalid(f"mode {mode} needs a {wanted[0]} or {wanted[1]} url, not {url!r}", path=f"{path}.url")
    if mode in ("reverse", "http") and not account.get("self_id"):
        raise HostConfigInvalid(f"mode {mode} needs the bot's QQ number (self_id)", path=f"{path}.self_id")


_VALIDATOR = Draft202012Validator(ACCOUNT_SCHEMA)
