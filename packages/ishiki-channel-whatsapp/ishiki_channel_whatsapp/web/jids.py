"""WhatsApp addresses (JIDs) and how they map to the host's ids.

A JID is ``user[.agent][:device]@server``. The servers that matter here: ``s.whatsapp.net`` (a phone number),
``lid`` (a "linked identity", the number-less id WhatsApp now uses in many groups and chats), ``g.us`` (a
group), ``broadcast`` (status updates and broadcast lists) and ``newsletter`` (channels).

The host's ids: a person is ``<wa_id>``, the digits of their number (the same id the cloud backend uses), or
``<lid>@lid`` when WhatsApp tells only their linked identity; a direct chat is ``private:<wa_id>``, a group
``group:<jid>`` (``group:120363012345678901@g.us``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ishiki_host import parse_channel_id
from ishiki_host.errors import EventInvalid

__all__ = ["GROUP", "LID", "USER", "Jid", "chat_jid", "parse_jid"]

USER = "s.whatsapp.net"
LID = "lid"
GROUP = "g.us"


@dataclass(frozen=True, slots=True)
class Jid:
    """One address without its device part (every device of a person is the same person here)."""

    user: str
    server: str

    def __str__(self) -> str:
        return f"{self.user}@{self.server}" if self.user else self.server

    @property
    def is_group(self) -> bool:
        """A group chat."""
        return self.server == GROUP

    @property
    def is_person(self) -> bool:
        """A person, by phone number or by linked identity."""
        return self.server in (USER, LID) and bool(self.user)

    @property
    def wa_id(self) -> str:
        """The host's id of this person: the number's digits, or ``<lid>@lid``."""
        return self.user if self.server == USER else str(self)


def parse_jid(text: str) -> Jid | None:
    """The ``Jid`` of ``user[.agent][:device]@server`` (``None`` for an empty string)."""
    if not text:
        return None
    user, sep, server = text.rpartition("@")
    if not sep:
        return Jid("", text)
    user = user.partition(":")[0].partition(".")[0] if server in (USER, LID) else user.partition(":")[0]
    return Jid(user, server)


def chat_jid(channel_id: str) -> Jid:
    """Where a message for the host's ``channel_id`` goes; ``EventInvalid`` when it is no WhatsApp chat.

    ``private:<digits>`` is that number, ``private:<lid>@lid`` that identity, ``group:<id>[@g.us]`` the group.
    """
    kind, rest = parse_channel_id(channel_id)
    jid = parse_jid(rest) if "@" in rest else Jid(rest, USER if kind == "private" else GROUP)
    valid = jid is not None and jid.user.replace("-", "").isdigit()
    if jid is None or not valid or (kind == "group") != jid.is_group or (kind == "private" and not jid.is_person):
        raise EventInvalid(f"{channel_id!r} is not a WhatsApp chat (private:<number>, group:<id>@g.us)")
    return jid
