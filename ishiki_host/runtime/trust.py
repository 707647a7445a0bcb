"""Trust levels of senders and of turns (the seam the trust work of the memory issue completes).

A sender is ``platform:userId``. The console's local user is always ``owner``. Otherwise the profile's
``trust`` lists decide: ``owners`` are ``owner``, ``trusted`` are ``trusted``; an unlisted sender is
``trusted`` while the profile lists nobody at all (a persona with no trust config keeps every tool) and
``untrusted`` as soon as it lists someone. A turn runs at the lowest level among the senders of the inbound
messages new in it; a turn with none (a wake, a timer) runs at the runtime's own level: ``owner`` for the
console, else ``trusted``. The level is stored on each inbound entry (``data.trust``), where context engines
read it to mark untrusted senders.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host.core.tools import TRUST_ORDER, TrustLevel

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import TrustConfig
    from ishiki_host.core.entries import Entry

__all__ = ["CONSOLE_PLATFORM", "TrustPolicy", "lowest", "sender_key"]

CONSOLE_PLATFORM = "console"


def sender_key(source: Mapping[str, Any]) -> str | None:
    """``platform:userId`` of a stored event (``data.source``), or ``None`` when it names no sender."""
    user = source.get("user")
    platform = source.get("platform")
    if not isinstance(user, Mapping) or not isinstance(platform, str) or not user.get("id"):
        return None
    return f"{platform}:{user['id']}"


def lowest(levels: Iterable[TrustLevel], default: TrustLevel) -> TrustLevel:
    """The lowest of ``levels``, or ``default`` when there are none."""
    found = list(levels)
    return min(found, key=TRUST_ORDER.__getitem__) if found else default


class TrustPolicy:
    """Levels from a profile's ``trust`` section (see the module docstring)."""

    def __init__(self, config: TrustConfig):
        self._owners = frozenset(config.owners)
        self._trusted = frozenset(config.trusted)
        self._unlisted: TrustLevel = "untrusted" if (self._owners or self._trusted) else "trusted"

    def level(self, sender: str | None) -> TrustLevel:
        """The level of ``platform:userId`` (``None``: an unknown sender is ``untrusted``)."""
        if sender is None:
            return "untrusted"
        if sender.partition(":")[0] == CONSOLE_PLATFORM or sender in self._owners:
            return "owner"
        if sender in self._trusted:
            return "trusted"
        return self._unlisted

    def of_entry(self, entry: Entry) -> TrustLevel:
        """The level recorded on an inbound entry (recomputed when the entry carries none)."""
        stored = entry.data.get("trust")
        if stored in TRUST_ORDER:
            level: TrustLevel = stored
            return level
        source = entry.data.get("source")
        return self.level(sender_key(source) if isinstance(source, Mapping) else None)

    @staticmethod
    def home_level(sid: str | None) -> TrustLevel:
        """The level of a turn without new inbound messages in a runtime at ``sid``."""
        return "owner" if sid is not None and sid.partition(":")[0] == CONSOLE_PLATFORM else "trusted"
