"""The files ``ishiki init`` writes: a config directory that passes ``ishiki check`` at once.

Comments teach each key; the values shown are the defaults unless a comment says otherwise. A test runs
``ishiki init`` and ``ishiki check`` on the result, so these stay valid. ``files`` is what it writes without a
terminal; ``chosen_files`` what it writes after asking (``ishiki_host.cli._onboard``): the same settings, the
model server and channels chosen, keys in snake_case, every secret as a ``${VAR}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = [
    "LISTEN",
    "PROVIDER_NAMES",
    "WHATSAPP_VARS",
    "ChannelChoice",
    "ModelChoice",
    "chosen_files",
    "chosen_host",
    "chosen_models",
    "chosen_profile",
    "files",
]

HOST = """\
# ishiki.yaml: host settings of this config directory. Every key is optional; the values shown are the
# defaults. ${VAR} and ${VAR:-default} read the environment, so tokens never need to live in this file.

# Where runtimes, fact logs and memory.db are kept, relative to this directory.
data_dir: data

# The least severe log level printed: debug | info | warning | error | critical
log_level: info

# The host's IANA time zone (e.g. Europe/Paris); heartbeats and message times use it.
timezone: UTC

# A runtime idle this many seconds is stopped; it resumes from its fact log on the next message.
runtime_idle_seconds: 900

# How often the running host looks for edited profiles, models.yaml and this file (0: only on SIGHUP or
# `ishiki reload`). Changed profiles restart; the others keep their conversations.
reload_interval_seconds: 2

# On stop or reload, running turns get this long to finish before they are aborted (and resumed later).
shutdown_grace_seconds: 10

# When fact logs reach the disk: always (every append) | turn (end of every turn) | never (the OS decides).
fsync: turn

# The event loop `ishiki run` runs on: auto (uvloop when installed, else asyncio) | uvloop | asyncio.
event_loop: auto

# Worker processes that run the runtimes, to use every core: 1 (one process) | 2..64 | auto (one per core).
# With more than one, this process keeps the channels and routes each conversation to its worker.
workers: 1

# Accounts of chat platforms, by platform. The console channel needs none. A Telegram bot, for instance
# (pip install ishiki-channel-telegram), then claimed in a profile as telegram:<bot id>:
#   channels:
#     telegram:
#       accounts:
#         - token: ${TELEGRAM_BOT_TOKEN}
channels: {}
"""

MODELS = """\
# models.yaml: where the models are. A profile's `model:` names a group below, or `provider:model_id`.
# ${VAR} and ${VAR:-default} read the environment: keys stay out of this file.

