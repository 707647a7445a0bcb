"""The channel in a real host: a profile claiming ``telegram:<bot id>``, the built-in engines, the fake OpenAI
server as the model and the fake Bot API as Telegram. In process (``TestHost``, on the fake clock) for the
conversations and the network going away; ``ishiki run`` in a subprocess for a wrong token and a crash."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from ishiki_host import utf16_len
from ishiki_host.testing import RecordedRequest, Reply, Response, ScriptedCall

from ishiki_channel_telegram.testing import entity, group_chat, private_chat, user

pytestmark = pytest.mark.anyio

ALICE, BOB = user(42, "Alice"), user(43, "Bob")
GROUP = group_chat(-1001, "Tea lovers")
SID = "telegram:7000000001"
LIMIT = 4096


def user_texts(request: RecordedRequest) -> list[str]:
    """What the model was shown of the people's messages, in order."""
    return [str(m["content"]) for m in request.json["messages"] if m["role"] == "user"]


def send(*messages: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall("send_message", {"messages": list(messages)}),))


def answer_by(server: Any, answer: Callable[[str], Reply | Response]) -> None:
    """Every model call is answered by ``answer(the newest user text)``."""
    server.default = lambda request: answer(user_texts(request)[-1])


def facts(root: Path, channel: str) -> list[dict[str, Any]]:
    """The fact log of the helper's runtime in ``channel``, read from its file."""
    home = root / "data" / "runtimes" / "helper" / SID.replace(":", "%3A") / channel.replace(":", "%3A")
    return [json.loads(line) for line in (home / "facts.jsonl").read_text("utf-8").splitlines()]


def inbound_entries(root: Path, channel: str) -> list[dict[str, Any]]:
    """The inbound messages of the helper's runtime in ``channel``."""
    return [e for e in facts(root, channel) if e["type"] == "message" and e["data"].get("source")]


def turns_in(root: Path, channel: str) -> int:
    """How many turns the helper's runtime in ``channel`` started."""
    return sum(1 for e in facts(root, channel) if e["data"].get("name") == "turn.start")


async def taken(th: Any) -> None:
    """Until the bot's connection has handled every update it received (durable in the host): Telegram is told
    to forget an update while it is still being dispatched, so its ``pending`` going empty is not that."""
    (supervisor,) = th.host.channels.supervisors()
    with anyio.fail_after(10):
        await supervisor.connection.settled()


async def settled(th: Any) -> None:
    """Until every runtime of the host has no turn running or queued."""
    with anyio.fail_after(10):
        for route in th.host.routes:
            for runtime in route.runtimes.values():
                await runtime.settled()


async def test_a_direct_message_is_answered_in_its_chat(bot_host, telegram_server, fake_openai):
    answer_by(fake_openai, lambda text: send("Hello Alice! Tea is ready."))
    async with bot_host() as th:
        telegram_server.push_message(private_chat(ALICE), "hello bot, is the tea ready?")
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
    (sent,) = telegram_server.sent
    assert (sent.chat_id, sent.text) == (42, "Hello Alice! Tea is ready.")
    assert "hello bot, is the tea ready?" in user_texts(fake_openai.last_request)[-1]
    assert (42, "typing") in telegram_server.actions  # shown while the turn ran


async def test_a_group_message_without_a_mention_is_recorded_and_not_answered(bot_host, telegram_server, fake_openai):
    answer_by(fake_openai, lambda text: send("They are on the shelf, Bob."))
    async with bot_host() as th:
        telegram_server.push_message(GROUP, "has anyone seen the keys?", sender=ALICE)
        question = "@IshikiTestBot have you?"
        telegram_server.push_message(
            GROUP, question, sender=BOB, entities=[entity(question, "@IshikiTestBot", "mention")]
        )
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
    root = th.root
    assert [e["data"]["source"]["content"] for e in inbound_entries(root, "group:-1001")] == [
        "has anyone seen the keys?",
        question,
    ]
    assert turns_in(root, "group:-1001") == 1  # the mention only
    shown = "\n".join(user_texts(fake_openai.last_request))
    assert "has anyone seen the keys?" in shown  # the persona saw what was said before it was asked
    assert telegram_server.sent[0].text == "They are on the shelf, Bob."


