"""Repeated input: an event a runtime already took (the same kind, sid, channel, message id and ``editedAt``) is
ignored, within one life of the host and after a restart, and the channel still gets a durable answer."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.channels.events import IshikiEvent, User
from ishiki_host.channels.inbound import is_inbound
from ishiki_host.channels.repeats import RecentInbound, event_identity, source_identity
from ishiki_host.core.factlog import FactLog
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


def answer_every_message(server: FakeOpenAIServer) -> None:
    server.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["got it"]}),))


def inbound_sources(log: FactLog) -> list[dict[str, Any]]:
    return [dict(e.data["source"]) for e in log.iter_forward() if is_inbound(e)]


async def settled(delivery: Any) -> Any:
    with anyio.fail_after(10):
        await delivery.settled()
    return delivery


async def test_a_repeated_event_is_taken_once_and_answered_once(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_message(fake_openai)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        bot = th.channel()
        event = bot.event("hello", message_id="tg-77")
        first = await settled(await th.host.dispatch(event))
        again = await settled(await th.host.dispatch(event))
        sources = inbound_sources(first.runtime.context.log)
    assert (first.routed, again.routed, again.runtime_key) == (True, True, first.runtime_key)
    assert (first.entry_id is not None, again.entry_id) == (True, None)  # durable, and nothing new appended
    assert [s["messageId"] for s in sources] == ["tg-77"]
    assert bot.texts() == ["got it"]
    assert len(fake_openai.requests) == 1


async def test_a_repeat_after_a_restart_is_known_from_the_log_and_an_edit_is_new(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    answer_every_message(fake_openai)
    root = tmp_path / "bot"
    async with make_host(profiles={"ana": profile_yaml()}, root=root) as th:
        event = th.channel().event("helo", message_id="tg-5")
        await settled(await th.host.dispatch(event))
    edited = dataclasses.replace(event, content="hello", extra={"editedAt": 1_700_000_060})
    async with make_host(profiles={"ana": profile_yaml()}, root=root) as th:
        again = await settled(await th.host.dispatch(event))  # the platform sent it again after the "crash"
        edit = await settled(await th.host.dispatch(edited))
        edit_again = await settled(await th.host.dispatch(edited))
        sources = inbound_sources(edit.runtime.context.log)
    assert (again.entry_id, edit.entry_id is not None, edit_again.entry_id) == (None, True, None)
    assert [(s["messageId"], s["content"]) for s in sources] == [("tg-5", "helo"), ("tg-5", "hello")]


async def test_concurrent_deliveries_of_one_event_append_it_once(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_message(fake_openai)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        event = th.channel().event("hello", message_id="tg-9")
        deliveries: list[Any] = []

        async def dispatch() -> None:
            deliveries.append(await th.host.dispatch(event))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(dispatch)
        for delivery in deliveries:
            await settled(delivery)
        sources = inbound_sources(deliveries[0].runtime.context.log)
    assert sorted(d.entry_id is None for d in deliveries) == [False, True, True]
    assert len(sources) == 1
    assert len(fake_openai.requests) == 1


async def test_an_event_whose_delivery_failed_is_taken_when_it_comes_again(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_message(fake_openai)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        failures = [OSError(28, "No space left on device")]

        async def full_disk_once(event: IshikiEvent) -> bool:
            if failures:
                raise failures.pop()
            return False

        runtime.add_inbound_filter(full_disk_once)
        event = th.channel().event("hello", message_id="tg-3")
        with pytest.raises(OSError, match="No space left"):
            await th.host.dispatch(event)
        retried = await settled(await th.host.dispatch(event))
        sources = inbound_sources(runtime.context.log)
    assert retried.entry_id is not None
    assert [s["messageId"] for s in sources] == ["tg-3"]


def event(message_id: str, **fields: Any) -> IshikiEvent:
    return IshikiEvent(
        kind="message.created",
        platform="telegram",
        self_id="7000",
        channel_id="group:-100",
        message_id=message_id,
        timestamp=1_700_000_000.0,
        user=User("42", "Alice"),
        **fields,
    )


def test_a_stored_event_has_the_identity_of_the_event() -> None:
    for shaped in (event("1"), event("1", extra={"editedAt": 1_700_000_060}), event("2", extra={"updateId": 5})):
        assert source_identity(shaped.to_dict()) == event_identity(shaped)
    assert event_identity(event("1")) != event_identity(event("1", extra={"editedAt": 1_700_000_060}))
    deleted = dataclasses.replace(event("1"), kind="message.deleted", user=None)
    assert event_identity(deleted) != event_identity(event("1"))
    assert source_identity({"platform": "telegram", "selfId": "7000"}) is None  # malformed: never matches


async def test_the_window_keeps_the_newest_identities(tmp_path: Path) -> None:
    recent = RecentInbound(window=2)
    async with await FactLog.open(tmp_path / "facts.jsonl", fsync="never") as log:
        for message_id in ("1", "2", "3"):
            async with recent.admit(log, event(message_id)) as new:
                assert new
        for message_id, is_new in (("3", False), ("2", False), ("1", True)):
            async with recent.admit(log, event(message_id)) as new:
                assert new is is_new
