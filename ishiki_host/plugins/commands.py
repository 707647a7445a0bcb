"""Slash commands: what a command is, what its handler gets, and the table that matches message text to one.

A ``Command`` has a name, aliases, a one-line help, a usage string for its arguments, the trust level it
needs and an async handler ``handler(ctx, args) -> reply text``. The runtime builds one ``CommandTable`` per
runtime from several sources (the host's built-ins, then each extension's ``ishiki_commands`` in ``extends``
order); names and aliases are case-insensitive, and a name already taken is reported (``problems``) and
skipped, never overriding the first.

``match(text)`` looks at the first word only: ``/clear``, ``/CLEAR`` and ``/clear@MyBot`` match ``clear``; the
rest of the text is the arguments. A slash word that names no command is not a command (``None``): the
message goes to the model as text, so "/shrug" or a path like "/etc/hosts" still reach the persona.
``near(text)`` finds, for such a word, the names one edit away (one letter added, dropped, changed, or two
neighbours swapped: ``/stauts``, ``/hepl``, ``/clera``), for the command layer's "did you mean" hint.

A handler gets a ``CommandContext``: who sent the command (``sender``, ``platform:userId``) at which trust
level, where from (``channel``), the runtime (``runtime``: key, profile, agent, fact log, services), the command
table and a ``HostView`` for what only the host knows (model and breaker state,
extension status lines, the tool surface). ``reply`` sends text to the channel the command came from; a handler
may use it for a progress line and return the final reply.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ishiki_host.core.tools import TRUST_ORDER

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import TrustConfig
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.plugins.runtime_api import RuntimeContext

__all__ = [
    "Command",
    "CommandContext",
    "CommandHandler",
    "CommandMatch",
    "CommandTable",
    "HostView",
    "one_edit_apart",
]

logger = logging.getLogger(__name__)

CommandHandler = Callable[["CommandContext", str], Awaitable[str | None]]
"""``handler(ctx, args)``: the reply text (``None`` when the handler replied itself through ``ctx.reply``)."""

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_FIRST_WORD = re.compile(r"\s*/([^\s@/]+)(?:@(\S+))?(?=\s|$)(.*)\Z", re.DOTALL)


def _check_name(value: str, what: str) -> str:
    name = value.lower()
    if not _NAME.fullmatch(name):
        raise ValueError(f"command {what} {value!r} must be letters, digits, '-' or '_' (at most 32), no slash")
    return name


@dataclass(frozen=True, slots=True)
class Command:
    """One slash command. ``name`` and ``aliases`` are stored lowercase, without the slash."""

    name: str
    handler: CommandHandler
    help: str
    usage: str = ""
    aliases: tuple[str, ...] = ()
    trust: TrustLevel = "untrusted"

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _check_name(self.name, "name"))
        object.__setattr__(self, "aliases", tuple(_check_name(a, "alias") for a in self.aliases))
        if self.trust not in TRUST_ORDER:
            raise ValueError(f"command /{self.name}: trust must be untrusted, trusted or owner, not {self.trust!r}")
        if not self.help.strip():
            raise ValueError(f"command /{self.name} needs a help line")

    @property
    def names(self) -> tuple[str, ...]:
        """The name, then the aliases."""
        return (self.name, *self.aliases)

    def needs(self, trust: TrustConfig | None = None) -> TrustLevel:
        """The level this command needs in a profile with ``trust``: its ``trust.commands`` entry, else its own."""
        return trust.commands.get(self.name, self.trust) if trust is not None else self.trust

    @property
    def synopsis(self) -> str:
        """``/name usage``, as help shows it."""
        return f"/{self.name} {self.usage}".rstrip()


@dataclass(frozen=True, slots=True)
class CommandMatch:
    """A message that is a command: the command, the name as typed (lowercase), and the argument text."""

    command: Command
    typed: str
    args: str


class CommandTable:
    """The commands of one runtime, by lowercase name and alias (see the module docstring)."""

    def __init__(self, *, bot_names: Iterable[str] = ()):
        self.bot_names = frozenset(name.lower().lstrip("@") for name in bot_names)
        self.problems: list[str] = []
        self._by_name: dict[str, tuple[Command, str]] = {}
        self._commands: list[Command] = []

    def register(self, command: Command, *, source: str = "host") -> bool:
        """Add ``command``; a name or alias already taken is reported in ``problems`` and skipped."""
        given: object = command  # extensions are typed Any at the hook boundary
        if not isinstance(given, Command):
            self._problem(f"{source}: {given!r} is not a Command; skipped")
            return False
        taken = [name for name in command.names if name in self._by_name]
        if command.name in self._by_name:
            owner = self._by_name[command.name][1]
            self._problem(f"{source}: /{command.name} is already a command of {owner}; skipped")
            return False
        for alias in taken:
            self._problem(f"{source}: alias /{alias} of /{command.name} is already taken; the alias is skipped")
        if taken:
            kept = tuple(a for a in command.aliases if a not in self._by_name)
            command = dataclasses.replace(command, aliases=kept)
        for name in command.names:
            self._by_name[name] = (command, source)
        self._commands.append(command)
        return True

    def register_all(self, commands: Iterable[Command], *, source: str) -> int:
        """Register each of ``commands``; returns how many were added."""
        return sum(self.register(command, source=source) for command in commands)

    def _problem(self, message: str) -> None:
        logger.warning("commands: %s", message)
        self.problems.append(message)

    def get(self, name: str) -> Command | None:
        """The command called ``name`` (or with that alias), ignoring case and a leading slash."""
        entry = self._by_name.get(name.lower().lstrip("/"))
        return entry[0] if entry else None

    def source(self, name: str) -> str | None:
        """Who registered the command called ``name``."""
        entry = self._by_name.get(name.lower().lstrip("/"))
        return entry[1] if entry else None

    def commands(self) -> list[Command]:
        """Every command, sorted by name."""
        return sorted(self._commands, key=lambda command: command.name)

    def match(self, text: str) -> CommandMatch | None:
        """The command ``text`` starts with, or ``None`` (not a command: the text goes to the model).

        ``/cmd@bot`` is a command for this runtime only when ``bot`` is one of ``bot_names`` (or no names are
        known); addressed to another bot, it is not ours.
        """
        found = _FIRST_WORD.match(text)
        if found is None:
            return None
        typed, bot, rest = found.group(1).lower(), found.group(2), found.group(3)
        if bot is not None and self.bot_names and bot.lower() not in self.bot_names:
            return None
        entry = self._by_name.get(typed)
        return CommandMatch(entry[0], typed, rest.strip()) if entry else None

    def near(self, text: str, allowed: Callable[[Command], bool] = lambda _: True) -> tuple[str, list[str]] | None:
        """For ``text`` starting with a slash word that is no command: the word (lowercase) and the names and
        aliases one edit away of the commands ``allowed`` keeps, sorted; ``None`` when it is a command, no
        slash word, addressed to another bot, or near nothing."""
        found = _FIRST_WORD.match(text)
        if found is None:
            return None
        typed, bot = found.group(1).lower(), found.group(2)
        if typed in self._by_name or (bot is not None and self.bot_names and bot.lower() not in self.bot_names):
            return None
        close = sorted(
            name for name, (command, _) in self._by_name.items() if one_edit_apart(typed, name) and allowed(command)
        )
        return (typed, close) if close else None


def one_edit_apart(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter added, dropped or changed, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        swapped = len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        return len(diff) == 1 or swapped
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = next((i for i in range(len(short)) if short[i] != long[i]), len(short))
    return short[i:] == long[i + 1 :]


class HostView(Protocol):
    """What the host reports to ``/status`` and ``/tools``."""

    async def model_status(self) -> Sequence[str]:
        """Lines about the profile's model: which model, its breaker state (``openai:gpt-4o: closed``)."""
        ...

    async def extension_status(self) -> Sequence[str]:
        """The ``ishiki_status`` lines of the runtime's extensions, in ``extends`` order."""
        ...

    async def channel_status(self) -> Sequence[str]:
        """Lines about the channels: the input the runtime's connection set aside, and the accounts of the
        profile's platforms that are down, with why (none while all is well)."""
        ...

    async def tool_surface(self) -> Sequence[Tool]:
        """Every tool a turn of this runtime could offer, before plugin settings and trust filter them."""
        ...


class CommandContext(Protocol):
    """One command message, as its handler sees it (see the module docstring)."""

    @property
    def sender(self) -> str:
        """``platform:userId`` of who sent the command."""
        ...

    @property
    def trust(self) -> TrustLevel:
        """The sender's trust level (refused senders never reach commands)."""
        ...

    @property
    def channel(self) -> str:
        """Where the command came from: ``platform:selfId`` and the channel id (``telegram:bot1 private:42``)."""
        ...

    @property
    def runtime(self) -> RuntimeContext:
        """The runtime the command is for."""
        ...

    @property
    def table(self) -> CommandTable:
        """The runtime's command table."""
        ...

    @property
    def host(self) -> HostView:
        """What only the host knows."""
        ...

    async def reply(self, text: str) -> None:
        """Send ``text`` to the channel the command came from."""
        ...
