"""The questions ``ishiki init`` asks on a terminal: which model server, which channels.

Questions are plain ``input()`` lines (with readline's editing when it is there), not a prompt_toolkit
application: a handful of one-line answers needs no full-screen terminal, and plain lines behave the same on
every terminal, over ssh, in a container's ``docker run -it`` and on the pty of a test (prompt_toolkit asks the
terminal for its cursor position first and waits for the answer). Enter takes the default shown in brackets;
a bad answer is said and the question asked again; Ctrl-D or Ctrl-C stops without writing anything.

Only variable names are asked for secrets, never the secrets: the files say ``${VAR}``. The model list is
offered when the server answers: Ollama's ``GET /api/tags`` (at ``$OLLAMA_HOST`` when set, as the ``ollama``
command reads it), an OpenAI-compatible server's ``GET /models`` (with the key from the variable named, when
it is set). The channels offered are the installed ones (entry points of ``ishiki.channel``): Telegram,
WhatsApp's Cloud API, and the dashboard's web chat when the dashboard is installed too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from ishiki_host.cli._templates import WHATSAPP_VARS, ChannelChoice, ModelChoice

__all__ = ["LIST_SECONDS", "Asker", "ask_channels", "ask_model", "list_models", "ollama_url"]

LIST_SECONDS = 3.0
"""How long the model list may take: a server that is there answers at once."""

OLLAMA_DEFAULT = "http://127.0.0.1:11434"
_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DIGITS = re.compile(r"^[0-9]+$")


class Stop(Exception):
    """The person ended the questions (Ctrl-D, Ctrl-C): nothing is written."""


@dataclass
class Asker:
    """Asks one question at a time on ``read`` (``input``) and ``say`` (``print``)."""

    read: Callable[[str], str] = input
    say: Callable[[str], None] = print

    def text(self, question: str, default: str = "", check: Callable[[str], str | None] | None = None) -> str:
        """An answer (``default`` on Enter); ``check`` returns why an answer is refused, and it is asked again."""
        shown = f"{question} [{default}]: " if default else f"{question}: "
        while True:
            try:
                answer = self.read(shown).strip() or default
            except (EOFError, KeyboardInterrupt):
                raise Stop from None
            problem = check(answer) if check is not None else None
            if problem is None:
                return answer
            self.say(f"  {problem}")

    def yes(self, question: str, default: bool) -> bool:
        """A yes or no."""
        answer = self.text(f"{question} ({'Y/n' if default else 'y/N'})", check=_yes_no)
        return default if not answer else answer.lower().startswith("y")

    def pick(self, question: str, options: Sequence[str], default: int = 1) -> int:
        """The number (from 1) of one of ``options``, listed first."""
        for number, option in enumerate(options, 1):
            self.say(f"  {number}) {option}")
        answer = self.text(question, str(default), lambda a: _number(a, len(options)))
        return int(answer)


def _yes_no(answer: str) -> str | None:
    return None if answer.lower() in ("", "y", "yes", "n", "no") else "answer y or n"


def _number(answer: str, count: int) -> str | None:
    return None if answer.isdigit() and 1 <= int(answer) <= count else f"answer a number from 1 to {count}"


def _var(answer: str) -> str | None:
    return None if _VAR.match(answer) else f"{answer!r} is not a variable name (letters, digits, _)"


def _optional_var(answer: str) -> str | None:
    return None if answer in ("", "-") else _var(answer)


def _url(answer: str) -> str | None:
    ok = re.match(r"^https?://[^\s/]+", answer)
    return None if ok else f"{answer!r} is not an http:// or https:// URL"


def _https(answer: str) -> str | None:
    return None if answer == "" or re.match(r"^https://[^\s/]+", answer) else "platforms post to https:// URLs only"


def _model_id(answer: str) -> str | None:
    return None if answer and not any(c.isspace() for c in answer) else "a model id has no spaces"


def ollama_url(environ: dict[str, str] | None = None) -> str:
    """Ollama's URL: ``$OLLAMA_HOST`` (``host:port`` or a URL) when set, else its default port on this machine."""
    value = (environ if environ is not None else dict(os.environ)).get("OLLAMA_HOST", "").strip().rstrip("/")
    if not value:
        return OLLAMA_DEFAULT
    return value if "://" in value else f"http://{value}"


