"""``/usage`` on a real host: the profile's calls, tokens and tools today or over N days, counted from the
gateway and the turns; bad periods answered with what is allowed; a host without its memory database."""

from __future__ import annotations

import anyio
import pytest

from ishiki_host.commands.usage import parse_days
from ishiki_host.errors import CommandError
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.channels import FakeConnection
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

TODAY = "2023-11-14"  # the FakeClock's start, in UTC


async def say(channel: FakeConnection, text: str, chat: str = "private:1") -> str:
    delivery = await channel.say(text, channel_id=chat)
    with anyio.fail_after(10):
        await delivery.settled()
    return channel.texts()[-1]


def answers(server: FakeOpenAIServer) -> None:
    server.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["ok"]}),), usage=(1000, 20))


async def test_usage_today_and_over_days_by_channel_model_and_tool(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    answers(fake_openai)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        channel = th.channel()
        await say(channel, "hello")
        await say(channel, "again", chat="private:2")
        today = await say(channel, "/usage")
        week = await say(channel, "/usage 7 days")
        same = await say(channel, "/usage today")
    assert today.splitlines() == [
        f"Usage of ana today ({TODAY}, UTC):",
        "model calls: 2 calls, 2,000 tokens in, 40 out",
        "by channel:",
        "- fake:bot: 2 calls, 2,000 tokens in, 40 out",
        "by model:",
        "- fake:fake-model: 2 calls, 2,000 tokens in, 40 out",
        "tools: send_message ×2",
    ]
    assert week.splitlines()[0] == f"Usage of ana the last 7 days (2023-11-08 to {TODAY}, UTC):"
    assert week.splitlines()[1:] == today.splitlines()[1:]
    assert same == today


async def test_another_profile_and_a_failed_call_are_counted_apart(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    answers(fake_openai)
    fake_openai.error(401, "bad key", type="invalid_api_key")
    profiles = {"ana": profile_yaml("fake:bot: ['private:1']"), "bob": profile_yaml("fake:bot: ['private:2']")}
    async with make_host(profiles=profiles) as th:
        channel = th.channel()
        await say(channel, "hello")  # fails: the key is refused once
        await say(channel, "hello", chat="private:2")
        ana = await say(channel, "/usage")
        bob = await say(channel, "/usage", chat="private:2")
    assert ana.splitlines()[1] == "model calls: 1 call (1 failed), 0 tokens in, 0 out"
    assert "tools:" not in ana
    assert bob.splitlines()[1] == "model calls: 1 call, 1,000 tokens in, 20 out"


async def test_nothing_counted_yet(make_host: MakeHost) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        told = await say(th.channel(), "/usage 3 days")
    assert told == f"No model or tool calls of ana the last 3 days (2023-11-12 to {TODAY}, UTC)."


@pytest.mark.parametrize("args", ["0 days", "lots", "-1", "400 days", "7 weeks", "1.5 days"])
async def test_a_bad_period_says_what_is_allowed(make_host: MakeHost, args: str) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        told = await say(th.channel(), f"/usage {args}")
    assert told == (
        f"Say /usage today or /usage N days with N from 1 to 366, not {args!r}.\nUsage: /usage [today|N days]"
    )


def test_the_periods_it_reads() -> None:
    assert [parse_days(t) for t in ("", "today", " TODAY ", "1 day", "7 days", "7d", "30", "366 days")] == [
        1, 1, 1, 1, 7, 7, 30, 366,
    ]  # fmt: skip
    with pytest.raises(CommandError, match="not '0'"):
        parse_days("0")


async def test_a_host_without_its_memory_database_says_so(make_host: MakeHost) -> None:
    async with make_host(profiles={"ana": profile_yaml()}, files={"data/memory.db": "not a database"}) as th:
        told = await say(th.channel(), "/usage")
    assert told == "Usage is counted in the memory database, which is not open on this host."
