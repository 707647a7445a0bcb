"""Streamed replies through a real host: drafts grow, then end exactly once, and the log says what was seen.

The model is a loopback OpenAI-compatible server: ``fake_openai`` for whole answers, and ``PausingServer``
(below) for answers that stop where the test says (``PAUSE`` until ``release()``, ``CUT`` to close the
connection mid-stream), so "a draft was shown" is a fact to wait on, never a race. The channel is the fake
channel with ``drafts: true`` (``DraftingFakeConnection``), or without it (no drafts: no stream either).
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

import anyio
import anyio.abc
import pytest
from anyio.abc import SocketStream, TaskStatus

from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.channels.base import Draft, DraftEnd
from ishiki_host.testing import FakeOpenAIServer, host_yaml, profile_yaml
from ishiki_host.testing.channels import DraftCall, DraftingFakeConnection
from ishiki_host.testing.host import MakeHost, TestHost

PAUSE: Final = "pause"
CUT: Final = "cut"
Part = bytes | str


def _chunk(delta: dict[str, object], finish_reason: str | None = None) -> bytes:
    data = {
        "id": "chatcmpl-pausing",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(data)}\n\n".encode()


def text(piece: str) -> bytes:
    """An event carrying a piece of the answer's text."""
    return _chunk({"content": piece})


def tool_call(index: int, call_id: str, name: str, arguments: dict[str, object]) -> bytes:
    """An event carrying a whole tool call."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    return _chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]})


def finish(reason: str = "stop") -> bytes:
    """The finish event and the end of the stream."""
    return _chunk({}, reason) + b"data: [DONE]\n\n"


class PausingServer:
    """See the module docstring. Run ``serve`` with ``tg.start``; ``base_url`` is the provider's base URL."""

    def __init__(self) -> None:
        self.port = 0
        self.answers: deque[Sequence[Part]] = deque()
        self.bodies: list[dict[str, object]] = []
        self.paused = anyio.Event()
        self._release = anyio.Event()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def models_yaml(self) -> str:
        """A models.yaml with provider ``fake`` here and group ``default`` of its one model."""
        return (
            f"providers:\n  fake:\n    api: openai-completions\n    base_url: {self.base_url}\n"
            "    models:\n      - id: fake-model\ngroups:\n  default:\n    models: [fake:fake-model]\n"
        )

    def release(self) -> None:
        """Let a paused answer go on."""
        self._release.set()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen on 127.0.0.1 until cancelled."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener:
            task_status.started()
            await listener.serve(self._answer)

    async def _answer(self, stream: SocketStream) -> None:
        async with stream:
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive()
            head, _, body = head.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            while len(body) < length:
                body += await stream.receive()
            self.bodies.append(json.loads(body))
            await stream.send(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                b"connection: close\r\n\r\n"
            )
            for part in self.answers.popleft():
                if part == PAUSE:
                    self.paused.set()
                    await self._release.wait()
                elif part == CUT:
                    return  # closed without the last chunk: the body is cut short
                elif isinstance(part, bytes):
                    await stream.send(b"%x\r\n%s\r\n" % (len(part), part))
            await stream.send(b"0\r\n\r\n")


pytestmark = pytest.mark.anyio

SORRY = "Sorry, something went wrong on my side; please try again in a moment."  # the default failure_reply
DRAFTING = host_yaml("[{self_id: bot, drafts: true}]")
ONE_TRY = "failover: {attempts: 1}\n"  # a failed stream fails the turn at once (no backoff on the FakeClock)
XML = "model: default\nchannels:\n  fake:bot: ['*']\nwakeup: {engine: every}\ncontext: {engine: plain}\n"
XML += "toolcall: {engine: xml}\nsession: {summarizer: off}\n" + ONE_TRY
KEY = RuntimeKey.for_channel("ana", "fake:bot", "private:1")
LONG = "The quick brown fox jumps over the lazy dog, twice, to be sure."


def log_of(th: TestHost) -> list[dict[str, Any]]:
    path = runtime_dir(th.root / "data", KEY) / "facts.jsonl"
    return [json.loads(line)["data"] for line in path.read_text(encoding="utf-8").splitlines()]