def list_models(url: str, *, ollama: bool, key: str | None = None, seconds: float = LIST_SECONDS) -> list[str] | str:
    """The model ids the server at ``url`` offers (Ollama's root URL, or an OpenAI-compatible base URL), or why
    it did not say."""
    target = f"{url}/api/tags" if ollama else f"{url.rstrip('/')}/models"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(target, headers=headers, timeout=seconds)
    except httpx.HTTPError as exc:
        return f"nothing answers at {target} ({type(exc).__name__})"
    if response.status_code != 200:
        return f"{target} answered {response.status_code}"
    try:
        body = response.json()
        entries = body["models"] if ollama else body["data"]
        names = [str(m["name"] if ollama else m["id"]) for m in entries]
    except (ValueError, KeyError, TypeError):
        return f"{target} did not answer with a list of models"
    return sorted(names)


def _choose_model(ask: Asker, found: list[str] | str, default: str) -> str:
    if isinstance(found, str):
        ask.say(f"  {found}")
        return ask.text("model id", default, _model_id)
    if not found:
        ask.say("  the server offers no model yet")
        return ask.text("model id", default, _model_id)
    number = ask.pick("model", [*found, "another id"], 1)
    return found[number - 1] if number <= len(found) else ask.text("model id", default, _model_id)


def ask_model(ask: Asker, environ: dict[str, str]) -> ModelChoice:
    """Which model server, and which of its models."""
    ollama = ollama_url(environ)
    ask.say("Which model server?")
    kind = ask.pick(
        "model server",
        [
            f"Ollama on {ollama.removeprefix('http://')} (its OpenAI-compatible API)",
            "an OpenAI-compatible server (OpenAI, vLLM, llama.cpp, OpenRouter, DeepSeek...)",
            "Anthropic",
        ],
    )
    if kind == 1:
        found = list_models(ollama, ollama=True)
        if isinstance(found, str):
            ask.say(f"  Ollama does not answer ({found}); start it with `ollama serve`, the config works once it runs")
            model = ask.text("model id", "llama3.2", _model_id)
        elif ask.yes(f"Ollama answers at {ollama}: list its models?", True):
            model = _choose_model(ask, found, "llama3.2")
        else:
            model = ask.text("model id", "llama3.2", _model_id)
        return ModelChoice("ollama", f"{ollama}/v1", None, model)
    if kind == 2:
        url = ask.text("base URL", "https://api.openai.com/v1", _url).rstrip("/")
        var = ask.text("variable holding the API key (- for none)", "OPENAI_API_KEY", _optional_var)
        key_var = None if var in ("", "-") else var
        key = environ.get(key_var) if key_var else None
        found = list_models(url, ollama=False, key=key)
        if isinstance(found, str) or not ask.yes(f"{url} answers: list its models?", True):
            if isinstance(found, str):
                ask.say(f"  {found}")
            model = ask.text("model id", "gpt-4o-mini", _model_id)
        else:
            model = _choose_model(ask, found, "gpt-4o-mini")
        return ModelChoice("openai", url, key_var, model)
    var = ask.text("variable holding the API key", "ANTHROPIC_API_KEY", _var)
    model = ask.text("model id", "claude-sonnet-4-5", _model_id)
    return ModelChoice("anthropic", "https://api.anthropic.com/v1", var, model)


def ask_channels(ask: Asker, installed: Sequence[str], environ: dict[str, str], *, dashboard: bool) -> ChannelChoice:
    """Which channels beside the console, among the installed ones (``installed``: channel names)."""
    offered = [n for n in ("telegram", "whatsapp") if n in installed] + (
        ["web"] if dashboard and "web" in installed else []
    )
    if not offered:
        ask.say("Channels: the console (no other channel is installed; `ishiki plugins` lists them).")
        return ChannelChoice()
    ask.say("Channels: the console is always on.")
    telegram_var = bot_id = number = public = None
    web = False
    if "telegram" in offered and ask.yes("a Telegram bot?", False):
        telegram_var = ask.text("variable holding the bot token", "TELEGRAM_BOT_TOKEN", _var)
        token = environ.get(telegram_var, "")
        known = token.partition(":")[0] if _DIGITS.match(token.partition(":")[0]) else ""
        bot_id = ask.text("the bot's id, the digits before ':' of its token (Enter: later)", known, _bot_id) or None
    if "whatsapp" in offered and ask.yes("a WhatsApp number (the Cloud API)?", False):
        number = ask.text("its phone number id", check=_phone_number_id)
        ask.say(f"  its secrets are read from ${', $'.join(WHATSAPP_VARS)}")
        public = ask.text("the public https URL of this host (a reverse proxy; Enter: later)", check=_https) or None
    if "web" in offered:
        web = ask.yes("the web chat of the dashboard?", False)
    return ChannelChoice(telegram_var, bot_id, number, public, web)


def _bot_id(answer: str) -> str | None:
    return None if answer == "" or _DIGITS.match(answer) else "a bot id is digits"


def _phone_number_id(answer: str) -> str | None:
    return None if _DIGITS.match(answer) else "a phone number id is digits (Meta's app shows it)"
