"""The inbound path on a real Host: admission, slash commands before ingest, trust written at ingest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import pytest

from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.runtime.trust import REFUSAL_TEXT

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.runtime.runtime import AgentRuntime

pytestmark = pytest.mark.anyio

MemoryHost = Any  # the fixtures of conftest.py
Router = Any
Settle = Any

OWNERS = "trust: {owners: ['fake:42'], trusted: ['fake:7']}\n"


def runtime_of(delivery: object) -> AgentRuntime:
    assert isinstance(delivery, RuntimeDelivery), delivery
    return delivery.runtime


def log_entries(runtime: AgentRuntime) -> list[Entry]:
    return list(runtime.context.log.iter_forward())


async def test_a_command_is_answered_in_its_channel_and_never_ingested(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host() as th:
        channel = th.channel()
        delivery = await channel.say("/whoami")
        runtime = runtime_of(delivery)
        await settle(runtime)
        assert channel.texts() == ["channel: fake:bot private:1\nid: fake:1\ntrust: trusted"]
        assert delivery.entry_id is None
        assert [e for e in log_entries(runtime) if e.type == "message"] == []
        assert router.seen == []  # nothing reached the model
        await channel.say("/HELP clear")
        assert channel.texts()[-1] == (
            "/clear\nStart a fresh session; nothing is carried over.\nAliases: /reset\nNeeds a trusted sender."
        )


async def test_a_slash_word_that_is_no_command_goes_to_the_model(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("/shrug fine")))
        await settle(runtime_of(await channel.say("/etc/hosts is a file")))
        assert channel.texts() == ["re: /shrug fine", "re: /etc/hosts is a file"]
        assert router.count("turn") == 2


async def test_a_command_addressed_to_another_bot_in_a_group_is_not_ours(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        runtime = runtime_of(await channel.say("/whoami@OtherBot", channel_id="group:5"))
        await settle(runtime)
        assert channel.texts() == ["re: /whoami@OtherBot"]
        delivery = await channel.say("/whoami@bot", channel_id="group:5", mentions_self=True, message_id="m9")
        await settle(runtime_of(delivery))
        assert channel.sent[-1].text == "channel: fake:bot group:5\nid: fake:1\ntrust: trusted"
        assert channel.sent[-1].reply_to == "m9"  # in a group, the answer replies to the command


async def test_commands_are_gated_by_the_senders_trust(memory_host: MemoryHost, router: Router) -> None:
    async with memory_host(extra=OWNERS) as th:
        channel = th.channel()
        await channel.say("/memories", user_id="3")
        await channel.say("/memories", user_id="7")
        await channel.say("/whoami", user_id="42")
        assert channel.texts() == [
            "Sorry, /memories is only for people I trust.",
            "No memories yet.",
            "channel: fake:bot private:1\nid: fake:42\ntrust: owner",
        ]
        help_for_untrusted = await channel.say("/help", user_id="3")
        await settle_quietly(help_for_untrusted)
        assert "/memories" not in channel.texts()[-1]
        assert "/clear" not in channel.texts()[-1]
        assert "/memory" in channel.texts()[-1]
        assert router.seen == []


async def settle_quietly(delivery: object) -> None:
    with anyio.fail_after(10):
        await runtime_of(delivery).settled()


async def test_unlisted_senders_get_one_polite_refusal_and_nothing_reaches_the_model(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(extra="trust: {owners: ['fake:42'], allow_unlisted: false}\n", summarizer="off") as th:
        channel = th.channel()
        first = await channel.say("hello?", user_id="9")
        await channel.say("anyone there?", user_id="9")
        await channel.say("/help", user_id="9")
        assert channel.texts() == [REFUSAL_TEXT]
        runtime = runtime_of(first)
        assert first.entry_id is None
        assert log_entries(runtime) == []
        await settle(runtime_of(await channel.say("hi, it's me", user_id="42")))
        assert channel.texts() == [REFUSAL_TEXT, "re: hi, it's me"]
        assert router.count("turn") == 1
        assert "hello?" not in str(router.requests()[0])


async def test_the_senders_level_is_written_at_ingest_and_the_turn_runs_at_the_lowest(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(extra=OWNERS, summarizer="off") as th:
        channel = th.channel()
        for user in ("42", "7", "3"):
            runtime = runtime_of(await channel.say(f"hi from {user}", user_id=user))
            await settle(runtime)
        inbound = [e for e in log_entries(runtime) if e.type == "message" and "source" in e.data]
        assert [e.data["trust"] for e in inbound] == ["owner", "trusted", "untrusted"]
        prompts = [body["messages"][0]["content"] for body in router.requests()]
        assert ["senders the host does not trust" in prompt for prompt in prompts] == [False, False, True]


async def test_clear_and_compact_of_a_shared_session_need_a_trusted_sender_unless_the_profile_says(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(extra=OWNERS, summarizer="off") as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("plans for the trip", user_id="7", channel_id="group:5")))
        await channel.say("/clear", user_id="3", channel_id="group:5")
        await channel.say("/compact", user_id="3", channel_id="group:5")
        assert channel.texts()[-2:] == [
            "Sorry, /clear is only for people I trust.",
            "Sorry, /compact is only for people I trust.",
        ]
        runtime = runtime_of(await channel.say("/clear", user_id="7", channel_id="group:5"))
        assert channel.texts()[-1] == "Started a fresh session; nothing was carried over."
        assert [e.data["reason"] for e in log_entries(runtime) if e.type == "session"] == ["clear"]
    opened = OWNERS.replace("trusted: ['fake:7']", "trusted: ['fake:7'], commands: {clear: untrusted}")
    async with memory_host(extra=opened, summarizer="off") as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("plans for the trip", user_id="7", channel_id="group:5")))
        await channel.say("/clear", user_id="3", channel_id="group:5")
        assert channel.texts()[-1] == "Started a fresh session; nothing was carried over."
