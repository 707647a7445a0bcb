"""The command layer's "did you mean": a slash word one edit from a command gets a hint, not the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.plugins.commands import Command, CommandTable, one_edit_apart

if TYPE_CHECKING:
    from ishiki_host.runtime.runtime import AgentRuntime

pytestmark = pytest.mark.anyio

MemoryHost = Any  # the fixtures of conftest.py
Router = Any
Settle = Any

OWNERS = "trust: {owners: ['fake:42'], trusted: ['fake:7']}\n"


def runtime_of(delivery: object) -> AgentRuntime:
    assert isinstance(delivery, RuntimeDelivery), delivery
    return delivery.runtime


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("stauts", "status", True),  # two neighbours swapped
        ("hepl", "help", True),
        ("clera", "clear", True),
        ("staus", "status", True),  # one dropped
        ("statuss", "status", True),  # one added
        ("stetus", "status", True),  # one changed
        ("status", "status", False),  # the same word is no typo
        ("sutats", "status", False),
        ("shrug", "stop", False),
        ("stsuta", "status", False),
    ],
)
def test_one_edit_apart(a: str, b: str, near: bool) -> None:
    assert one_edit_apart(a, b) is near
    assert one_edit_apart(b, a) is near


async def _reply(ctx: object, args: str) -> str:
    return "ok"


def test_near_respects_addressing_and_the_allowed_commands() -> None:
    table = CommandTable(bot_names=["MyBot"])
    table.register(Command("status", _reply, "Status."))
    table.register(Command("clear", _reply, "Clear.", aliases=("reset",), trust="trusted"))
    assert table.near("/stauts now") == ("stauts", ["status"])
    assert table.near("/STAUTS@mybot") == ("stauts", ["status"])
    assert table.near("/stauts@OtherBot") is None  # addressed to another bot: not ours to correct
    assert table.near("/status") is None  # a command is no typo
    assert table.near("/rest") == ("rest", ["reset"])  # aliases count
    assert table.near("/rest", lambda command: command.trust == "untrusted") is None
    assert table.near("/etc/hosts") is None
    assert table.near("no slash") is None


async def test_a_one_edit_typo_gets_a_hint_instead_of_the_model(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        for typo in ("/stauts", "/hepl", "/clera please", "/STAUTS"):
            delivery = await channel.say(typo)
            assert delivery.entry_id is None
        assert channel.texts() == [
            "Unknown command /stauts; did you mean '/status'?",
            "Unknown command /hepl; did you mean '/help'?",
            "Unknown command /clera; did you mean '/clear'?",
            "Unknown command /stauts; did you mean '/status'?",
        ]
        assert router.seen == []  # nothing reached the model
        runtime = runtime_of(delivery)
        assert [e for e in runtime.context.log.iter_forward() if e.type == "message"] == []


async def test_a_slash_word_far_from_every_command_still_goes_to_the_model(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        for text in ("/shrug fine", "/x", "/etc/hosts is a file"):
            await settle(runtime_of(await channel.say(text)))
        assert channel.texts() == ["re: /shrug fine", "re: /x", "re: /etc/hosts is a file"]
        assert router.count("turn") == 3


async def test_addressed_typos_are_ours_only_when_the_message_addresses_this_bot(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(summarizer="off") as th:
        channel = th.channel()
        runtime = runtime_of(await channel.say("/stauts@OtherBot", channel_id="group:5"))
        await settle(runtime)
        assert channel.texts() == ["re: /stauts@OtherBot"]
        await channel.say("/stauts@bot", channel_id="group:5", mentions_self=True, message_id="m9")
        assert channel.sent[-1].text == "Unknown command /stauts; did you mean '/status'?"
        assert channel.sent[-1].reply_to == "m9"
        await channel.say("/hepl@bot")  # a direct chat addresses the bot
        assert channel.texts()[-1] == "Unknown command /hepl; did you mean '/help'?"
        assert router.count("turn") == 1


async def test_a_hint_names_only_commands_the_sender_may_use(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(extra=OWNERS, summarizer="off") as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("/memores", user_id="3")))  # /memories needs trusted
        await channel.say("/memores", user_id="7")
        assert channel.texts() == ["re: /memores", "Unknown command /memores; did you mean '/memories'?"]


async def test_suggest_commands_false_sends_typos_to_the_model(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(extra="suggest_commands: false\n", summarizer="off") as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("/stauts")))
        assert channel.texts() == ["re: /stauts"]
        await channel.say("/status")  # commands still work
        assert channel.texts()[-1].startswith("profile: ana")
