"""Kernel tools beside ``read``: ``send_message``, ``finish`` and ``wait``.

The tools here only parse and check what the model asked for and render the answer; the runtime does the
work through two small seams, so a test (or another host) can stand in for it:

- an ``Outbox`` sends chat messages (the runtime's implementation renders, splits, delays and records them);
- a ``WaitPlanner`` arms the runtime's one-shot waiter.

All three are open to every trust level (``untrusted``): an untrusted sender still gets an answer. Sending to
a channel other than the ones the turn is answering is checked by the outbox, which knows the turn's trust.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ishiki_host.addresses.ids import Target
from ishiki_host.core.tools import Tool, ToolResult, TrustLevel

if TYPE_CHECKING:
    from ishiki_host.channels.base import SendResult
    from ishiki_host.core.tools import ToolContext

__all__ = [
    "FINISH_DESCRIPTION",
    "FINISH_PARAMETERS",
    "OPEN_TOOLS",
    "SEND_DESCRIPTION",
    "SEND_PARAMETERS",
    "WAIT_DESCRIPTION",
    "WAIT_PARAMETERS",
    "Outbox",
    "WaitPlanner",
    "make_finish_tool",
    "make_send_message_tool",
    "make_wait_tool",
]

SEND_DESCRIPTION = (
    "Send chat messages. `messages` is a list of strings; each string is one chat message, sent in order "
    "(long ones are split at the channel's limit). After a step that only sent messages successfully, the turn "
    "ends. `reply_to` is the message id the first message replies to."
)
SEND_TARGET_NOTE = " `target` ({sid, channelId}) says where to send; it is required in this persona's mode."
FINISH_DESCRIPTION = (
    "End this turn without saying anything more: call it when the conversation needs no (further) answer from you."
)
WAIT_DESCRIPTION = (
    "End this turn and be woken again once `messages` new messages have arrived, or `seconds` have passed "
    "(whichever comes first when both are given). It fires once; any new turn before that cancels it."
)
OPEN_TOOLS = frozenset({"send_message", "finish", "wait", "read"})
"""Kernel tools open to every level and never switched off: an untrusted sender still gets an answer."""
MAX_WAIT_MESSAGES = 1_000
MAX_WAIT_SECONDS = 7 * 24 * 3600


class Outbox(Protocol):
    """Sends the messages of one ``send_message`` call (the runtime implements it)."""

    @property
    def needs_target(self) -> bool:
        """Whether calls must name a target (cross mode)."""
        ...

    async def send(self, messages: Sequence[str], target: Target | None, reply_to: str | None) -> SendResult:
        """Send ``messages`` in order; stop at the first failure and say what went out before it."""
        ...


class WaitPlanner(Protocol):
    """Arms the runtime's one-shot waiter."""

    def arm(self, messages: int | None, seconds: float | None, level: TrustLevel) -> str:
        """Arm the waiter for a turn at ``level`` (the turn it starts runs at most there); returns the sentence
        the model reads."""
        ...


_STRING_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 20}
_TARGET = {
    "type": "object",
    "properties": {
        "sid": {"type": "string", "minLength": 1, "description": "platform:selfId, e.g. telegram:123456"},
        "channelId": {"type": "string", "minLength": 1, "description": "private:<id> or group:<id>"},
    },
    "required": ["sid", "channelId"],
    "additionalProperties": False,
}


def _send_parameters(needs_target: bool) -> Mapping[str, Any]:
    return {
        "type": "object",
        "properties": {
            "messages": {**_STRING_LIST, "description": "The messages to send, each one chat message."},
            "target": {**_TARGET, "description": "Where to send: the channel coordinates of a message."},
            "reply_to": {"type": "string", "minLength": 1, "description": "A message id to reply to."},
        },
        "required": ["messages", "target"] if needs_target else ["messages"],
        "additionalProperties": False,
    }


# Built once: every runtime's tools share these objects (and so their compiled validators).
SEND_PARAMETERS: Mapping[bool, Mapping[str, Any]] = {flag: _send_parameters(flag) for flag in (False, True)}
FINISH_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string", "description": "Why nothing more is needed (for the log)."}},
    "additionalProperties": False,
}
WAIT_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "messages": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_WAIT_MESSAGES,
            "description": "Wake after this many new messages.",
        },
        "seconds": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_WAIT_SECONDS,
            "description": "Wake after this many seconds.",
        },
    },
    "additionalProperties": False,
}


def make_send_message_tool(outbox: Outbox) -> Tool:
    """``send_message(messages, target?, reply_to?)`` through ``outbox`` (trust ``untrusted``, kind ``send``).

    The result is ``{"ok": true, "ids": [...]}``, or an error result ``{"ok": false, "error", "sent"}`` where
    ``sent`` lists the ids of what went out before the failure, so the model knows what the person saw.
    """

    async def handler(args: Mapping[str, Any], context: ToolContext) -> ToolResult:
        messages = [str(m) for m in args["messages"]]
        raw = args.get("target")
        target = Target(str(raw["sid"]), str(raw["channelId"])) if isinstance(raw, Mapping) else None
        reply_to = args.get("reply_to")
        outcome = await outbox.send(messages, target, str(reply_to) if reply_to else None)
        if outcome.ok:
            data: dict[str, Any] = {"ok": True, "ids": list(outcome.ids)}
            return ToolResult(json.dumps(data, ensure_ascii=False), data=data)
        data = {"ok": False, "error": outcome.error, "sent": list(outcome.ids)}
        return ToolResult(json.dumps(data, ensure_ascii=False), is_error=True, data=data)

    description = SEND_DESCRIPTION + (SEND_TARGET_NOTE if outbox.needs_target else "")
    parameters = SEND_PARAMETERS[outbox.needs_target]
    return Tool("send_message", description, handler, parameters, trust="untrusted", kind="send")


def make_finish_tool() -> Tool:
    """``finish(reason?)``: ends the turn (the runtime's stop rule sees the call)."""

    async def handler(args: Mapping[str, Any], context: ToolContext) -> str:
        return "finished"

    return Tool("finish", FINISH_DESCRIPTION, handler, FINISH_PARAMETERS, trust="untrusted", kind="control")


def make_wait_tool(planner: WaitPlanner) -> Tool:
    """``wait(messages?, seconds?)``: arms the one-shot waiter and ends the turn."""

    async def handler(args: Mapping[str, Any], context: ToolContext) -> str:
        messages, seconds = args.get("messages"), args.get("seconds")
        if messages is None and seconds is None:
            raise ValueError("give messages (how many new messages to wait for) or seconds, or both")
        return planner.arm(messages, None if seconds is None else float(seconds), context.trust)

    return Tool("wait", WAIT_DESCRIPTION, handler, WAIT_PARAMETERS, trust="untrusted", kind="control")
