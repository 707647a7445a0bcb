"""A command is answered at once, never queued behind a message still being dispatched (one that joined a
running turn is durable only when the turn's step ends): by polling, which goes on past that message with it
kept in the state file, and by webhook. Plain messages keep their order; restarts lose and repeat nothing."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from ishiki_host.testing import RecordedRequest, Reply, Response, ScriptedCall

from ishiki_channel_telegram.ahead import AHEAD
from ishiki_channel_telegram.state import PollState
from ishiki_channel_telegram.testing import PUBLIC_URL, RecordingHost, entity, group_chat, private_chat, running, user

pytestmark = pytest.mark.anyio

ALICE, BOB = user(42, "Alice"), user(43, "Bob")
GROUP = group_chat(-1001, "Tea lovers")
SID = "telegram:7000000001"
OWNED = 'model: default\nchannels:\n  telegram:7000000001: ["*"]\ntrust: {owners: ["telegram:42"]}\n'
HTTP = f"{{listen: '127.0.0.1:0', public_url: '{PUBLIC_URL}'}}"
ALSO = "also check the kettle"


def _push(server: Any, *texts: str) -> list[dict[str, Any]]:
    """Alice sends ``texts``; returns their updates."""
    for text in texts:
        server.push_message(private_chat(ALICE), text)
    return server.pending[-len(texts) :]


def _state(state_dir: Path) -> dict[str, Any]:
    return json.loads((state_dir / "telegram-offset.json").read_text())


def _held_texts(saved: dict[str, Any]) -> list[str]:
    return [update["message"]["text"] for update in saved.get("held", [])]


def _hanging_model(fake_openai: Any) -> threading.Event:
    """The first turn's model call never answers (until the turn is stopped); later turns are answered. The
    returned event is set once that call came."""
    asked = threading.Event()

    def answer(request: RecordedRequest) -> Reply | Response:
        if not request.json.get("tools"):  # the summarizer's call after a turn, offered no tools
            return Reply("Alice asked about tea.")
        if not asked.is_set():
            asked.set()
            return Response(hang=True)
        return Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["The kettle is fine."]}),))

    fake_openai.default = answer
    return asked


def _facts(root: Path) -> list[dict[str, Any]]:
    home = root / "data" / "runtimes" / "helper" / SID.replace(":", "%3A") / "private%3A42"
    return [json.loads(line) for line in (home / "facts.jsonl").read_text("utf-8").splitlines()]


def _inbound(root: Path) -> list[str]:
    return [e["data"]["source"]["content"] for e in _facts(root) if e["type"] == "message" and e["data"].get("source")]


def _aborted(root: Path) -> list[str]:
    return [e["data"]["reason"] for e in _facts(root) if e["data"].get("name") == "turn.aborted"]


async def _taken(th: Any) -> None:
    """Until the bot's connection handled every update it received (each durable in the host)."""
    (supervisor,) = th.host.channels.supervisors()
    with anyio.fail_after(10):
        await supervisor.connection.settled()


async def _settled(th: Any) -> None:
    """``_taken``, then until no runtime has a turn running or queued."""
    await _taken(th)
    with anyio.fail_after(10):
        for route in th.host.routes:
            for runtime in route.runtimes.values():
                await runtime.settled()


def _sent(server: Any) -> list[str]:
    return [message.text for message in server.sent]


# -- polling, in a real host ---------------------------------------------------------------------------------


async def test_a_stop_in_a_later_batch_is_answered_while_a_message_waits_on_the_turn_and_the_turn_ends_aborted(
    bot_host, telegram_server, fake_openai
):
    asked = _hanging_model(fake_openai)
    async with bot_host(profiles={"helper": OWNED}) as th:
        state_dir = th.root / "data" / "channels" / "telegram" / "0"
        _push(telegram_server, "is the tea ready?")
        assert await anyio.to_thread.run_sync(asked.wait, 10)  # its turn waits for the model
        await _taken(th)
        (also,) = _push(telegram_server, ALSO)  # joins the turn: durable only when the turn's step ends
        await telegram_server.until(lambda: telegram_server.polling_offset == also["update_id"] + 1)
        saved = _state(state_dir)  # polling went on past it: it is in the file, and not confirmed
        assert (saved["offset"], _held_texts(saved)) == (also["update_id"], [ALSO])

        (stop,) = _push(telegram_server, "/stop")  # a later batch
        await telegram_server.until(lambda: "Stopped." in _sent(telegram_server))
        await _settled(th)
    assert _state(state_dir) == {"botId": 7000000001, "offset": stop["update_id"] + 1}  # written behind: at the stop
    assert _aborted(th.root) == ["stopped by telegram:42 (/stop)"]
    assert _inbound(th.root) == ["is the tea ready?", ALSO]  # the held message was appended once the turn ended
    assert _sent(telegram_server).count("Stopped.") == 1