async def test_a_group_that_needs_no_mention_is_answered_without_one(bot_host, telegram_server, fake_openai):
    answer_by(fake_openai, lambda text: send("I heard you."))
    async with bot_host(chats="{'group:-1001': {mention_required: false}}") as th:
        telegram_server.push_message(GROUP, "anyone for tea?", sender=ALICE)
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
    assert telegram_server.sent[0].chat_id == -1001


async def test_a_9000_character_reply_arrives_as_three_messages_within_the_limit(
    bot_host, telegram_server, fake_openai
):
    paragraphs = [f"Paragraph {n}: " + "tea leaves and steam " * 20 for n in range(21)]
    long_reply = "\n\n".join(paragraphs)[:9000]
    assert len(long_reply) == 9000
    answer_by(fake_openai, lambda text: send(long_reply))
    async with bot_host() as th:
        telegram_server.push_message(private_chat(ALICE), "tell me everything about tea")
        await telegram_server.until(lambda: len(telegram_server.sent) == 3)
        await settled(th)
    sent = telegram_server.sent
    assert len(sent) == 3
    assert all(utf16_len(message.text) <= LIMIT for message in sent)
    assert " ".join(m.text for m in sent).split() == long_reply.split()  # nothing lost at the cuts
    assert all(message.chat_id == 42 for message in sent)


async def test_an_edit_gets_no_second_answer(bot_host, telegram_server, fake_openai):
    answer_by(fake_openai, lambda text: send("Yes, it is."))
    async with bot_host() as th:
        message = telegram_server.push_message(private_chat(ALICE), "is teh tea ready?")
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
        telegram_server.edit_message(message, "is the tea ready?")
        edit = telegram_server.pending[-1]
        await telegram_server.until(lambda: telegram_server.confirmed > edit["update_id"])
        await taken(th)
        await settled(th)
    entries = inbound_entries(th.root, "private:42")
    assert [e["data"]["source"]["content"] for e in entries] == ["is teh tea ready?", "is the tea ready?"]
    assert "editedAt" in entries[1]["data"]["source"]["extra"]
    assert len(telegram_server.sent) == 1
    assert turns_in(th.root, "private:42") == 1


async def test_an_attachment_is_read_by_the_model_through_the_hosts_fetchers(bot_host, telegram_server, fake_openai):
    recipe = telegram_server.add_file(b"Green tea: 80 degrees, two minutes.\n")
    seen: dict[str, str] = {}

    def answer(request: RecordedRequest) -> Reply:
        messages = request.json["messages"]
        if not request.json.get("tools"):  # the summarizer's call after the turn, offered no tools
            return Reply("Alice asked how hot to brew green tea.")
        if messages[-1]["role"] == "tool":
            seen["result"] = str(messages[-1]["content"])
            return send("Eighty degrees, two minutes.")
        (url,) = set(re.findall(r"asset://[^\s\"'\])]+", json.dumps(messages)))
        seen["url"] = url
        return Reply(tool_calls=(ScriptedCall("read", {"url": url}),))

    fake_openai.default = answer
    async with bot_host() as th:
        telegram_server.push_message(
            private_chat(ALICE), caption="how hot?", document=recipe.as_document("recipe.txt", "text/plain")
        )
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
    assert "Green tea: 80 degrees, two minutes." in seen["result"]
    assert telegram_server.downloads == [recipe.path]  # fetched once, on the read, through getFile
    assert telegram_server.sent[0].text == "Eighty degrees, two minutes."