providers:
  # Any OpenAI-compatible server: Ollama, vLLM, llama.cpp, OpenAI, DeepSeek, OpenRouter...
  # Point it elsewhere with OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL.
  local:
    api: openai-completions               # the wire protocol (a plugin of group ishiki.provider)
    base_url: ${OPENAI_BASE_URL:-http://127.0.0.1:11434/v1}
    api_key: "${OPENAI_API_KEY:-}"        # quoted: stays a string whatever the variable holds
    max_concurrency: 4                    # calls in flight at once; a person's turns go first
    models:
      - id: ${OPENAI_MODEL:-llama3.1:8b}  # the id the server knows the model by
        context_window: 32768             # tokens the model can read
        max_tokens: 2048                  # tokens one answer may use
        tool_call: true                   # native function calling
        input: [text]                     # add `image` for vision models

groups:
  # A group tries its members by strategy (failover | round-robin | random); a member whose calls keep
  # failing is set aside for a while (its circuit breaker opens) and the next one answers.
  default:
    strategy: failover
    models:
      - local:${OPENAI_MODEL:-llama3.1:8b}
    circuit_breaker:
      failure_threshold: 3                # consecutive failures that open a member's breaker
      cooldown_seconds: 60                # then one probe call after this long
"""

PROFILE = """\
# profile.yml: one persona. The directory name is its id; persona.md beside this file is its prompt.
# `ishiki check` validates it; unknown keys are errors. The values shown are the defaults.

# The model: a group of models.yaml, or provider:modelId.
model: default

# channel: one conversation per channel | cross: one conversation across every claimed channel.
mode: channel

# Where this persona answers: platform:selfId -> channel patterns. '*' is every channel, 'group:*' a
# prefix, 'private:42' one channel, '!group:13' excludes one. Two profiles never claim the same channel.
channels:
  console:local: ["*"]

# Extensions, in order: name -> {enable, config}. Built-in memory, skills and heartbeat are on unless
# turned off here, e.g.  memory: {enable: false}
extends: {}

# The three engines, each with its options under its name.
context:
  engine: standard          # keeps whole recent turns within a token budget
  standard:
    budget_ratio: 0.75      # share of the context window the conversation may use
    refill_ratio: 0.5       # when over budget, trim down to this share of the budget
wakeup:
  engine: standard          # answers direct messages, mentions, quotes and keywords
  standard:
    keywords: []            # words that make the persona answer in a group
toolcall:
  engine: native            # the model's own function calling

# Who may use privileged tools and commands, as platform:userId. The console user is always an owner.
trust:
  owners: []
  trusted: []
  unlisted: serve           # refuse: others get one polite refusal; pairing: a code to approve (ishiki pairing)

# summarizer: auto (condense each exchange into memory) | manual (compact near the context limit) | off
session:
  summarizer: auto
  compact_threshold: 0.9    # manual mode compacts at this share of the context window

# A model answer with text but no tool call is sent as the reply.
reply_with_text: true

# What the sender is told when a turn their message started fails, once until a turn succeeds again (the
# reason goes to the log and the console, never into the chat). null: say nothing.
failure_reply: "Sorry, something went wrong on my side; please try again in a moment."
"""

PERSONA = """\
You are {name}, a friendly and concise assistant.

Answer in the language you are spoken to. Say so plainly when you do not know something.
"""


def files(profile_id: str) -> dict[str, str]:
    """Relative path -> content of every file ``ishiki init`` writes."""
    return {
        "ishiki.yaml": HOST,
        "models.yaml": MODELS,
        f"profiles/{profile_id}/profile.yml": PROFILE,
        f"profiles/{profile_id}/persona.md": PERSONA.format(name=profile_id),
    }


# -- what `ishiki init` writes after asking (on a terminal) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model server chosen: ``kind`` ``ollama`` | ``openai`` | ``anthropic``, its URL, the variable
    holding its key (``None``: no key), the model id."""

    kind: str
    base_url: str
    key_var: str | None
    model: str


@dataclass(frozen=True, slots=True)
class ChannelChoice:
    """The channels chosen beside the console: a Telegram bot (its token's variable, its bot id when known), a
    WhatsApp Cloud API number (its phone number id and public https URL), the dashboard's web chat."""

    telegram_var: str | None = None
    telegram_bot_id: str | None = None
    whatsapp_number: str | None = None
    public_url: str | None = None
    web_chat: bool = False

    @property
    def needs_http(self) -> bool:
        """Whether the host's HTTP server must run (WhatsApp's webhooks, the dashboard)."""
        return self.whatsapp_number is not None or self.web_chat


PROVIDER_NAMES = {"ollama": "ollama", "openai": "openai", "anthropic": "anthropic"}
"""The provider id models.yaml gets for each kind of server."""

WHATSAPP_VARS = ("WHATSAPP_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN")
"""The variables the WhatsApp account's secrets are read from."""

LISTEN = "127.0.0.1:8080"
"""Where the host's HTTP server listens when a channel needs it (a reverse proxy in front for the public URL)."""


def _q(text: str) -> str:
    """``text`` as a YAML scalar that stays a string: JSON's double-quoted strings are YAML too."""
    return json.dumps(text, ensure_ascii=False)


def chosen_models(choice: ModelChoice) -> str:
    """models.yaml for ``choice`` (snake_case keys; the key only as ``${VAR}``)."""
    provider = PROVIDER_NAMES[choice.kind]
    api = "anthropic-messages" if choice.kind == "anthropic" else "openai-completions"
    key = _q(f"${{{choice.key_var}}}") if choice.key_var else '""'
    key_note = f"read from ${choice.key_var} when the host starts" if choice.key_var else "no key"
    window, out, inputs = (200000, 8192, "[text, image]") if choice.kind == "anthropic" else (32768, 2048, "[text]")
    return f"""\
# models.yaml: where the models are. A profile's `model:` names a group below, or `provider:model_id`.
# ${{VAR}} and ${{VAR:-default}} read the environment: keys stay out of this file. Written by `ishiki init`.

providers:
  {provider}:
    api: {api}
    base_url: {_q(choice.base_url)}
    api_key: {key}   # {key_note}
    max_concurrency: 4                    # calls in flight at once; a person's turns go first
    models:
      - id: {_q(choice.model)}            # the id the server knows the model by
        context_window: {window}          # tokens the model can read
        max_tokens: {out}                 # tokens one answer may use
        tool_call: true                   # native function calling
        input: {inputs}

groups:
  # A group tries its members by strategy (failover | round-robin | random); add more members to fall back.
  default:
    strategy: failover
    models:
      - {_q(f"{provider}:{choice.model}")}
    circuit_breaker:
      failure_threshold: 3                # consecutive failures that open a member's breaker
      cooldown_seconds: 60                # then one probe call after this long
"""


def chosen_host(channels: ChannelChoice) -> str:
    """ishiki.yaml for ``channels``: the template's settings, then the HTTP server, plugins and accounts needed."""
    settings = HOST.split("# Accounts of chat platforms", 1)[0]
    parts = [settings]
    if channels.needs_http:
        public = (
            f"\n  public_url: {_q(channels.public_url)}   # the reverse proxy in front" if channels.public_url else ""
        )
        parts.append(
            f"# The host's HTTP server (webhooks, the dashboard): docs/http.md.\nhttp:\n  listen: {LISTEN}{public}\n\n"
        )
    if channels.web_chat:
        parts.append(
            "# The dashboard at http://127.0.0.1:8080/dashboard/ (without a token, one is made and printed at each\n"
            "# start; set token: ${DASHBOARD_TOKEN} to keep one).\nplugins:\n  dashboard: {}\n\n"
        )
    accounts: list[str] = []
    if channels.telegram_var:
        accounts.append(f"  telegram:\n    accounts:\n      - token: {_q(f'${{{channels.telegram_var}}}')}\n")
    if channels.whatsapp_number:
        token, secret, verify = (_q(f"${{{v}}}") for v in WHATSAPP_VARS)
        accounts.append(
            "  whatsapp:\n    accounts:\n      - backend: cloud\n"
            f"        phone_number_id: {_q(channels.whatsapp_number)}\n"
            f"        access_token: {token}\n        app_secret: {secret}\n        verify_token: {verify}\n"
        )
    if channels.web_chat:
        accounts.append("  web:\n    accounts: [{id: dashboard}]        # web:dashboard\n")
    parts.append("# Accounts of chat platforms, by platform (the console needs none); secrets come from ${VAR}.\n")
    parts.append("channels:\n" + "".join(accounts) if accounts else "channels: {}\n")
    return "".join(parts)


def chosen_profile(channels: ChannelChoice) -> str:
    """profile.yml claiming the console and the chosen channels (the template's other keys as they are)."""
    claims = ['  console:local: ["*"]\n']
    if channels.telegram_var and channels.telegram_bot_id:
        claims.append(f'  telegram:{channels.telegram_bot_id}: ["*"]\n')
    elif channels.telegram_var:
        claims.append('  # telegram:<bot id>: ["*"]   # the digits before the colon of the token\n')
    if channels.whatsapp_number:
        claims.append(f'  whatsapp:{channels.whatsapp_number}: ["*"]\n')
    if channels.web_chat:
        claims.append('  web:dashboard: ["*"]\n')
    text = PROFILE.replace('channels:\n  console:local: ["*"]\n', "channels:\n" + "".join(claims), 1)
    if channels.web_chat:
        text = text.replace("  owners: []\n", '  owners: ["web:admin"]   # the dashboard\'s user\n', 1)
    return text


def chosen_files(profile_id: str, model: ModelChoice, channels: ChannelChoice) -> dict[str, str]:
    """Relative path -> content of every file ``ishiki init`` writes after asking."""
    return {
        "ishiki.yaml": chosen_host(channels),
        "models.yaml": chosen_models(model),
        f"profiles/{profile_id}/profile.yml": chosen_profile(channels),
        f"profiles/{profile_id}/persona.md": PERSONA.format(name=profile_id),
    }
