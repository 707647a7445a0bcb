"""What the fake OneBot implementation answers to actions, and what it keeps of them (``ActionBook``).

Every call is recorded (``Call``), every message sent kept (``SentMessage``) and stored for ``get_msg``;
``fail`` / ``slow`` / ``hang`` queue faults for the next calls of an action.
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from ishiki_channel_onebot.segments import Segment, parse_message

__all__ = ["ActionBook", "Call", "SentMessage", "json_segments"]


@dataclass(frozen=True, slots=True)
class Call:
    """One action the fake was asked: its name, parameters and how it came (``ws`` or ``http``)."""

    action: str
    params: Mapping[str, Any]
    via: str


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the bot sent: ``private`` to a user or ``group``, the target's number, the segments."""

    message_type: str
    target: int
    segments: tuple[Segment, ...]
    message_id: int

    @property
    def text(self) -> str:
        """The text segments joined (``@<qq>`` for a mention)."""
        parts = [
            s.get("text") or "" if s.type == "text" else f"@{s.get('qq')}" if s.type == "at" else ""
            for s in self.segments
        ]
        return "".join(parts)

    def of_type(self, kind: str) -> list[Segment]:
        """The segments of type ``kind``."""
        return [s for s in self.segments if s.type == kind]


@dataclass
class _Fault:
    kind: str  # failed | slow | hang
    retcode: int = 100
    wording: str = ""
    seconds: float = 0.0


class ActionBook:
    """The actions of one fake implementation: ``media_url(name)`` is where it serves a file, ``on_call()`` is
    told of every call (the fake's ``until`` wakes on it)."""

    def __init__(self, self_id: int, nickname: str, media_url: Callable[[str], str], on_call: Callable[[], None]):
        self.self_id = self_id
        self.nickname = nickname
        self._media_url = media_url
        self._on_call = on_call
        self.calls: list[Call] = []
        self.sent: list[SentMessage] = []
        self.deleted: list[int] = []
        self.messages: dict[int, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self.forwards: dict[str, list[dict[str, Any]]] = {}
        self._faults: dict[str, deque[_Fault]] = defaultdict(deque)
        self._ids = itertools.count(50_000)

    def fail(self, action: str, retcode: int, wording: str, times: int) -> None:
        """The next ``times`` calls of ``action`` answer ``status: failed``."""
        self._faults[action].extend(_Fault("failed", retcode, wording) for _ in range(times))

    def slow(self, action: str, seconds: float, times: int) -> None:
        """The next ``times`` calls of ``action`` are answered after ``seconds``."""
        self._faults[action].extend(_Fault("slow", seconds=seconds) for _ in range(times))

    def hang(self, action: str, times: int) -> None:
        """The next ``times`` calls of ``action`` are never answered."""
        self._faults[action].extend(_Fault("hang") for _ in range(times))

    async def answer(self, action: str, params: Mapping[str, Any], via: str) -> dict[str, Any]:
        """The answer frame of one call (without its echo)."""
        self.calls.append(Call(action, dict(params), via))
        self._on_call()
        faults = self._faults.get(action)
        fault = faults.popleft() if faults else None
        if fault is not None and fault.kind == "hang":
            await anyio.sleep_forever()
        if fault is not None and fault.kind == "slow":
            await anyio.sleep(fault.seconds)
        if fault is not None and fault.kind == "failed":
            return {"status": "failed", "retcode": fault.retcode, "wording": fault.wording, "data": None}
        handler = self._actions().get(action)
        if handler is None:
            return {"status": "failed", "retcode": 1404, "wording": f"no such action {action}", "data": None}
        data = handler(params)
        if data is None:
            return {"status": "failed", "retcode": 1404, "wording": "not found", "data": None}
        return {"status": "ok", "retcode": 0, "data": data}

    def _actions(self) -> dict[str, Callable[[Mapping[str, Any]], Any]]:
        return {
            "get_login_info": lambda p: {"user_id": self.self_id, "nickname": self.nickname},
            "get_status": lambda p: {"online": True, "good": True},
            "get_version_info": lambda p: {"app_name": "ishiki-fake-onebot", "protocol_version": "v11"},
            "send_private_msg": lambda p: self._send("private", int(p["user_id"]), p["message"]),
            "send_group_msg": lambda p: self._send("group", int(p["group_id"]), p["message"]),
            "send_msg": lambda p: self._send(
                str(p.get("message_type") or ("group" if "group_id" in p else "private")),
                int(p.get("group_id") or p["user_id"]),
                p["message"],
            ),
            "delete_msg": self._delete,
            "get_msg": lambda p: self.messages.get(int(p["message_id"])),
            "get_image": self._media,
            "get_record": self._media,
            "get_forward_msg": lambda p: {"messages": self.forwards[p["id"]]} if p.get("id") in self.forwards else None,
        }

    def _send(self, message_type: str, target: int, message: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        segments = tuple(parse_message(message))
        self.sent.append(SentMessage(message_type, target, segments, message_id))
        sender = {"user_id": self.self_id, "nickname": self.nickname}
        self.messages[message_id] = {
            "message_id": message_id,
            "message": json_segments(list(segments)),
            "sender": sender,
        }
        return {"message_id": message_id}

    def _delete(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        message_id = int(params["message_id"])
        if message_id not in self.messages:
            return None
        self.deleted.append(message_id)
        return {}

    def _media(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        name = str(params.get("file"))
        if name not in self.files:
            return None
        url = self._media_url(name)
        return {
            "file": f"/nonexistent/onebot-cache/{name}",
            "url": url,
            "size": len(self.files[name]),
            "file_name": name,
        }


def json_segments(segments: list[Segment]) -> list[dict[str, Any]]:
    """The array form of ``segments``."""
    return [{"type": s.type, "data": dict(s.data)} for s in segments]