async def test_the_network_gone_for_minutes_then_back_loses_nothing(
    bot_host, telegram_server, fake_openai, fake_clock, caplog
):
    caplog.set_level(logging.INFO, logger="ishiki_host.channels.telegram")
    answer_by(fake_openai, lambda text: send(f"got: {text.split()[-1]}"))

    def failed_polls() -> int:
        return sum(1 for call in telegram_server.calls if call.method == "getUpdates" and not call.ok)

    async with bot_host() as th:
        await telegram_server.until(lambda: telegram_server.polling)
        with anyio.fail_after(5):
            await th.host.heartbeats.scheduler.settled()  # its timer armed: it sleeps through the outage
        awake = fake_clock.sleepers  # the host's own sleepers, while the channel waits on its long poll
        telegram_server.offline = True  # cuts the long poll in progress, and every request after it
        gone, failures = fake_clock.now(), failed_polls() + 1
        while fake_clock.now() - gone < 240:
            await telegram_server.until(lambda n=failures: failed_polls() == n)  # one more try failed...
            with anyio.fail_after(5):
                await fake_clock.wait_for_sleepers(awake + 1)  # ...and the channel backs off
            late = {60: "are you there?", 180: "hello??"}  # sent meanwhile: Telegram keeps them
            for at, text in late.items():
                if at <= fake_clock.now() - gone < at + 30:
                    telegram_server.push_message(private_chat(ALICE), text)
            await fake_clock.advance(30)  # the longest back-off of the account: it tries again
            failures += 1
        assert telegram_server.sent == []
        telegram_server.offline = False
        await fake_clock.advance(30)
        await telegram_server.until(lambda: telegram_server.pending == [] and len(telegram_server.sent) >= 1)
        await taken(th)
        await settled(th)
    contents = [e["data"]["source"]["content"] for e in inbound_entries(th.root, "private:42")]
    assert contents == ["are you there?", "hello??"]
    assert telegram_server.sent[-1].text == "got: hello??"  # answered once the network was back
    logged = [r.getMessage() for r in caplog.records if r.name == "ishiki_host.channels.telegram"]
    assert sum("cannot be reached" in line for line in logged) == 1  # one warning for the whole outage
    assert sum("polling resumed" in line for line in logged) == 1


async def test_a_bot_api_unreachable_at_start_is_retried_until_it_answers(
    bot_host, telegram_server, fake_openai, fake_clock, caplog
):
    caplog.set_level(logging.INFO, logger="ishiki_host.channels")
    answer_by(fake_openai, lambda text: send("back"))
    telegram_server.offline = True
    async with bot_host(startup_timeout=0.1) as th:  # getMe gives up at once: TelegramUnavailable
        (supervisor,) = th.host.channels.supervisors()
        assert supervisor.state == "waiting"
        assert "TelegramUnavailable" in (supervisor.last_error or "")
        telegram_server.offline = False
        await fake_clock.advance(60)  # the host's back-off before restarting the channel
        await telegram_server.until(lambda: telegram_server.polling)
        assert supervisor.state == "running"
        telegram_server.push_message(private_chat(ALICE), "hi")
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert failures == []  # a passing trouble: warnings only, never "failed (not restarted)"


# -- `ishiki run` in a subprocess -------------------------------------------------------------------------------

CONSOLE = 'model: default\nchannels:\n  console:local: ["*"]\n'


