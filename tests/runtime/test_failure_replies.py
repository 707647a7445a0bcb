"""A failed turn a person started: one short apology per failure streak in the chat, the reason for the operator.

Real runtimes: a ``TestHost`` whose model is the loopback ``fake_openai`` server (failing with a 5xx or a 4xx), or
a ``RuntimeHarness`` for what a host cannot script (a tool clash, one turn answering two channels).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.config.profile_types import Profile
from ishiki_host.core.tools import Tool, ToolContext
from ishiki_host.errors import ModelUnavailable
from ishiki_host.memory.extension import OVERFLOW_OFF_NOTICE
from ishiki_host.testing import FakeOpenAIServer, profile_yaml
from ishiki_host.testing.engines import EveryMessageWakeup
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.host import MakeHost, TestHost
from ishiki_host.testing.models import ScriptedModel, reply

pytestmark = pytest.mark.anyio

SORRY = "Sorry, something went wrong on my side; please try again in a moment."  # the default failure_reply
ONE_TRY = "failover: {attempts: 1}\n"  # a 5xx fails the turn at once (no backoff on the test's FakeClock)


def ana(extra: str = "") -> dict[str, str]:
    return {"ana": profile_yaml(extra=ONE_TRY + extra)}


async def say(th: TestHost, text: str, **fields: Any) -> None:
    with anyio.fail_after(10):
        delivery = await th.channel().say(text, **fields)
        await delivery.settled()


async def test_one_apology_per_failure_streak_and_a_success_ends_the_streak(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.server_error(500)
    fake_openai.server_error(503)
    fake_openai.tool_call("send_message", {"messages": ["back again"]})
    fake_openai.server_error(500)
    async with make_host(profiles=ana()) as th:
        for text in ("one", "two", "three", "four"):
            await say(th, text)
        channel = th.channel()
    assert channel.texts() == [SORRY, "back again", SORRY]
    assert [m.reply_to for m in channel.sent if m.text == SORRY] == [None, None]  # a private chat: no reply
    reasons = [reason for _, reason in channel.failures]
    assert len(reasons) == 3  # every failed turn shows its reason to the operator...
    assert all(reason.startswith("ModelUnavailable: ") for reason in reasons)
    assert "500" in reasons[0]
    assert not any("500" in text or "ModelUnavailable" in text for text in channel.texts())  # ...never in the chat


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('failure_reply: "Oops, my side broke. Try again soon."', ["Oops, my side broke. Try again soon."]),
        ("failure_reply: null", []),
        ('failure_reply: ""', []),
    ],
)
async def test_the_profile_says_what_is_said_or_that_nothing_is(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, line: str, said: list[str]
) -> None:
    fake_openai.error(400, "the request is malformed", type="invalid_request_error")  # failover never retries it
    async with make_host(profiles=ana(line + "\n")) as th:
        await say(th, "hello")
        channel = th.channel()
    assert channel.texts() == said
    assert [channel_id for channel_id, _ in channel.failures] == ["private:1"]  # the operator still sees why


async def test_a_wake_that_fails_says_nothing_and_leaves_the_apology_for_a_person(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.server_error(500)  # the wake's turn
    fake_openai.server_error(500)  # the person's turn
    async with make_host(profiles=ana()) as th:
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        with anyio.fail_after(10):
            outcome = await (await runtime.context.wake("check the weather", info={"heartbeat": "weather"}))
            await runtime.settled()
        assert outcome.status == "failed"
        assert (th.channel().texts(), th.channel().failures) == ([], [])  # a beat or wake: the log only
        await say(th, "are you there?")
        channel = th.channel()
    assert channel.texts() == [SORRY]
    assert len(channel.failures) == 1


async def test_a_group_apology_replies_to_the_message_and_each_channel_is_told_once(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    for _ in range(3):
        fake_openai.server_error(500)
    async with make_host(profiles=ana()) as th:
        await say(th, "first", channel_id="group:7", message_id="g-1")
        await say(th, "second", channel_id="group:7", message_id="g-2")
        await say(th, "hi", channel_id="private:1")  # another runtime: its own streak
        channel = th.channel()
    assert [(m.channel_id, m.text, m.reply_to) for m in channel.sent] == [
        ("group:7", SORRY, "g-1"),
        ("private:1", SORRY, None),
    ]


async def clash(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "a second read"


async def test_a_tool_clash_fails_the_turn_and_the_sender_is_told(tmp_path: Path) -> None:
    model = ScriptedModel([reply("never asked")])
    async with RuntimeHarness(
        tmp_path,
        model=model,
        extra_tools=[Tool("read", "Another read.", clash)],
        kernel_tools=True,
        wakeup=EveryMessageWakeup(),
    ) as rt:
        with anyio.fail_after(10):
            await rt.deliver(rt.channel.event("hello"))
            await rt.settled()
    assert model.requests == []
    assert rt.channel.texts() == [SORRY]
    assert rt.channel.failures == [
        (
            "private:1",
            "ToolConflictError: turn 1: two tools are named 'read' (from the extra stage and the kernel stage)",
        )
    ]


def cross(tmp_path: Path) -> Profile:
    return Profile(id="ana", directory=tmp_path, file=tmp_path / "profile.yml", persona="", model="m", mode="cross")


async def test_a_cross_turn_answering_two_channels_tells_each_of_them(tmp_path: Path) -> None:
    model = ScriptedModel([ModelUnavailable("the provider is down", model="m")])
    async with RuntimeHarness(tmp_path, model=model, profile=cross(tmp_path)) as rt:
        with anyio.fail_after(10):
            await rt.deliver(rt.channel.event("in private", channel_id="private:1"))
            await rt.deliver(rt.channel.event("in the group", channel_id="group:9", message_id="g-9"))
            outcome = await (await rt.agent.continue_(reason="test"))  # one turn answers both messages
            await rt.settled()
    assert outcome.status == "failed"
    assert sorted((m.channel_id, m.text, m.reply_to) for m in rt.channel.sent) == [
        ("group:9", SORRY, "g-9"),
        ("private:1", SORRY, None),
    ]
    assert sorted(rt.channel.failures) == [
        ("group:9", "ModelUnavailable: the provider is down"),
        ("private:1", "ModelUnavailable: the provider is down"),
    ]


async def test_an_apology_that_cannot_be_sent_is_logged_and_not_tried_again(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.server_error(500)
    fake_openai.server_error(500)
    async with make_host(profiles=ana()) as th:
        th.channel().fail_sends = ["the platform is down", "the platform is down"]
        await say(th, "one")
        await say(th, "two")
        channel = th.channel()
    assert channel.sent == []
    assert channel.fail_sends == ["the platform is down"]  # one attempt for the whole streak
    assert len(channel.failures) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("the apology to fake:bot private:1 was not sent" in m for m in warnings) == 1


async def test_a_context_overflow_is_left_to_the_session_and_keeps_the_apology_for_the_next_failure(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.context_length()
    fake_openai.server_error(500)
    async with make_host(profiles=ana()) as th:
        await say(th, "a very long story")
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        with anyio.fail_after(10):
            await runtime.settled(background=True)  # the memory extension's notice after the overflow
        await say(th, "and then?")
        channel = th.channel()
    assert channel.texts() == [OVERFLOW_OFF_NOTICE, SORRY]
    assert [reason.split(":")[0] for _, reason in channel.failures] == ["ModelUnavailable"]
