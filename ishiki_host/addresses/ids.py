"""Addresses: where input comes from and where messages go, as ids the platforms and the config use.

A *sid* is ``platform:selfId``: one account of a chat platform (``telegram:123456``, ``console:local``). A
*channel id* carries its kind: ``private:<id>`` or ``group:<id>``. A ``Target`` is the two together, the place
one message goes. Everything that names a chat (claims in ``profile.yml``, runtime keys, the kernel's
``send_message``) parses them here, so every part agrees on what a valid one is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast, get_args

from ishiki_host.errors import EventInvalid

__all__ = ["ChannelKind", "Target", "channel_id", "is_platform", "parse_channel_id", "parse_sid"]

ChannelKind = Literal["private", "group"]
_CHANNEL_KINDS: tuple[str, ...] = get_args(ChannelKind)


def parse_channel_id(value: str) -> tuple[ChannelKind, str]:
    """Split ``private:<id>`` / ``group:<id>`` into its kind and platform id; ``EventInvalid`` otherwise."""
    kind, sep, rest = value.partition(":") if isinstance(value, str) else ("", "", "")
    if not sep or kind not in _CHANNEL_KINDS or not rest:
        raise EventInvalid(f"channel id {value!r} is not 'private:<id>' or 'group:<id>'")
    return cast("ChannelKind", kind), rest


def channel_id(kind: ChannelKind, platform_id: str | int) -> str:
    """Build a channel id from its kind and the platform's chat id (``channel_id("group", -100) -> "group:-100"``)."""
    value = f"{kind}:{platform_id}"
    parse_channel_id(value)
    return value


def parse_sid(sid: str) -> tuple[str, str]:
    """Split ``platform:selfId`` (the platform never contains ``:``; the self id may)."""
    platform, sep, self_id = sid.partition(":") if isinstance(sid, str) else ("", "", "")
    if not sep or not is_platform(platform) or not self_id:
        raise EventInvalid(f"sid {sid!r} is not 'platform:selfId'")
    return platform, self_id


def is_platform(name: str) -> bool:
    """Whether ``name`` can be a platform: non-empty, without ``:``, ``/`` or whitespace."""
    return bool(name) and not any(ch.isspace() or ch in ":/" for ch in name)


@dataclass(frozen=True, slots=True)
class Target:
    """Where a message goes: ``platform:selfId`` and a channel id."""

    sid: str
    channel_id: str

    def __str__(self) -> str:
        return f"{self.sid} {self.channel_id}"