async def test_a_wrong_token_is_one_clear_error_and_the_console_still_answers(
    bot_config, telegram_server, fake_openai, tmp_path
):
    import os
    import sys

    answer_by(fake_openai, lambda text: send(f"console says: {text.split()[-1]}"))
    root = bot_config(profiles={"helper": 'model: default\nchannels:\n  telegram:7000000001: ["*"]\n', "desk": CONSOLE})
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL")}
    env["TELEGRAM_BOT_TOKEN"] = "7000000001:AAwrongSecretWrongSecretWrongSecret_99"
    ishiki = str(Path(sys.executable).parent / "ishiki")
    with anyio.fail_after(60):
        done = await anyio.run_process([ishiki, "run", str(root)], input=b"hello\n", env=env, check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert (done.returncode, out) == (0, "console says: hello\n"), err
    refused = [line for line in err.splitlines() if "refused the token" in line]
    assert len(refused) == 1, err
    assert "telegram account 'helper'" in refused[0]
    assert "check channels.telegram.accounts[].token" in refused[0]
    assert "Traceback" not in err
    assert "AAwrongSecret" not in err  # never the token
    assert telegram_server.count("getMe") == 1  # not retried


async def test_a_crash_between_durable_and_confirmed_loses_nothing_and_answers_once(
    bot_config, telegram_server, fake_openai, ishiki
):
    root = bot_config()
    offset_file = root / "data" / "channels" / "telegram" / "0" / "telegram-offset.json"
    asked = threading.Event()
    hangs = [True]

    def answer(text: str) -> Reply | Response:
        if "weather" not in text:
            return send("Good morning!")
        if hangs:  # the first time: the process is killed while the model thinks
            hangs.pop()
            asked.set()
            return Response(hang=True)
        return send("Sunny, 24 degrees.")

    answer_by(fake_openai, answer)
    first = await ishiki(root).start()
    await telegram_server.until(lambda: telegram_server.polling, deadline=60)
    telegram_server.push_message(private_chat(ALICE), "good morning")
    await telegram_server.until(lambda: len(telegram_server.sent) == 1, deadline=30)

    telegram_server.push_message(private_chat(ALICE), "what is the weather?")
    weather = telegram_server.pending[-1]
    assert await anyio.to_thread.run_sync(asked.wait, 30)  # durable in the log, its turn asking the model
    await first.kill()
    # The crash came before the new offset reached the disk and Telegram: both still hold the one before it.
    assert json.loads(offset_file.read_text())["offset"] >= weather["update_id"]
    offset_file.write_text(json.dumps({"botId": 7000000001, "offset": weather["update_id"]}))
    telegram_server.redeliver(weather)

    second = await ishiki(root).start()
    try:
        await telegram_server.until(lambda: len(telegram_server.sent) == 2, deadline=60)
    except TimeoutError:
        pytest.fail(f"no answer after the restart:\n{second.stderr()}\n{facts(root, 'private:42')}")
    await telegram_server.until(lambda: telegram_server.confirmed > weather["update_id"], deadline=30)
    assert await second.stop() == 0
    assert [m.text for m in telegram_server.sent] == ["Good morning!", "Sunny, 24 degrees."]
    contents = [e["data"]["source"]["content"] for e in inbound_entries(root, "private:42")]
    assert contents == ["good morning", "what is the weather?"]  # the redelivered update was not taken again
    assert "was taken before; ignored" in second.stderr()
    assert json.loads(offset_file.read_text())["offset"] == weather["update_id"] + 1


# -- what must never stall the bot ----------------------------------------------------------------------------

HALF_EMOJI = "\ud83d"  # the first half of a surrogate pair, as a JavaScript client sends a cut emoji


async def test_half_an_emoji_is_answered_and_does_not_hold_back_the_next_message(
    bot_host, telegram_server, fake_openai
):
    answer_by(fake_openai, lambda text: send(f"got: {text.split()[-1]}"))
    async with bot_host() as th:
        telegram_server.push_message(private_chat(ALICE), f"look {HALF_EMOJI} cut")
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        telegram_server.push_message(private_chat(ALICE), "and this")
        await telegram_server.until(lambda: len(telegram_server.sent) == 2)
        await telegram_server.until(lambda: telegram_server.pending == [])
        await settled(th)
    assert [m.text for m in telegram_server.sent] == ["got: cut", "got: this"]
    contents = [e["data"]["source"]["content"] for e in inbound_entries(th.root, "private:42")]
    assert contents == ["look \ufffd cut", "and this"]


async def test_a_poison_update_is_set_aside_after_its_tries_across_a_restart_and_the_next_ones_answered(
    bot_config, telegram_server, fake_openai, fake_clock, caplog
):
    from ishiki_host.testing import TestHost

    answer_by(fake_openai, lambda text: send(f"got: {text.split()[-1]}"))
    root = bot_config()
    # The runtime of Mallory's chat can never start: a file stands where its directory must be.
    chats = root / "data" / "runtimes" / "helper" / SID.replace(":", "%3A")
    chats.mkdir(parents=True)
    (chats / "private%3A666").write_text("in the way")
    env = {"TELEGRAM_BOT_TOKEN": telegram_server.token}

    async def fails_once_more(th, awake):
        """Until the poison's next try failed and the channel backs off (one sleeper more than the host's own)."""
        with anyio.fail_after(10):
            await th.host.heartbeats.scheduler.settled()
            await fake_clock.wait_for_sleepers(awake + 1)
        return th.host.status()["channels"]["telegram#0"]["connection"]

    async with TestHost(root, clock=fake_clock, env=env) as th:
        await telegram_server.until(lambda: telegram_server.polling)
        with anyio.fail_after(5):
            await th.host.heartbeats.scheduler.settled()
        awake = fake_clock.sleepers  # the host's own, while the channel waits on its long poll
        telegram_server.push_message(private_chat(user(666, "Mallory")), "poison")
        telegram_server.push_message(private_chat(ALICE), "hello one")
        status = await fails_once_more(th, awake)
        assert status["failing"] == {"updateId": 500_000, "tries": 1}
    assert telegram_server.sent == []  # the update after it waits: it may still be taken

    async with TestHost(root, clock=fake_clock, env=env) as th:  # a restart: the count goes on
        status = await fails_once_more(th, awake)
        assert status["failing"] == {"updateId": 500_000, "tries": 2}
        await fake_clock.advance(30)  # the account's longest back-off: the third and last try
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        telegram_server.push_message(private_chat(ALICE), "hello two")
        await telegram_server.until(lambda: len(telegram_server.sent) == 2)
        await settled(th)
        status = th.host.status()["channels"]["telegram#0"]["connection"]
    assert [m.text for m in telegram_server.sent] == ["got: one", "got: two"]
    assert (status["setAside"], status["failing"], status["lastSetAside"]["updateId"]) == (1, None, 500_000)
    set_aside = [r.getMessage() for r in caplog.records if "set aside update" in r.getMessage()]
    assert len(set_aside) == 1
    assert "set aside update 500000: 3 tries failed" in set_aside[0]

    async with TestHost(root, clock=fake_clock, env=env) as th:  # and it stays set aside
        await telegram_server.until(lambda: telegram_server.polling)
        assert th.host.status()["channels"]["telegram#0"]["connection"]["setAside"] == 1
    assert telegram_server.pending == []
    assert len([r for r in caplog.records if "set aside update" in r.getMessage()]) == 1


async def test_a_quiet_bot_keeps_answering_when_telegram_renumbers_its_updates(
    bot_host, telegram_server, fake_openai, caplog
):
    answer_by(fake_openai, lambda text: send(f"got: {text.split()[-1]}"))
    async with bot_host() as th:
        telegram_server.push_message(private_chat(ALICE), "hello one")
        await telegram_server.until(lambda: len(telegram_server.sent) == 1)
        await settled(th)
        telegram_server.renumber(4_242)  # a week without updates: the next id is chosen at random, lower
        telegram_server.push_message(private_chat(ALICE), "hello two")
        await telegram_server.until(lambda: len(telegram_server.sent) == 2)
        await settled(th)
        telegram_server.push_message(private_chat(ALICE), "hello three")
        await telegram_server.until(lambda: len(telegram_server.sent) == 3)
        await telegram_server.until(lambda: telegram_server.polling_offset == 4_244)
        await settled(th)
    assert [m.text for m in telegram_server.sent] == ["got: one", "got: two", "got: three"]
    assert sum("update ids went backwards" in r.getMessage() for r in caplog.records) == 1


async def test_an_unset_token_never_starts_the_channel_its_profile_waits_and_the_console_answers(
    bot_config, telegram_server, fake_openai
):
    import os
    import sys

    answer_by(fake_openai, lambda text: send(f"console says: {text.split()[-1]}"))
    root = bot_config(profiles={"helper": 'model: default\nchannels:\n  telegram:7000000001: ["*"]\n', "desk": CONSOLE})
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL")}
    env.pop("TELEGRAM_BOT_TOKEN", None)
    ishiki = str(Path(sys.executable).parent / "ishiki")
    with anyio.fail_after(60):
        checked = await anyio.run_process([ishiki, "check", str(root)], env=env, check=False)
        done = await anyio.run_process([ishiki, "run", str(root)], input=b"hello\n", env=env, check=False)
    report = checked.stdout.decode()
    assert checked.returncode == 1
    assert "helper  waiting  missing channels.telegram.accounts[0] (invalid in ishiki.yaml)" in report
    assert "ishiki.yaml:6: channels.telegram.accounts[0].token: environment variable TELEGRAM_BOT_TOKEN is not set" in (
        report
    )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert (done.returncode, out) == (0, "console says: hello\n"), err
    assert "profile helper waits for channels.telegram.accounts[0] (invalid in ishiki.yaml)" in err
    assert "environment variable TELEGRAM_BOT_TOKEN is not set" in err
    assert "Traceback" not in err
    assert "telegram#0" not in err  # never started, so never restarting
    assert telegram_server.calls == []
