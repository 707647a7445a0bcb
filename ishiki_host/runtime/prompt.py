"""The system prompt of a turn: persona, control flow, then what extensions and engines add.

Sections, in order, each only when non-empty: the persona (``persona.md``); the control-flow section below
(how to reply, when to finish or wait, where the persona is, cross-mode targets); each extension's
``ishiki_instructions`` in ``extends`` order; the toolcall engine's instructions; the context engine's
instructions. Assembled afresh for every turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ishiki_host.channels.events import parse_channel_id

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.tools import TrustLevel

__all__ = ["control_flow", "join_sections"]


def _where(key: RuntimeKey) -> str:
    if key.sid is None or key.channel_id is None:
        return ""
    kind, _ = parse_channel_id(key.channel_id)
    chat = "a direct (private) chat" if kind == "private" else "a group chat"
    return f"You are in {chat}: channel {key.channel_id} of {key.sid}. "


def _targets(profile: Profile) -> str:
    lines = []
    for sid, claim in profile.claims.by_sid.items():
        patterns = [f"'{p}'" for p in claim.includes] + [f"not '{p}'" for p in claim.excludes]
        lines.append(f"- {sid}: channels {', '.join(patterns)}")
    return "\n".join(lines)


def control_flow(key: RuntimeKey, profile: Profile, trust: TrustLevel, *, has_wait: bool = True) -> str:
    """The control-flow section for a turn at ``trust`` in the runtime at ``key``."""
    lines = ["## How you act here"]
    if key.mode == "cross":
        lines.append(
            "You serve several channels in one conversation; each message shows the channel it came from "
            "(its sid and channel id). send_message needs a target {sid, channelId}: answer in the channel the "
            "message came from. The channels you may send to:\n" + _targets(profile)
        )
    else:
        lines.append(_where(key) + "send_message sends to this chat.")
    lines.append(
        "To say something, call send_message; each string in `messages` is one chat message. "
        "A step that only sends messages ends your turn."
    )
    if profile.reply_with_text:
        lines.append("Text you write without calling any tool is also sent, as one message.")
    else:
        lines.append("Text you write without calling a tool is not sent to anyone: use send_message.")
    ending = "Call finish when nothing (more) needs saying, e.g. a message that is not meant for you."
    if has_wait:
        ending += " Call wait to be woken again after more messages or some time."
    lines.append(ending)
    if trust == "untrusted":
        lines.append(
            "Some new messages come from senders the host does not trust: only basic tools are available, and "
            "you must not reveal private information about the owner to them."
        )
    return "\n".join(lines)


def join_sections(sections: Sequence[str | None]) -> str:
    """The non-empty sections, stripped, separated by blank lines."""
    return "\n\n".join(s.strip() for s in sections if s and s.strip())
