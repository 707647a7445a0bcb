"""Repeated input recognised: a runtime ignores an event it already took.

A channel that confirms input to its platform only after the host made it durable (Telegram's update offsets)
gets that input again when the process died in between, with the same identity (``channels.base``): kind,
sid, channel id, message id and ``extra["editedAt"]``. ``RecentInbound`` keeps the identities of a runtime's
most recent input (``WINDOW`` of them) so ``AgentRuntime.deliver`` can tell such a repeat from new input:

- on the first delivery after the runtime started, it reads the identities of the inbound entries among the
  newest ``SCAN`` entries of the fact log (they are in the log's in-memory tail: no disk read);
- every event delivered since (appended, or consumed by an inbound filter such as a slash command) is added;
- while an event is being delivered, a second delivery of the same event waits for the first and is then a
  repeat (two deliveries of one event never both append).

The window is bounded: a redelivery comes right after a crash, so it is always among the newest input. An
event whose delivery failed is not remembered (the channel retries it, and it must get through).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.channels.inbound import is_inbound

if TYPE_CHECKING:
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol

__all__ = ["SCAN", "WINDOW", "RecentInbound", "event_identity", "source_identity"]

WINDOW = 256
"""Identities remembered per runtime."""

SCAN = 256
"""Entries of the log's tail read for identities when a runtime takes its first input."""

_SEP = "\x1f"  # never part of an id a platform gives


def event_identity(event: IshikiEvent) -> str:
    """What a repeat of ``event`` has in common with it (see the module docstring)."""
    return _identity(event.kind, event.sid, event.channel_id, event.message_id, event.extra.get("editedAt"))


def source_identity(source: Mapping[str, Any]) -> str | None:
    """The identity of a stored event (``data.source`` of an inbound entry); ``None`` when it is malformed."""
    platform, self_id = source.get("platform"), source.get("selfId")
    channel, message = source.get("channelId"), source.get("messageId")
    if not all(isinstance(value, str) for value in (platform, self_id, channel, message)):
        return None
    extra = source.get("extra")
    edited = extra.get("editedAt") if isinstance(extra, Mapping) else None
    return _identity(str(source.get("kind", "message.created")), f"{platform}:{self_id}", channel, message, edited)


def _identity(kind: str, sid: str, channel: Any, message: Any, edited: Any) -> str:
    return _SEP.join((kind, sid, str(channel), str(message), "" if edited is None else str(edited)))


def _logged_identities(newest_first: Iterator[Entry]) -> list[str]:
    """The identities of the inbound entries among the newest ``SCAN`` entries, newest first."""
    found: list[str] = []
    for entry in islice(newest_first, SCAN):
        source = entry.data.get("source")
        if is_inbound(entry) and isinstance(source, Mapping):
            identity = source_identity(source)
            if identity is not None:
                found.append(identity)
    return found


class RecentInbound:
    """The identities of a runtime's recent input (see the module docstring)."""

    def __init__(self, window: int = WINDOW):
        self.window = window
        self._seen: OrderedDict[str, None] | None = None  # read from the log on first use
        self._taking: dict[str, anyio.Event] = {}

    @contextlib.asynccontextmanager
    async def admit(self, log: FactLogProtocol, event: IshikiEvent) -> AsyncIterator[bool]:
        """Yields whether ``event`` is new; a new event is remembered when the block ends without an error."""
        seen = self._seen if self._seen is not None else await self._load(log)
        identity = event_identity(event)
        while (taking := self._taking.get(identity)) is not None:
            await taking.wait()
        if identity in seen:
            yield False
            return
        done = self._taking[identity] = anyio.Event()
        try:
            yield True
            self._remember(seen, identity)
        finally:
            del self._taking[identity]
            done.set()

    async def _load(self, log: FactLogProtocol) -> OrderedDict[str, None]:
        found = await log.read_back(_logged_identities)
        if self._seen is None:  # another delivery may have loaded them while this one read
            self._seen = OrderedDict.fromkeys(reversed(found[: self.window]))
        return self._seen

    def _remember(self, seen: OrderedDict[str, None], identity: str) -> None:
        seen[identity] = None
        if len(seen) > self.window:
            seen.popitem(last=False)