# -- polling: restarts and order, against the test kit's host -------------------------------------------------


@pytest.mark.parametrize("redelivered", [False, True], ids=["telegram-forgot", "telegram-sent-them-again"])
async def test_a_restart_while_a_message_is_held_takes_it_from_the_state_file_and_dispatches_nothing_twice(
    telegram_server, telegram_host, telegram_connection, redelivered
):
    host = telegram_host
    release = host.hold(lambda event: event.content == ALSO)
    (also,) = _push(telegram_server, ALSO)
    async with running(telegram_connection()):
        await host.wait_held(1)
        await telegram_server.until(lambda: telegram_server.polling_offset == also["update_id"] + 1)
        (status,) = _push(telegram_server, "/status")
        (answered,) = await host.wait_for_events(1)  # at once, while the message before it is held
        await telegram_server.until(lambda: telegram_server.polling_offset == status["update_id"] + 1)
    assert answered.content == "/status"
    saved = _state(host.state_dir)  # stopped while it was held: the offset never passed it
    assert (saved["offset"], _held_texts(saved), saved["recent"]) == (None, [ALSO], [status["update_id"]])
    if redelivered:  # the poll that asked past them never reached Telegram: it sends both again
        telegram_server.redeliver(also, status)

    release.set()
    connection = telegram_connection()  # a new process: what it knows of them is in the file
    async with running(connection):
        await host.wait_for_events(2)
        await connection.settled()
        await telegram_server.until(lambda: telegram_server.pending == [])
    assert [event.content for event in host.events] == ["/status", ALSO]
    assert host.dispatch_calls == 2  # each once (the held dispatch, cancelled, never reached the host)
    assert _state(host.state_dir)["offset"] == (status if redelivered else also)["update_id"] + 1
    assert "held" not in _state(host.state_dir)


async def test_plain_messages_keep_their_order_behind_a_held_one_and_only_a_command_goes_ahead(
    telegram_server, telegram_host, telegram_connection
):
    host = telegram_host
    release = host.hold(lambda event: event.content == "one")
    _push(telegram_server, "one")
    connection = telegram_connection()
    async with running(connection):
        await host.wait_held(1)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_001)
        _push(telegram_server, "two", "/etc/hosts is gone")  # a slash word that is no command: a plain message
        other_bot = "/status@OtherBot"  # addressed to another bot: text for the model, in its place
        addressed = [entity(other_bot, other_bot, "bot_command")]
        telegram_server.push_message(GROUP, other_bot, sender=BOB, entities=addressed)
        _push(telegram_server, "/STATUS@IshikiTestBot", "three")
        await host.wait_for_events(1)
        await anyio.wait_all_tasks_blocked()
        assert [event.content for event in host.events] == ["/STATUS@IshikiTestBot"]  # the rest waits for "one"
        release.set()
        await host.wait_for_events(6)
        await connection.settled()
    assert [event.content for event in host.events] == [
        "/STATUS@IshikiTestBot",
        "one",
        "two",
        "/etc/hosts is gone",
        other_bot,
        "three",
    ]
    assert _state(host.state_dir) == {"botId": telegram_server.bot["id"], "offset": 500_006}


async def test_at_most_a_few_commands_go_ahead_at_once_and_the_next_waits_for_a_place(
    telegram_server, telegram_host, telegram_connection
):
    host = telegram_host
    release = host.hold(lambda event: event.content.startswith("/"))
    _push(telegram_server, *["/status"] * (AHEAD + 1))
    async with running(telegram_connection()):
        await host.wait_held(AHEAD)
        await anyio.wait_all_tasks_blocked()
        assert len(host.held) == AHEAD
        assert not telegram_server.polling  # the poll waits with the batch: one command has no place yet
        release.set()
        await host.wait_for_events(AHEAD + 1)
        await telegram_server.until(lambda: telegram_server.polling_offset == 500_000 + AHEAD + 1)


