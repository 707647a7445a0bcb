"""The files ``ishiki init`` writes: a config directory that passes ``ishiki check`` at once.

Comments teach each key; the values shown are the defaults unless a comment says otherwise. A test runs
``ishiki init`` and ``ishiki check`` on the result, so these stay valid.
"""

from __future__ import annotations

__all__ = ["files"]

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

# Accounts of chat platforms, by platform. The console channel needs none. A Telegram bot, for instance
# (pip install ishiki-channel-telegram), then claimed in a profile as telegram:<bot id>:
#   channels:
#     telegram:
#       accounts:
#         - token: ${TELEGRAM_BOT_TOKEN}
channels: {}
"""

MODELS = """\
# models.yaml: where the models are. A profile's `model:` names a group below, or `provider:modelId`.
# ${VAR} and ${VAR:-default} read the environment: keys stay out of this file.

providers:
  # Any OpenAI-compatible server: Ollama, vLLM, llama.cpp, OpenAI, DeepSeek, OpenRouter...
  # Point it elsewhere with OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL.
  local:
    api: openai-completions               # the wire protocol (a plugin of group ishiki.provider)
    baseUrl: ${OPENAI_BASE_URL:-http://127.0.0.1:11434/v1}
    apiKey: "${OPENAI_API_KEY:-}"         # quoted: stays a string whatever the variable holds
    maxConcurrency: 4                     # calls in flight at once; a person's turns go first
    models:
      - id: ${OPENAI_MODEL:-llama3.1:8b}  # the id the server knows the model by
        contextWindow: 32768              # tokens the model can read
        maxTokens: 2048                   # tokens one answer may use
        toolCall: true                    # native function calling
        input: [text]                     # add `image` for vision models

groups:
  # A group tries its members by strategy (failover | round-robin | random); a member whose calls keep
  # failing is set aside for a while (its circuit breaker opens) and the next one answers.
  default:
    strategy: failover
    models:
      - local:${OPENAI_MODEL:-llama3.1:8b}
    circuitBreaker:
      failureThreshold: 3                 # consecutive failures that open a member's breaker
      cooldownSeconds: 60                 # then one probe call after this long
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
    budgetRatio: 0.75       # share of the context window the conversation may use
    refillRatio: 0.5        # when over budget, trim down to this share of the budget
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
  allow_unlisted: true      # false: others get one polite refusal

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
