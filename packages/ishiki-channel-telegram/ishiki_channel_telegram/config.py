"""One Telegram account's settings: the JSON Schema of an entry of ``channels.telegram.accounts``, and its
parsed form (``TelegramAccount``).

The schema is the single source of the defaults: the host fills them in before ``create`` (its loader does),
and ``TelegramAccount.from_config`` fills them in again from the same schema, so code that builds a connection
by hand (tests, scripts) gets the same values. The token is never part of a message: an account is named by
its ``name`` or, failing that, by the bot id that opens every token (``123456:ABC...`` is bot ``123456``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ishiki_host import parse_channel_id
from ishiki_host.errors import HostConfigInvalid
from jsonschema import Draft202012Validator

__all__ = ["ACCOUNT_SCHEMA", "DEFAULT_ALLOWED_UPDATES", "TELEGRAM_GETFILE_LIMIT", "TelegramAccount"]

TELEGRAM_GETFILE_LIMIT = 20 * 1024 * 1024
"""The largest file the public Bot API lets a bot download (``getFile``)."""

DEFAULT_ALLOWED_UPDATES = (
    "message",
    "edited_message",
    "channel_post",
    "edited_channel_post",
    "deleted_business_messages",
)

_SECRET_RULE = (
    "the webhook secret must be 1 to 256 characters of A-Z, a-z, 0-9, _ and - (Telegram's secret_token); "
    "leave it out to derive one from the token"
)

_CHAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mention_required": {
            "type": "boolean",
            "description": "Overrides the account's mention_required in this chat.",
        },
    },
}

ACCOUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["token"],
    "properties": {
        "token": {
            "type": "string",
            "minLength": 1,
            "description": "The bot token from @BotFather; write ${TELEGRAM_BOT_TOKEN}. Never logged.",
        },
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "A label for logs and errors (default: the bot id the token starts with).",
        },
        "api_base": {
            "type": "string",
            "pattern": "^https?://[^\\s]+$",
            "default": "https://api.telegram.org",
            "description": "The Bot API server (a local telegram-bot-api server, or a test server).",
        },
        "mention_required": {
            "type": "boolean",
            "default": True,
            "description": "true: in groups, only a message that mentions the bot or replies to it counts as "
            "addressed (the standard wake-up engine answers only those; the others are recorded); false: every "
            "group message counts as addressed. Direct chats never need a mention.",
        },
        "chats": {
            "type": "object",
            "default": {},
            "propertyNames": {"pattern": "^(private|group):-?[0-9]+$"},
            "additionalProperties": _CHAT_SCHEMA,
            "description": "Per-chat overrides, keyed by channel id (group:-1001234567890).",
        },
        "poll_timeout": {
            "type": "integer",
            "minimum": 0,
            "maximum": 600,
            "default": 30,
            "description": "Long-polling timeout of getUpdates, in seconds.",
        },
        "poll_limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 100,
            "description": "At most this many updates per getUpdates call.",
        },
        "allowed_updates": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
            "default": list(DEFAULT_ALLOWED_UPDATES),
            "description": "Update kinds to receive; kinds the channel does not handle are ignored.",
        },
        "parse_mode": {
            "enum": ["html", "plain"],
            "default": "html",
            "description": "html: bold, italic, code, pre and links are rendered (plain text when Telegram "
            "refuses the markup); plain: text is sent as written.",
        },
        "max_download_bytes": {
            "type": "integer",
            "minimum": 1,
            "default": TELEGRAM_GETFILE_LIMIT,
            "description": "Larger inbound files are not downloaded; the model is told. Above 20 MiB only "
            "with a local Bot API server.",
        },
        "startup_timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 60,
            "description": "How long getMe is retried at start while the Bot API cannot be reached, in seconds.",
        },
        "backoff_max": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 60,
            "description": "The longest wait between retries after network errors, in seconds.",
        },
        "mode": {
            "enum": ["polling", "webhook"],
            "default": "polling",
            "description": "polling: long polling with getUpdates (nothing to set up). webhook: Telegram posts "
            "each update to the host's HTTP server (http.listen and http.public_url of ishiki.yaml; Telegram "
            "needs HTTPS on port 443, 80, 88 or 8443), at /hooks/telegram/<index>.",
        },
        "webhook_secret": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_-]{1,256}$",
            "x-error": _SECRET_RULE,
            "description": "The secret_token Telegram sends with every webhook request (1-256 of A-Z a-z 0-9 _ -); "
            "write ${TELEGRAM_WEBHOOK_SECRET}. Default: derived from the bot token (HMAC-SHA256), so it is the "
            "same at every start and changes with the token. Never logged.",
        },
        "webhook_max_connections": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 40,
            "description": "The most webhook requests Telegram sends at once (setWebhook's max_connections).",
        },
        "update_tries": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 3,
            "description": "How many times an update the host fails to take is tried before it is set aside "
            "(logged, counted, kept in telegram-set-aside.jsonl) so later updates flow. Failures the host calls "
            "passing (it is stopping, its disk is full) are retried without counting; an update the host "
            "rejects is set aside at once.",
        },
        "drafts": {
            # YAML reads a bare `off` as false: take it as meant.
            "enum": ["auto", "edit", "off", False],
            "default": "auto",
            "description": "How a reply shows while the model writes it (profiles with stream_replies). auto: "
            "a draft bubble (sendMessageDraft) in private chats, one message edited as the text grows in groups "
            "and wherever Telegram refuses drafts; edit: always the edited message; off (or false): only the "
            "final reply.",
        },
        "draft_edit_seconds": {
            "oneOf": [
                {"type": "number", "minimum": 0.1, "maximum": 60},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "private": {"type": "number", "minimum": 0.1, "maximum": 60},
                        "group": {"type": "number", "minimum": 0.1, "maximum": 60},
                    },
                },
            ],
            "default": {"private": 1.0, "group": 3.0},
            "description": "The least time between two updates of a reply being written, in seconds: one "
            "number, or {private, group} (default 1 and 3, within Telegram's limits of about one message a "
            "second in a chat and twenty a minute in a group). A 429 from Telegram is waited out as well.",
        },
    },
}


def _default(key: str) -> Any:
    return ACCOUNT_SCHEMA["properties"][key]["default"]


@dataclass(frozen=True, slots=True)
class TelegramAccount:
    """A validated account entry (see ``ACCOUNT_SCHEMA`` for each key's meaning)."""

    token: str = field(repr=False)
    name: str | None = None
    api_base: str = _default("api_base")
    mention_required: bool = _default("mention_required")
    chats: Mapping[str, bool] = field(default_factory=dict)  # channel id -> mention_required
    poll_timeout: int = _default("poll_timeout")
    poll_limit: int = _default("poll_limit")
    allowed_updates: tuple[str, ...] = DEFAULT_ALLOWED_UPDATES
    parse_mode: Literal["html", "plain"] = _default("parse_mode")
    max_download_bytes: int = _default("max_download_bytes")
    startup_timeout: float = _default("startup_timeout")
    backoff_max: float = _default("backoff_max")
    update_tries: int = _default("update_tries")
    mode: Literal["polling", "webhook"] = _default("mode")
    webhook_secret: str | None = field(default=None, repr=False)
    webhook_max_connections: int = _default("webhook_max_connections")
    drafts: Literal["auto", "edit", "off"] = _default("drafts")
    draft_edit_seconds: tuple[float, float] = (1.0, 3.0)  # (private chats, groups)

    @classmethod
    def from_config(cls, account: Mapping[str, Any]) -> TelegramAccount:
        """Parse one account entry; ``HostConfigInvalid`` names the key (never the token's value)."""
        _check(account)
        chats = {key: value.get("mention_required") for key, value in (account.get("chats") or {}).items()}
        return cls(
            token=account["token"],
            name=account.get("name"),
            api_base=str(account.get("api_base", _default("api_base"))).rstrip("/"),
            mention_required=bool(account.get("mention_required", _default("mention_required"))),
            chats={key: value for key, value in chats.items() if value is not None},
            poll_timeout=int(account.get("poll_timeout", _default("poll_timeout"))),
            poll_limit=int(account.get("poll_limit", _default("poll_limit"))),
            allowed_updates=tuple(account.get("allowed_updates", DEFAULT_ALLOWED_UPDATES)),
            parse_mode=account.get("parse_mode", _default("parse_mode")),
            max_download_bytes=int(account.get("max_download_bytes", _default("max_download_bytes"))),
            startup_timeout=float(account.get("startup_timeout", _default("startup_timeout"))),
            backoff_max=float(account.get("backoff_max", _default("backoff_max"))),
            update_tries=int(account.get("update_tries", _default("update_tries"))),
            mode=account.get("mode", _default("mode")),
            webhook_secret=account.get("webhook_secret"),
            webhook_max_connections=int(account.get("webhook_max_connections", _default("webhook_max_connections"))),
            drafts=account.get("drafts", _default("drafts")) or "off",
            draft_edit_seconds=_draft_pace(account.get("draft_edit_seconds", _default("draft_edit_seconds"))),
        )

    @property
    def label(self) -> str:
        """How logs and errors name this account: ``'name'``, or ``bot 123456`` from the token's prefix."""
        if self.name:
            return repr(self.name)
        bot_id, sep, _ = self.token.partition(":")
        return f"bot {bot_id}" if sep and bot_id.isdigit() else "(unnamed; its token has no '<bot id>:' prefix)"

    def draft_pace(self, channel_id: str) -> float:
        """The least seconds between two updates of a draft in ``channel_id`` (``draft_edit_seconds``)."""
        private, group = self.draft_edit_seconds
        return private if parse_channel_id(channel_id)[0] == "private" else group

    def requires_mention(self, channel_id: str) -> bool:
        """Whether a message in ``channel_id`` must mention the bot to start a turn (never in direct chats)."""
        if parse_channel_id(channel_id)[0] == "private":
            return False
        return self.chats.get(channel_id, self.mention_required)


def _draft_pace(value: Any) -> tuple[float, float]:
    default = _default("draft_edit_seconds")
    if isinstance(value, int | float):
        return float(value), float(value)
    return float(value.get("private", default["private"])), float(value.get("group", default["group"]))


def _check(account: Mapping[str, Any]) -> None:
    """Validate against ``ACCOUNT_SCHEMA`` (a connection may be built without the host's loader).

    Problems with the token and the webhook secret are described in our own words: a schema message would quote
    the value.
    """
    path = "channels.telegram.accounts[]"
    if not isinstance(account, Mapping):
        raise HostConfigInvalid(f"an account must be a mapping with a token, got {type(account).__name__}", path=path)
    token = account.get("token")
    if not isinstance(token, str) or not token.strip():
        message = "the bot token is missing or empty (write token: ${TELEGRAM_BOT_TOKEN})"
        raise HostConfigInvalid(message, path=f"{path}.token")
    if "${" in token:
        raise HostConfigInvalid("the token holds an unexpanded ${VARIABLE}; is it set?", path=f"{path}.token")
    errors = sorted(_VALIDATOR.iter_errors(dict(account)), key=lambda err: [str(p) for p in err.absolute_path])
    for err in errors:
        where = ".".join(str(part) for part in err.absolute_path)
        if where == "webhook_secret":
            raise HostConfigInvalid(_SECRET_RULE, path=f"{path}.webhook_secret")
        if where != "token":
            raise HostConfigInvalid(err.message, path=f"{path}.{where}" if where else path)


_VALIDATOR = Draft202012Validator(ACCOUNT_SCHEMA)
