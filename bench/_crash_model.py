"""The model and the people of the crash harness: a stateless "rational" model, and seeded chat traffic.

``RationalModel`` answers a request from what the request holds, so a host that replays a turn after a crash
gets the answer a real model would give the same history: one ``send_message`` acknowledging every message
token (``q<chat>x<seq>``) of the user messages that no earlier ``send_message`` of the history acknowledged,
else ``finish``. A send whose result says nothing went out (``ok: false`` with an empty ``sent``) does not
count; a send whose result is the recovery's "interrupted" marker counts (the host cannot know whether it
went out, and the model does not send twice what may have arrived: at most once). A request without the
``send_message`` tool (a summarizer's) gets a JSON summary. ``arm(n, pid)`` makes the n-th request from now
SIGKILL ``pid`` before it is answered.

``Traffic`` is the seeded plan of inbound messages: ``chats`` chats (the last ``groups`` of them groups, where
nobody mentions the bot), each message carrying its token.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ishiki_host.testing import Reply, ScriptedCall

__all__ = ["TOKEN", "Message", "RationalModel", "Traffic", "tokens_in"]

TOKEN = re.compile(r"\bq(\d+)x(\d+)\b")


def tokens_in(text: str) -> list[str]:
    """The message tokens in ``text``, in order."""
    return [m.group(0) for m in TOKEN.finditer(text)]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _sent_count(result: str | None, total: int) -> int:
    """How many messages of a send_message call went out, judging by its result (unknown: all of them)."""
    try:
        data = json.loads(result) if result is not None else None
    except ValueError:
        return total  # the recovery's "interrupted" marker, or anything else: maybe sent
    if isinstance(data, Mapping) and data.get("ok") is False and isinstance(data.get("sent"), list):
        return min(total, len(data["sent"]))
    return total


def acknowledged(messages: Iterable[Mapping[str, Any]]) -> tuple[list[str], set[str]]:
    """The tokens the user messages of a history hold (in order, once each), and those already answered."""
    asked: dict[str, None] = {}
    calls: list[tuple[str, list[str]]] = []
    results: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "user":
            asked.update(dict.fromkeys(tokens_in(_text(message.get("content")))))
        elif role == "tool":
            results[str(message.get("tool_call_id"))] = _text(message.get("content"))
        elif role == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                if function.get("name") != "send_message":
                    continue
                try:
                    texts = [str(t) for t in json.loads(function.get("arguments") or "{}").get("messages", [])]
                except (ValueError, AttributeError):
                    texts = []
                calls.append((str(call.get("id")), texts))
    done: set[str] = set()
    for call_id, texts in calls:
        for text in texts[: _sent_count(results.get(call_id), len(texts))]:
            done.update(tokens_in(text))
    return list(asked), done


class RationalModel:
    """The model behind the fake OpenAI server (see the module docstring); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.in_flight = 0
        self.settled: set[str] = set()  # tokens the model was shown as answered already (in doubt or not)
        self._kill: tuple[int, int] | None = None

    def arm(self, after: int, pid: int) -> None:
        """SIGKILL ``pid`` when the ``after``-th request from now comes in (before answering it)."""
        with self._lock:
            self._kill = (self.requests + after, pid)

    def disarm(self) -> None:
        """Forget an armed kill."""
        with self._lock:
            self._kill = None

    def __call__(self, request: Any) -> Reply:
        with self._lock:
            self.requests += 1
            kill = self._kill
            if kill is not None and self.requests >= kill[0]:
                self._kill = None
            else:
                kill = None
        if kill is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(kill[1], signal.SIGKILL)
        body = request.json if isinstance(request.json, Mapping) else {}
        return self.answer(body)

    def answer(self, body: Mapping[str, Any]) -> Reply:
        """The answer to one request body."""
        tools = {str((t.get("function") or {}).get("name")) for t in body.get("tools") or ()}
        if "send_message" not in tools:
            return Reply(json.dumps({"type": "summary", "content": "They exchanged numbered greetings."}))
        asked, done = acknowledged(body.get("messages") or ())
        pending = [token for token in asked if token not in done]
        with self._lock:
            self.settled.update(token for token in asked if token in done)
        if not pending:
            return Reply(tool_calls=(ScriptedCall("finish", {"reason": "everything is answered"}),))
        return Reply(tool_calls=(ScriptedCall("send_message", {"messages": [f"ack {t}" for t in pending]}),))


@dataclass(frozen=True)
class Message:
    """One planned inbound message."""

    chat: int
    token: str
    direct: bool


@dataclass
class Traffic:
    """The seeded inbound messages (see the module docstring); ``pushed`` counts those sent so far."""

    seed: int
    messages: int
    chats: int
    groups: int
    plan: list[Message] = field(default_factory=list)
    pushed: int = 0

    def __post_init__(self) -> None:
        rng = random.Random(f"traffic/{self.seed}")
        order = [index % self.chats for index in range(self.messages)]
        rng.shuffle(order)
        seqs = [0] * self.chats
        for chat in order:
            seqs[chat] += 1
            direct = chat < self.chats - self.groups
            self.plan.append(Message(chat, f"q{chat}x{seqs[chat]}", direct))

    @property
    def direct_tokens(self) -> list[str]:
        """Tokens of messages in private chats (each must get exactly one answer)."""
        return [m.token for m in self.plan if m.direct]

    @property
    def group_tokens(self) -> list[str]:
        """Tokens of group messages that mention nobody (recorded, never answered)."""
        return [m.token for m in self.plan if not m.direct]

    def next_wave(self, size: int) -> list[Message]:
        """The next ``size`` messages (fewer at the end)."""
        wave = self.plan[self.pushed : self.pushed + size]
        self.pushed += len(wave)
        return wave

    @property
    def done(self) -> bool:
        """Every message was pushed."""
        return self.pushed >= len(self.plan)
