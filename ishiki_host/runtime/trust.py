"""Trust: the level of each sender, of each turn, and who is not served at all.

A sender is ``platform:userId``. The console's local user is always ``owner``. Otherwise the profile's
``trust`` section decides: ``owners`` are ``owner``, ``trusted`` are ``trusted``. An unlisted sender depends on
``trust.unlisted`` (``allow_unlisted: true`` is ``serve``, ``false`` is ``refuse``):

- ``serve``: ``trusted`` while the profile lists nobody at all (a persona without a trust section keeps every
  tool), ``untrusted`` as soon as it lists someone;
- ``refuse``: ``refused``;
- ``pairing``: the level an operator approved (``ishiki pairing approve``, stored in the memory database and
  handed to the policy with ``use_paired`` before each admission), else ``refused``. Whether a refused
  sender gets a pairing code (in a direct chat) or the refusal (in a group) is the command layer's business.

``refused`` is not a trust level but an admission outcome: the sender gets one polite refusal
(``REFUSAL_TEXT``, once per sender, see ``Refusals``) and nothing reaches the fact log or the model.

A turn runs at the lowest level among the senders of the inbound messages new in it (``turn_level``); a turn
without any (a wake, a timer, a beat) runs at the runtime's own level (``home_level``). Tools declare the
level they need; the kernel tools a reply needs (``OPEN_TOOLS``) declare ``untrusted``, so every sender still
gets an answer. ``tools_for`` is the filter the runtime applies when it offers tools; the agent enforces the
same rule again when a tool is called (``TurnSetup.trust``).

The level is stored on each inbound entry (``data.trust``) at ingest, so a later change of the profile does
not re-rate old messages; ``of_entry`` reads it back (and computes it for entries that lack it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, TypeVar, cast

from ishiki_host.core.subjects import entry_sender
from ishiki_host.core.tools import TRUST_ORDER, Tool, TrustLevel, trust_allows

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import TrustConfig, UnlistedMode
    from ishiki_host.core.entries import Entry

__all__ = [
    "CONSOLE_PLATFORM",
    "REFUSAL_TEXT",
    "Admission",
    "Refusals",
    "TrustPolicy",
    "highest",
    "lowest",
    "new_inbound",
    "tools_for",
]

CONSOLE_PLATFORM = "console"
TURN_ENDS = frozenset({"turn.done", "turn.failed", "turn.aborted"})
REFUSAL_TEXT = "Sorry, I only talk with people I know here. Please ask my owner to add you."
Admission = TrustLevel | Literal["refused"]
ToolT = TypeVar("ToolT", bound=Tool)


def lowest(levels: Iterable[TrustLevel], default: TrustLevel) -> TrustLevel:
    """The lowest of ``levels``, or ``default`` when there are none."""
    found = list(levels)
    return min(found, key=TRUST_ORDER.__getitem__) if found else default


def highest(levels: Iterable[TrustLevel], default: TrustLevel) -> TrustLevel:
    """The highest of ``levels``, or ``default`` when there are none (who may read what they all said)."""
    found = list(levels)
    return max(found, key=TRUST_ORDER.__getitem__) if found else default


def new_inbound(newest_first: Iterator[Entry]) -> list[Entry]:
    """A ``FactLog.read_back`` selector: the inbound messages since the last turn ended, oldest first.

    These are the messages new in the turn being set up (including those carried into a new session for a
    retry); wake prompts and the host's own messages are not inbound. Reading stops at the newest turn end
    or session boundary.
    """
    found: list[Entry] = []
    for entry in newest_first:
        if entry.type == "session" or (entry.type == "event" and entry.name in TURN_ENDS):
            break
        if entry.type == "message" and entry.data.get("role") == "user" and "source" in entry.data:
            found.append(entry)
    found.reverse()
    return found


def tools_for(level: TrustLevel, tools: Sequence[ToolT]) -> list[ToolT]:
    """The tools a turn at ``level`` may be offered (and run), in their order."""
    return [tool for tool in tools if trust_allows(level, tool.trust)]


class TrustPolicy:
    """Levels and admissions from a profile's ``trust`` section (see the module docstring)."""

    def __init__(self, config: TrustConfig):
        self._owners = frozenset(config.owners)
        self._trusted = frozenset(config.trusted)
        self.mode: UnlistedMode = config.unlisted_mode
        self._unlisted: TrustLevel = "untrusted" if (self._owners or self._trusted) else "trusted"
        self._paired: Mapping[str, TrustLevel] = {}

    def listed(self, sender: str | None) -> bool:
        """Whether the profile itself decides ``sender``'s level (the console, an owner, a trusted sender)."""
        return sender is not None and (_is_console(sender) or sender in self._owners or sender in self._trusted)

    def use_paired(self, levels: Mapping[str, TrustLevel]) -> None:
        """The senders approved by pairing and their levels (counted only with ``unlisted: pairing``)."""
        self._paired = levels

    def admit(self, sender: str | None) -> Admission:
        """The level of ``sender``, or ``refused`` for an unlisted sender the profile does not serve."""
        if sender is None:
            return "untrusted" if self.mode == "serve" else "refused"
        if _is_console(sender) or sender in self._owners:
            return "owner"
        if sender in self._trusted:
            return "trusted"
        if self.mode == "serve":
            return self._unlisted
        if self.mode == "pairing":
            return self._paired.get(sender, "refused")
        return "refused"

    def level(self, sender: str | None) -> TrustLevel:
        """The level of ``platform:userId``; a refused or unknown sender counts as ``untrusted``."""
        admission = self.admit(sender)
        return "untrusted" if admission == "refused" else admission

    def of_entry(self, entry: Entry) -> TrustLevel:
        """The level recorded on an inbound entry (computed from its sender when the entry carries none)."""
        stored = entry.data.get("trust")
        if isinstance(stored, str) and stored in TRUST_ORDER:
            return cast("TrustLevel", stored)
        return self.level(entry_sender(entry))

    def turn_level(self, inbound: Iterable[Entry], home: TrustLevel) -> TrustLevel:
        """The level of a turn: the lowest of its new inbound messages' levels, ``home`` when it has none."""
        return lowest((self.of_entry(entry) for entry in inbound), home)

    @staticmethod
    def home_level(sid: str | None) -> TrustLevel:
        """The level of a turn without new inbound messages in a runtime at ``sid`` (console: owner)."""
        return "owner" if sid is not None and sid.partition(":")[0] == CONSOLE_PLATFORM else "trusted"


class Refusals:
    """Who was already refused, so an unlisted sender gets one polite refusal, not one per message.

    Bounded (least recently refused forgotten first); a restart forgets everyone, which at worst repeats
    the refusal once.
    """

    def __init__(self, capacity: int = 1024):
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1; got {capacity}")
        self._capacity = capacity
        self._seen: OrderedDict[str, None] = OrderedDict()

    def first_time(self, sender: str) -> bool:
        """Whether ``sender`` should get the refusal now (true once; records it)."""
        if sender in self._seen:
            self._seen.move_to_end(sender)
            return False
        self._seen[sender] = None
        if len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return True


def _is_console(sender: str) -> bool:
    return sender.partition(":")[0] == CONSOLE_PLATFORM