async def test_when_the_state_file_cannot_be_written_polling_waits_for_a_held_message(
    tmp_path, telegram_server, telegram_connection
):
    (tmp_path / "a-file").write_text("not a directory")
    host = RecordingHost(tmp_path / "a-file" / "state")
    release = host.hold(lambda event: event.content == "one")
    (one,) = _push(telegram_server, "one")
    async with running(telegram_connection(host=host)):
        await host.wait_held(1)
        await anyio.wait_all_tasks_blocked()
        assert not telegram_server.polling  # it cannot be kept here: Telegram keeps it until it is durable
        assert telegram_server.pending == [one]
        release.set()
        await telegram_server.until(lambda: telegram_server.polling_offset == one["update_id"] + 1)
    assert [event.content for event in host.events] == ["one"]


def test_held_updates_are_kept_whole_and_a_mangled_list_is_not_used():
    update = {"update_id": 7, "message": {"message_id": 1, "text": "hello"}}
    state = PollState(7, None, 0, (8,), (update,))
    assert PollState.from_json(json.loads(json.dumps(state.to_json(1)))) == state
    assert "held" not in PollState(7).to_json(1)
    with pytest.raises(ValueError, match="'held' is not a list of updates"):
        PollState.from_json({"botId": 1, "offset": 7, "held": [{"message": {}}]})


# -- webhook ----------------------------------------------------------------------------------------------------


async def test_by_webhook_a_command_is_taken_while_a_held_message_waits_and_plain_ones_wait_in_order(
    telegram_server, telegram_webhook_host, telegram_connection
):
    host = telegram_webhook_host
    release = host.hold(lambda event: event.content == ALSO)
    answers: dict[str, int] = {}

    async def post(update: dict[str, Any]) -> None:
        answers[update["message"]["text"]] = (await telegram_server.post_to_webhook(update)).status_code

    async with running(telegram_connection(host=host, mode="webhook")):
        (also, status, cups) = _push(telegram_server, ALSO, "/status", "and the cups")
        async with anyio.create_task_group() as tg:
            tg.start_soon(post, also)
            await host.wait_held(1)
            tg.start_soon(post, cups)  # waits for the one before it
            await post(status)
            assert answers == {"/status": 200}
            assert [event.content for event in host.events] == ["/status"]
            await anyio.wait_all_tasks_blocked()
            assert host.events[1:] == []
            release.set()
        deliveries = await telegram_server.deliver()  # Telegram's own tries: every one was taken already
    assert answers == {ALSO: 200, "/status": 200, "and the cups": 200}
    assert [event.content for event in host.events] == ["/status", ALSO, "and the cups"]
    assert [delivery.status for delivery in deliveries] == [200, 200, 200]
    assert host.dispatch_calls == 3


async def test_by_webhook_a_stop_is_answered_while_a_message_waits_on_the_turn(bot_host, telegram_server, fake_openai):
    asked = _hanging_model(fake_openai)
    async with bot_host(profiles={"helper": OWNED}, mode="webhook", http=HTTP) as th:
        telegram_server.proxy(PUBLIC_URL, th.host.http.base_url)
        _push(telegram_server, "is the tea ready?")
        assert [d.status for d in await telegram_server.deliver()] == [200]
        assert await anyio.to_thread.run_sync(asked.wait, 10)
        _push(telegram_server, ALSO)
        async with anyio.create_task_group() as tg:
            held: list[int] = []

            async def deliver_also() -> None:
                held.extend(d.status for d in await telegram_server.deliver())  # answered once it is durable

            tg.start_soon(deliver_also)
            await anyio.wait_all_tasks_blocked()  # the message waits on the turn
            (stop,) = _push(telegram_server, "/stop")
            answer = await telegram_server.post_to_webhook(stop)
            assert answer.status_code == 200
            assert "Stopped." in _sent(telegram_server)
        assert held == [200]
        again = await telegram_server.deliver()  # Telegram sends the /stop again: recognised, not answered twice
        await _settled(th)
    assert [d.status for d in again] == [200]
    assert _aborted(th.root) == ["stopped by telegram:42 (/stop)"]
    assert _inbound(th.root) == ["is the tea ready?", ALSO]
    assert _sent(telegram_server).count("Stopped.") == 1
