"""Runtime keys and where a runtime keeps its files.

A runtime lives at one address: ``profile/sid/channel`` in channel mode, ``profile/main`` in cross mode.
``RuntimeKey`` is that address as a value (use it, not its string, as a dict key: ids may contain ``/``).
Its home directory is ``<data>/runtimes/<profile>/<sid>/<channel>/`` (cross: ``<data>/runtimes/<profile>/main/``)
with every segment escaped by ``escape_segment`` (see ``ishiki_host.addresses.segments``: ``%XX`` escapes,
no ``.``/``..``, case-collision and length suffixes; collision-free and invertible unless cut to length).
A sid segment always holds ``%3A`` (from ``platform:selfId``) so it never equals ``main``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from ishiki_host.addresses.ids import ChannelKind, parse_channel_id, parse_sid
from ishiki_host.addresses.segments import MAX_SEGMENT, escape_segment, unescape_segment

__all__ = [
    "MAX_SEGMENT",
    "RuntimeKey",
    "RuntimeMode",
    "escape_segment",
    "runtime_dir",
    "unescape_segment",
]

RuntimeMode = Literal["channel", "cross"]
_CHANNEL_KINDS: tuple[str, ...] = get_args(ChannelKind)


@dataclass(frozen=True, slots=True)
class RuntimeKey:
    """The address of a runtime: ``profile/sid/channel`` (channel mode) or ``profile/main`` (cross mode)."""

    profile: str
    sid: str | None = None
    channel_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.profile, str) or not self.profile or "/" in self.profile:
            raise ValueError(f"runtime key: profile id {self.profile!r} must be non-empty without '/'")
        if (self.sid is None) != (self.channel_id is None):
            raise ValueError("runtime key: give both sid and channel_id (channel mode) or neither (cross mode)")
        if self.sid is not None and self.channel_id is not None:
            parse_sid(self.sid)
            parse_channel_id(self.channel_id)

    @classmethod
    def for_channel(cls, profile: str, sid: str, channel_id: str) -> RuntimeKey:
        """The key of a channel-mode runtime."""
        return cls(profile, sid, channel_id)

    @classmethod
    def for_cross(cls, profile: str) -> RuntimeKey:
        """The key of a profile's one cross-mode runtime."""
        return cls(profile)

    @classmethod
    def for_mode(cls, mode: RuntimeMode, profile: str, sid: str, channel_id: str) -> RuntimeKey:
        """The key an input at ``sid``/``channel_id`` lands on, for a profile in ``mode``."""
        return cls.for_cross(profile) if mode == "cross" else cls.for_channel(profile, sid, channel_id)

    @classmethod
    def parse(cls, text: str) -> RuntimeKey | None:
        """The key whose ``str`` is ``text`` (``profile/main``, ``profile/platform:selfId/kind:id``), ``None`` when
        no key has it. A self id may hold ``/``: the channel id is the first ``/private:`` or ``/group:`` part
        after which both halves make a valid key."""
        profile, _, rest = text.partition("/")
        if not profile or not rest:
            return None
        if rest == "main":
            return _valid(profile)
        for kind in _CHANNEL_KINDS:
            marker = f"/{kind}:"
            start = rest.find(marker)
            while start > 0:
                key = _valid(profile, rest[:start], rest[start + 1 :])
                if key is not None:
                    return key
                start = rest.find(marker, start + 1)
        return None

    @property
    def mode(self) -> RuntimeMode:
        """``channel`` or ``cross``."""
        return "cross" if self.sid is None else "channel"

    def segments(self) -> tuple[str, ...]:
        """The escaped directory names under ``<data>/runtimes/``."""
        if self.sid is None or self.channel_id is None:
            return (escape_segment(self.profile), "main")
        return (escape_segment(self.profile), escape_segment(self.sid), escape_segment(self.channel_id))

    def __str__(self) -> str:
        if self.sid is None:
            return f"{self.profile}/main"
        return f"{self.profile}/{self.sid}/{self.channel_id}"


def _valid(profile: str, sid: str | None = None, channel_id: str | None = None) -> RuntimeKey | None:
    try:
        return RuntimeKey(profile, sid, channel_id)
    except ValueError:  # EventInvalid (a bad sid or channel id) is a ValueError too
        return None


def runtime_dir(data_dir: Path, key: RuntimeKey) -> Path:
    """The runtime's home: ``<data_dir>/runtimes/<escaped segments>`` (not created here)."""
    return Path(data_dir, "runtimes", *key.segments())
