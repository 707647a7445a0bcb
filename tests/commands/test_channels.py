"""``/channels`` and the channel switch on a real Host: while an account is switched off for a profile, nothing
said there is answered or stored, except ``/channels`` from a trusted sender; other accounts and other
profiles are not affected; the switch is live both ways."""

from __future__ import annotations

import anyio
import pytest

from ishiki_host.testing import FakeOpenAIServer, TestHost, profile_yaml
from ishiki_host.testing.host import host_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

HANG = 20.0
OWNER, STRANGER = "1", "2"
TWO_ACCOUNTS = host_yaml("[{self_id: bot}, {self_id: other}]")
ANA = profile_yaml("fake:bot: ['*']\nfake:other: ['*']", extra="trust: {owners: ['fake:1']}\n")


async def say(th: TestHost, text: str, *, user: str = OWNER, sid: str = "fake:bot") -> None:
    delivery = await th.channel(sid).say(text, user_id=user)
    with anyio.fail_after(HANG):
        await delivery.settled()


async def inbound_texts(th: TestHost, sid: str = "fake:bot") -> list[str]:
    runtime = await th.host.runtime_for("ana", sid, "private:1")
    return [e.data["parts"][0]["text"] for e in runtime.context.log.iter_forward() if e.data.get("role") == "user"]


async def test_a_channel_switched_off_neither_answers_nor_stores_until_switched_on(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    async with make_host(profiles={"ana": ANA}, host=TWO_ACCOUNTS) as th:
        bot = th.channel("fake:bot")
        await say(th, "/channels")
        assert bot.texts()[-1] == "Channels:\n- fake:bot: on (here)\n- fake:other: on"
        await say(th, "/channels disable here")
        assert bot.texts()[-1].startswith("Turned channel fake:bot off for ana: from the next message it neither")
        sent, calls = len(bot.sent), len(fake_openai.requests)

        await say(th, "hello, anyone?")
        await say(th, "I am not trusted", user=STRANGER)
        await say(th, "/help")  # another command of the owner's: no answer either
        await say(th, "/channels", user=STRANGER)  # below its level: silence, not a refusal
        assert (len(bot.sent), len(fake_openai.requests)) == (sent, calls)
        assert await inbound_texts(th) == []

        await say(th, "still here?", sid="fake:other")  # another account of the same profile still answers
        assert th.channel("fake:other").texts() == ["ok"]

        await say(th, "/channels")  # the owner may still look, and switch it back on where it is off
        assert bot.texts()[-1] == "Channels:\n- fake:bot: off (here)\n- fake:other: on"
        await say(th, "/channels enable FAKE:BOT")
        assert bot.texts()[-1] == "Turned channel fake:bot on for ana; it answers there from the next message."
        await say(th, "hello again")
        assert bot.texts()[-1] == "ok"
        assert await inbound_texts(th) == ["hello again"]


async def test_a_switch_is_per_profile_and_names_a_channel_of_the_profile(make_host: MakeHost) -> None:
    profiles = {
        "ana": profile_yaml("fake:bot: ['private:1']", extra="trust: {owners: ['fake:1']}\n"),
        "bo": profile_yaml("fake:bot: ['private:2']"),
    }
    async with make_host(profiles=profiles) as th:
        bot = th.channel()
        await say(th, "/channels disable fake:bot")
        delivery = await bot.say("hi bo", channel_id="private:2", user_id="2")
        with anyio.fail_after(HANG):
            await delivery.settled()
        assert bot.texts("private:2") == ["ok"]  # bo's own switch is untouched
        await say(th, "/channels enable telegram:9")
        await say(th, "/channels switch fake:bot")
        await say(th, "/channels enable fake:bot")
        replies = bot.texts("private:1")
    usage = "Usage: /channels [enable|disable NAME|here]"
    assert replies[-3:] == [
        f"No channel 'telegram:9' in this profile; /channels lists them.\n{usage}",
        f"Say /channels enable NAME|here or /channels disable NAME|here.\n{usage}",
        "Turned channel fake:bot on for ana; it answers there from the next message.",
    ]
