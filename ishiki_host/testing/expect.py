"""Expectation blocks (in the spirit of NoneBug): say what comes in and what must come out, in one block.

::

    async with rt.expect() as x:          # rt: an entered RuntimeHarness
        x.receive("hello")                # queued: delivered when the block is left
        x.should_call("greet", {"name": "Ada"})
        x.should_send("hello Ada")

**Inbound.** ``receive(text, ...)`` queues a ``message.created`` event shaped by the harness's channel (its
platform and self id, the runtime's own channel id unless given, sender ``1``, stamped by the runtime's
clock). On leaving the block each queued event goes through ``rt.deliver`` as a real channel's does: the
repeat check, the command layer (a ``/command`` is answered, not appended), the sender's trust, the append
(``message.appended``). Then the wakeup engine decides, if the harness has one; if it has none (the default)
the block starts a turn for each message delivered, as ``EveryMessageWakeup`` would. After each message the
block waits until the runtime settles (``rt.settled(background=True)``: turns ended, extension work done)
before delivering the next, so answers come in the order of the messages. The whole run is under one deadline
(``timeout``, 30 s by default: a cap, not a wait); hitting it fails the block as "timed out".

**Checks.** Then every expectation is checked, in the order written, against what happened from the start of
the block on (a ``say`` awaited inside the block counts too):

- ``should_send(expected)``: a message the channel received (``FakeConnection.sent``) has the text
  ``expected`` (a string: equal; a compiled ``re.Pattern``: ``search``; a callable: true for the text);
- ``should_call(name, args=None, *, result=None, error=None)``: a tool call recorded in the fact log (an
  assistant message's ``tool_calls``, with the ``tool`` entry answering it) has that name, the arguments
  ``args`` (a mapping: equal; a callable: true for them), a result text ``result`` matched as texts are, and,
  when ``error`` is given, a result that is (``True``) or is not (``False``) an error (a call the agent rejected
  or a hook blocked has an error result);
- ``should_not_send(expected=None)`` / ``should_not_call(name)``: no such message / call.

Sends and calls are each read in order: a ``should_send`` looks at the messages after the one the previous
``should_send`` matched (messages in between are allowed), and a ``should_not_send`` at the messages after
that point, so ``should_send("hi"); should_not_send()`` means "hi" and nothing after it. Calls likewise.

Unmet expectations raise ``ExpectationFailed`` (an ``AssertionError``) listing every expectation, met or not,
and what happened: the messages received, sent, the tool calls with their results, the turns' ends. An
exception raised inside the block propagates as it is: nothing is delivered and nothing checked. After the
block ``x.sent`` and ``x.calls`` hold what was seen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import takewhile
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ishiki_host.core.messages import Message

if TYPE_CHECKING:
    from ishiki_host.channels.base import InboundAttachment
    from ishiki_host.channels.events import IshikiEvent, Quote
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.testing.channels import FakeConnection, SentMessage

__all__ = ["ExpectationFailed", "Expectations", "ExpectedRuntime", "RecordedCall", "TextMatch"]

TextMatch = str | re.Pattern[str] | Callable[[str], bool]
"""A text expected: equal to a string, searched by a pattern, or accepted by a predicate."""

ArgsMatch = Mapping[str, Any] | Callable[[Mapping[str, Any]], bool]


class ExpectationFailed(AssertionError):
    """An expectation block ended with expectations unmet, or timed out (the message says what happened)."""


class ExpectedRuntime(Protocol):
    """What an expectation block drives and reads: the harness's channel, log, clock and inbound path."""

    @property
    def channel(self) -> FakeConnection:
        """The connection the runtime sends through."""
        ...

    @property
    def log(self) -> FactLogProtocol:
        """The runtime's fact log."""
        ...

    @property
    def clock(self) -> Clock:
        """The runtime's clock (it stamps the events)."""
        ...

    async def deliver(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> Entry | None:
        """Ingest an event as a channel's."""
        ...

    async def settled(self, *, background: bool = False) -> None:
        """Until no turn runs (and, with ``background``, no extension work)."""
        ...


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A tool call as the fact log has it: the name, the arguments, and the result (``None`` if none came)."""

    name: str
    arguments: Mapping[str, Any]
    result: str | None = None
    is_error: bool = False

    def describe(self) -> str:
        """``name({...}) -> 'result'``, for failure messages."""
        shown = json.dumps(dict(self.arguments), ensure_ascii=False, sort_keys=True, default=str)
        outcome = "no result" if self.result is None else f"{'error ' if self.is_error else ''}{_short(self.result)}"
        return f"{self.name}({shown}) -> {outcome}"


@dataclass
class _Happened:
    """What the block saw: inbound texts (and what became of them), sends, calls and turn ends."""

    received: list[str] = field(default_factory=list)
    sent: list[SentMessage] = field(default_factory=list)
    calls: list[RecordedCall] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)

    def describe(self) -> list[str]:
        lines = ["what happened:"]
        for title, items in (
            ("received", self.received),
            ("sent", [f"{_short(m.text)} to {m.channel_id}" for m in self.sent]),
            ("tool calls", [c.describe() for c in self.calls]),
            ("turns", self.turns),
        ):
            lines.append(f"  {title}:" if items else f"  {title}: none")
            lines += [f"    {n}. {item}" for n, item in enumerate(items, 1)]
        return lines


@dataclass(frozen=True, slots=True)
class _Inbound:
    text: str
    fields: Mapping[str, Any]
    attachments: Sequence[InboundAttachment]


class _Check(Protocol):
    def describe(self) -> str: ...

    def check(self, happened: _Happened, cursors: dict[str, int]) -> str | None: ...


@dataclass(frozen=True)
class _Send:
    expected: TextMatch | None
    negated: bool

    def describe(self) -> str:
        shown = "" if self.expected is None else _describe_text(self.expected)
        return f"should_not_send({shown})" if self.negated else f"should_send({shown})"

    def check(self, happened: _Happened, cursors: dict[str, int]) -> str | None:
        start = cursors.get("send", 0)
        hits = [i for i, m in enumerate(happened.sent[start:], start) if _matches_text(self.expected, m.text)]
        if self.negated:
            return f"sent: {_short(happened.sent[hits[0]].text)} (message {hits[0] + 1})" if hits else None
        if not hits:
            return f"no message {_after(start, 'message')}matches"
        cursors["send"] = hits[0] + 1
        return None


@dataclass(frozen=True)
class _Call:
    name: str
    args: ArgsMatch | None = None
    result: TextMatch | None = None
    error: bool | None = None
    negated: bool = False

    def describe(self) -> str:
        shown = [repr(self.name)]
        if self.args is not None:
            shown.append(repr(dict(self.args)) if isinstance(self.args, Mapping) else _callable_name(self.args))
        if self.result is not None:
            shown.append(f"result={_describe_text(self.result)}")
        if self.error is not None:
            shown.append(f"error={self.error}")
        return f"{'should_not_call' if self.negated else 'should_call'}({', '.join(shown)})"

    def check(self, happened: _Happened, cursors: dict[str, int]) -> str | None:
        start = cursors.get("call", 0)
        hits = [i for i, c in enumerate(happened.calls[start:], start) if self._matches(c)]
        if self.negated:
            return f"called: {happened.calls[hits[0]].describe()} (call {hits[0] + 1})" if hits else None
        if not hits:
            named = sum(1 for c in happened.calls[start:] if c.name == self.name)
            where = _after(start, "call")
            return f"{named} call(s) of {self.name} {where}but none matches" if named else f"no call {where}matches"
        cursors["call"] = hits[0] + 1
        return None

    def _matches(self, call: RecordedCall) -> bool:
        if call.name != self.name:
            return False
        if self.args is not None and not _matches_args(self.args, call.arguments):
            return False
        if self.result is not None and (call.result is None or not _matches_text(self.result, call.result)):
            return False
        return self.error is None or call.is_error == self.error


class Expectations:
    """An expectation block (see the module docstring); made by ``RuntimeHarness.expect()``."""

    def __init__(
        self,
        runtime: ExpectedRuntime,
        *,
        channel_id: str,
        start_turn: Callable[[], Awaitable[object]] | None,
        timeout: float = 30.0,
    ):
        self._runtime = runtime
        self._channel_id = channel_id
        self._start_turn = start_turn
        self._timeout = timeout
        self._inbound: list[_Inbound] = []
        self._checks: list[_Check] = []
        self._happened = _Happened()
        self._sent_before = 0
        self._log_before = 0

    @property
    def sent(self) -> list[SentMessage]:
        """The messages the channel received during the block (filled when the block is left)."""
        return list(self._happened.sent)

    @property
    def calls(self) -> list[RecordedCall]:
        """The tool calls of the block, in order (filled when the block is left)."""
        return list(self._happened.calls)

    def receive(
        self,
        text: str,
        *,
        channel_id: str | None = None,
        user_id: str = "1",
        user_name: str | None = None,
        message_id: str | None = None,
        mentions_self: bool = False,
        quote: Quote | None = None,
        timestamp: float | None = None,
        attachments: Sequence[InboundAttachment] = (),
    ) -> None:
        """Queue an inbound message (``FakeConnection.event``'s fields); it is delivered when the block is left."""
        fields = {
            "channel_id": channel_id or self._channel_id,
            "user_id": user_id,
            "user_name": user_name,
            "message_id": message_id,
            "mentions_self": mentions_self,
            "quote": quote,
            "timestamp": timestamp,
        }
        self._inbound.append(_Inbound(text, fields, tuple(attachments)))

    def should_send(self, expected: TextMatch) -> None:
        """Expect a message with this text to be sent (after the one the previous ``should_send`` matched)."""
        self._checks.append(_Send(expected, negated=False))

    def should_not_send(self, expected: TextMatch | None = None) -> None:
        """Expect no message (with this text, if given) to be sent after the last one matched."""
        self._checks.append(_Send(expected, negated=True))

    def should_call(
        self, name: str, args: ArgsMatch | None = None, *, result: TextMatch | None = None, error: bool | None = None
    ) -> None:
        """Expect a call of the tool ``name`` (with these arguments, result and error state, when given)."""
        self._checks.append(_Call(name, args, result, error))

    def should_not_call(self, name: str) -> None:
        """Expect no call of the tool ``name`` after the last call matched."""
        self._checks.append(_Call(name, negated=True))

    async def __aenter__(self) -> Expectations:
        self._sent_before = len(self._runtime.channel.sent)
        self._log_before = self._runtime.log.last_id
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        if exc_type is not None:
            return  # the test's own error says more than unmet expectations would
        with anyio.move_on_after(self._timeout) as deadline:
            await self._run()
        await self._read()
        if deadline.cancelled_caught:
            self._fail([f"timed out after {self._timeout:g}s waiting for the runtime to settle"])
        self._verify()

    async def _run(self) -> None:
        runtime = self._runtime
        await runtime.settled(background=True)  # what the block itself started goes first
        for inbound in self._inbound:
            fields = dict(inbound.fields)
            if fields["timestamp"] is None:
                fields["timestamp"] = runtime.clock.now()
            entry = await runtime.deliver(runtime.channel.event(inbound.text, **fields), inbound.attachments)
            self._happened.received.append(_received(inbound.text, entry))
            if entry is not None and self._start_turn is not None:
                await self._start_turn()
            await runtime.settled(background=True)

    async def _read(self) -> None:
        """What the channel and the fact log recorded since the block was entered."""
        self._happened.sent = self._runtime.channel.sent[self._sent_before :]
        before = self._log_before
        newest_first = await self._runtime.log.read_back(lambda it: list(takewhile(lambda e: e.id > before, it)))
        entries = newest_first[::-1]
        self._happened.calls = _calls(entries)
        self._happened.turns = [_turn_end(e) for e in entries if e.type == "event" and _is_turn_end(e)]

    def _verify(self) -> None:
        cursors: dict[str, int] = {}
        lines, unmet = [], 0
        for check in self._checks:
            problem = check.check(self._happened, cursors)
            unmet += problem is not None
            shown = check.describe()
            lines.append(f"  met:     {shown}" if problem is None else f"  NOT MET: {shown}: {problem}")
        if unmet:
            self._fail([f"{unmet} of {len(self._checks)} expectation(s) not met:", *lines])

    def _fail(self, head: list[str]) -> None:
        raise ExpectationFailed("\n".join([*head, *self._happened.describe()]))


def _calls(entries: Sequence[Entry]) -> list[RecordedCall]:
    """The tool calls of assistant messages, each with the ``tool`` entry that answered it."""
    results = {e.data.get("tool_call_id"): e for e in entries if e.type == "message" and e.data.get("role") == "tool"}
    calls = []
    for entry in entries:
        if entry.type != "message" or entry.data.get("role") != "assistant":
            continue
        for call in Message.from_dict(entry.data).tool_calls:
            answer = results.get(call.id)
            text = Message.from_dict(answer.data).text if answer is not None else None
            is_error = bool(answer.data.get("is_error")) if answer is not None else False
            calls.append(RecordedCall(call.name, call.arguments, text, is_error))
    return calls


def _is_turn_end(entry: Entry) -> bool:
    return entry.name in ("turn.done", "turn.failed", "turn.aborted")


def _turn_end(entry: Entry) -> str:
    data = entry.data
    shown = f"turn {entry.turn} {str(entry.name).removeprefix('turn.')} ({data.get('reason')})"
    return f"{shown}: {data.get('error')}: {data.get('message')}" if data.get("error") else shown


def _received(text: str, entry: Entry | None) -> str:
    return f"{_short(text)} -> {'entry ' + str(entry.id) if entry is not None else 'consumed (a command or repeat)'}"


def _matches_text(expected: TextMatch | None, text: str) -> bool:
    if expected is None:
        return True
    if isinstance(expected, str):
        return text == expected
    if isinstance(expected, re.Pattern):
        return expected.search(text) is not None
    return bool(expected(text))


def _matches_args(expected: ArgsMatch, arguments: Mapping[str, Any]) -> bool:
    if isinstance(expected, Mapping):
        return dict(arguments) == dict(expected)
    return bool(expected(arguments))


def _describe_text(expected: TextMatch) -> str:
    if isinstance(expected, str):
        return repr(expected)
    if isinstance(expected, re.Pattern):
        return f"re.compile({expected.pattern!r})"
    return _callable_name(expected)


def _callable_name(fn: Callable[..., object]) -> str:
    name = getattr(fn, "__name__", "")
    return "a predicate" if not name or name == "<lambda>" else name


def _after(start: int, noun: str) -> str:
    return f"after {noun} {start} " if start else ""


def _short(text: str, limit: int = 200) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