def said(entry: dict[str, Any]) -> str:
    return "".join(part["text"] for part in entry["parts"] if part["type"] == "text")


def drafting(th: TestHost) -> DraftingFakeConnection:
    channel = th.channel()
    assert isinstance(channel, DraftingFakeConnection)
    return channel


async def say(th: TestHost, text: str) -> None:
    with anyio.fail_after(20):
        delivery = await th.channel().say(text)
        await delivery.settled()


def assert_grew_then_ended_once(calls: list[DraftCall], end: str) -> None:
    """Shows whose text only grows, then exactly one end of kind ``end``."""
    assert [c.kind for c in calls[:-1]] == ["show"] * (len(calls) - 1)
    assert calls[-1].kind == end
    shown = [c.text for c in calls[:-1]]
    assert all(b.startswith(a) and b != a for a, b in itertools.pairwise(shown))
    assert len({c.draft_id for c in calls}) == 1


@pytest.fixture
async def pausing() -> AsyncIterator[PausingServer]:
    server = PausingServer()
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        yield server
        server.release()
        tg.cancel_scope.cancel()


async def test_a_streamed_reply_grows_in_drafts_and_is_delivered_and_logged_once(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply(LONG)
    async with make_host(profiles={"ana": profile_yaml()}, host=DRAFTING) as th:
        await say(th, "hello")
        channel = drafting(th)
        log = log_of(th)
    assert fake_openai.bodies[-1]["stream"] is True  # type: ignore[index,call-overload]
    calls = channel.draft_calls()
    assert_grew_then_ended_once(calls, "finish")
    assert all(LONG.startswith(c.text) for c in calls[:-1])
    assert (calls[-1].text, channel.texts(), channel.overlaps) == (LONG, [LONG], 0)
    assistant = [e for e in log if e.get("role") == "assistant"]
    replies = [e for e in log if e.get("kind") == "reply_with_text"]
    assert [said(a) for a in assistant] == [LONG]
    assert [r["ids"] for r in replies] == [list(calls[-1].ids)]
    assert log[-1]["name"] == "turn.done"
    assert "partial_reply" not in log[-1]


async def test_a_slow_show_is_cut_when_the_reply_is_final_and_calls_never_overlap(
    make_host: MakeHost, pausing: PausingServer
) -> None:
    pausing.answers.append([text("One, "), PAUSE, text("two, "), text("three, "), text("four."), finish()])
    async with make_host(profiles={"ana": profile_yaml()}, host=DRAFTING, models=pausing.models_yaml()) as th:
        channel = drafting(th)
        channel.draft_gate = anyio.Event()  # never set: the show of "One, " would wait for ever
        with anyio.fail_after(20):
            delivery = await channel.say("count")
            await channel.wait_held(1)  # "One, " is being shown, slowly
            pausing.release()
            await delivery.settled()  # the final text does not wait for the throttle: the show is cut
        log = log_of(th)
    calls = channel.draft_calls()
    assert [(c.kind, c.text) for c in calls] == [("finish", "One, two, three, four.")]
    assert channel.overlaps == 0
    assert channel.held == 0
    assert [said(e) for e in log if e.get("role") == "assistant"] == ["One, two, three, four."]


async def test_a_connection_without_drafts_gets_one_send_and_the_model_is_not_streamed(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply(LONG)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        await say(th, "hello")
        channel = th.channel()
        log = log_of(th)
    assert not isinstance(channel, DraftingFakeConnection)
    assert not fake_openai.bodies[-1].get("stream")  # type: ignore[union-attr]
    assert [(m.text, m.ids) for m in channel.sent] == [(LONG, ("out-1",))]
    assert [e["ids"] for e in log if e.get("kind") == "reply_with_text"] == [["out-1"]]


async def test_stream_replies_off_sends_the_reply_without_a_draft(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.reply(LONG)
    async with make_host(profiles={"ana": profile_yaml(extra="stream_replies: false\n")}, host=DRAFTING) as th:
        await say(th, "hello")
        channel = drafting(th)
    assert not fake_openai.bodies[-1].get("stream")  # type: ignore[union-attr]
    assert (channel.drafts, channel.texts()) == ([], [LONG])


@pytest.mark.parametrize("engine", ["native", "xml"])
async def test_a_tool_call_in_the_stream_drops_the_draft_and_runs_through_the_engine(
    make_host: MakeHost, pausing: PausingServer, engine: str
) -> None:
    send = {"messages": ["Sent by the tool."]}
    if engine == "native":
        rest = [tool_call(0, "call_1", "send_message", send), finish("tool_calls")]
        profile = profile_yaml(extra=ONE_TRY)
    else:
        block = json.dumps({"name": "send_message", "arguments": send})
        rest = [text(f"\n<tool_call>\n{block}\n</tool_call>"), finish()]
        profile = XML
    pausing.answers.append([text("Let me send it."), PAUSE, *rest])
    async with make_host(profiles={"ana": profile}, host=DRAFTING, models=pausing.models_yaml()) as th:
        channel = drafting(th)
        with anyio.fail_after(20):
            delivery = await channel.say("send something")
            await pausing.paused.wait()
            await channel.wait_drafts(1)
            pausing.release()
            await delivery.settled()
        log = log_of(th)
    calls = channel.draft_calls()
    assert [(c.kind, c.text, c.why) for c in calls] == [
        ("show", "Let me send it.", None),
        ("drop", "Let me send it.", "tools"),
    ]
    assert channel.texts() == ["Sent by the tool."]  # sent by send_message, through send
    assert [e["tool_name"] for e in log if e.get("role") == "tool"] == ["send_message"]
    assert log[-1] == {**log[-1], "name": "turn.done", "reason": "sent"}


async def test_a_stream_cut_mid_way_drops_the_draft_apologizes_and_logs_what_was_shown(
    make_host: MakeHost, pausing: PausingServer
) -> None:
    pausing.answers.append([text("I was about "), text("to say"), PAUSE, CUT])
    async with make_host(
        profiles={"ana": profile_yaml(extra=ONE_TRY)}, host=DRAFTING, models=pausing.models_yaml()
    ) as th:
        channel = drafting(th)
        sent_at_drop: list[int] = []
        drop = channel.drop_draft

        async def counting_drop(channel_id: str, draft: Draft, why: DraftEnd) -> None:
            sent_at_drop.append(len(channel.sent))
            await drop(channel_id, draft, why)

        channel.drop_draft = counting_drop  # type: ignore[method-assign]
        with anyio.fail_after(20):
            delivery = await channel.say("talk")
            await pausing.paused.wait()
            while not channel.drafts or channel.drafts[-1].text != "I was about to say":
                await channel.wait_drafts(len(channel.drafts) + 1)
            pausing.release()
            await delivery.settled()
        log = log_of(th)
    calls = channel.draft_calls()
    assert_grew_then_ended_once(calls, "drop")
    assert (calls[-1].why, calls[-1].text) == ("failed", "I was about to say")
    assert channel.texts() == [SORRY]
    assert sent_at_drop == [0]  # the draft was taken back before the apology went out
    end = log[-1]
    assert (end["name"], end["partial_reply"]) == ("turn.failed", "I was about to say")
    assert not any(e.get("role") == "assistant" or e.get("kind") == "reply_with_text" for e in log)


async def test_stopping_mid_stream_drops_the_draft_and_logs_the_partial_reply(
    make_host: MakeHost, pausing: PausingServer
) -> None:
    pausing.answers.append([text("Half of "), text("it"), PAUSE, text(" and more."), finish()])
    async with make_host(profiles={"ana": profile_yaml()}, host=DRAFTING, models=pausing.models_yaml()) as th:
        channel = drafting(th)
        with anyio.fail_after(20):
            await channel.say("talk")
            await pausing.paused.wait()
            while not channel.drafts or channel.drafts[-1].text != "Half of it":
                await channel.wait_drafts(len(channel.drafts) + 1)
            runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
            await runtime.stop(grace=0)
        log = log_of(th)
    calls = channel.draft_calls()
    assert_grew_then_ended_once(calls, "drop")
    assert calls[-1].why == "aborted"
    assert channel.sent == []
    end = next(e for e in log if e.get("name") == "turn.aborted")
    assert (end["partial_reply"], end["resume"]) == ("Half of it", True)
