"""Exactly once: a notification is answered 200 only once each of its messages is durable in the host, set aside,
or a repeat; Meta's redelivery of one it already took (restarts included) is never dispatched again."""

from __future__ import annotations

import json
import logging

import pytest
from ishiki_host.errors import ChannelUnavailable, EventRejected

from ishiki_channel_whatsapp.testing import notification, running, text_message

pytestmark = pytest.mark.anyio

ALICE = "4915112345678"


def aside_lines(host):
    path = host.state_dir / "whatsapp-set-aside.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()] if path.exists() else []


async def test_a_message_is_answered_200_only_once_it_is_durable(running_connection, whatsapp_host):
    seen_durable = []
    whatsapp_host.on_recorded = lambda event: seen_durable.append(event.message_id)
    async with running_connection() as (_connection, driver):
        answer, (wamid,) = await driver.text(ALICE, "hello")
    assert answer.status_code == 200
    assert seen_durable == [wamid]  # recorded before the answer came back


async def test_a_host_that_cannot_take_input_now_gets_a_503_and_the_redelivery_is_taken(
    running_connection, whatsapp_host, caplog
):
    whatsapp_host.fail_next(ChannelUnavailable("the host is stopping"))
    body = notification(messages=[text_message(ALICE, "are you there?")])
    async with running_connection() as (connection, driver):
        first = await driver.post(body)
        assert whatsapp_host.events == []
        again = await driver.post(body)  # Meta delivers it again
        status_ = connection.status()
    assert (first.status_code, again.status_code) == (503, 200)
    assert [e.content for e in whatsapp_host.events] == ["are you there?"]
    assert status_["failing"] == {}  # a passing trouble of the host is not counted against the message
    assert any("cannot take message" in r.getMessage() for r in caplog.records)


async def test_a_redelivered_message_is_not_dispatched_again(running_connection, whatsapp_host):
    body = notification(messages=[text_message(ALICE, "once")])
    async with running_connection() as (_connection, driver):
        answers = [(await driver.post(body)).status_code for _ in range(3)]
    assert answers == [200, 200, 200]
    assert whatsapp_host.dispatches == 1


async def test_a_redelivery_days_later_after_a_restart_is_not_dispatched_again(
    whatsapp_connection, whatsapp_driver, whatsapp_host, fake_clock
):
    body = notification(messages=[text_message(ALICE, "once")])
    first = whatsapp_connection()
    async with running(first):
        assert (await whatsapp_driver(first).post(body)).status_code == 200
    await fake_clock.advance(3 * 86_400)
    second = whatsapp_connection()  # a new process: only the state directory is the same
    async with running(second):
        assert (await whatsapp_driver(second).post(body)).status_code == 200
    assert whatsapp_host.dispatches == 1


async def test_ids_are_forgotten_after_eight_days(whatsapp_connection, whatsapp_driver, whatsapp_host, fake_clock):
    body = notification(messages=[text_message(ALICE, "old")])
    first = whatsapp_connection()
    async with running(first):
        await whatsapp_driver(first).post(body)
    await fake_clock.advance(9 * 86_400)  # Meta stopped redelivering after seven days
    second = whatsapp_connection()
    async with running(second):
        await whatsapp_driver(second).post(body)
    assert whatsapp_host.dispatches == 2
    lines = (whatsapp_host.state_dir / "whatsapp-seen.jsonl").read_text().splitlines()
    assert len(lines) == 1  # the expired id was dropped from the file at the second start


async def test_in_a_batch_the_messages_taken_are_not_taken_again_when_the_rest_comes_back(
    running_connection, whatsapp_host
):
    body = notification(messages=[text_message(ALICE, "one"), text_message(ALICE, "two"), text_message(ALICE, "three")])
    calls = []

    def second_fails_once(event):
        calls.append(event.content)
        if calls == ["one", "two"]:
            raise ChannelUnavailable("disk full")

    whatsapp_host.on_dispatch = second_fails_once
    async with running_connection() as (_connection, driver):
        first = await driver.post(body)
        again = await driver.post(body)
    assert (first.status_code, again.status_code) == (503, 200)
    assert [e.content for e in whatsapp_host.events] == ["one", "two", "three"]
    assert calls == ["one", "two", "two", "three"]


async def test_a_message_the_host_rejects_is_set_aside_at_once(running_connection, whatsapp_host, caplog):
    whatsapp_host.fail_next(EventRejected("not for us"))
    body = notification(messages=[text_message(ALICE, "rejected"), text_message(ALICE, "next")])
    async with running_connection() as (connection, driver):
        answer = await driver.post(body)
        again = await driver.post(body)
        status_ = connection.status()
    assert (answer.status_code, again.status_code) == (200, 200)
    assert [e.content for e in whatsapp_host.events] == ["next"]
    assert whatsapp_host.dispatches == 2  # the redelivery dispatched neither
    assert status_["setAside"] == 1
    wamid = body["entry"][0]["changes"][0]["value"]["messages"][0]["id"]
    assert status_["lastSetAside"] == {"updateId": wamid, "why": "the host rejected it (not for us)"}
    (kept,) = aside_lines(whatsapp_host)
    assert (kept["messageId"], kept["input"]["text"]["body"]) == (wamid, "rejected")
    (logged,) = [r for r in caplog.records if "set aside message" in r.getMessage()]
    assert logged.levelno == logging.ERROR


def _poison(event):
    if event.content == "poison":
        raise RuntimeError("the host chokes on this one")


async def test_a_poison_message_gets_503_until_its_last_try_then_is_set_aside_across_restarts(
    whatsapp_connection, whatsapp_driver, whatsapp_host
):
    whatsapp_host.on_dispatch = _poison
    body = notification(messages=[text_message(ALICE, "poison"), text_message(ALICE, "after")])
    wamid = body["entry"][0]["changes"][0]["value"]["messages"][0]["id"]
    first = whatsapp_connection(dispatch_tries=3)
    async with running(first):
        answer = await whatsapp_driver(first).post(body)
        assert answer.status_code == 503
        assert first.status()["failing"] == {wamid: 1}
    second = whatsapp_connection(dispatch_tries=3)  # a restart: the count goes on
    async with running(second):
        driver = whatsapp_driver(second)
        assert (await driver.post(body)).status_code == 503
        assert second.status()["failing"] == {wamid: 2}
        assert (await driver.post(body)).status_code == 200  # the third try fails: set aside, the rest flows
        status_ = second.status()
    assert [e.content for e in whatsapp_host.events] == ["after"]
    assert (status_["setAside"], status_["failing"]) == (1, {})
    assert "3 tries failed, the last with RuntimeError: the host chokes on this one" in status_["lastSetAside"]["why"]
    third = whatsapp_connection()
    async with running(third):
        assert (await whatsapp_driver(third).post(body)).status_code == 200  # and stays set aside
        assert third.status()["setAside"] == 1
    assert len(aside_lines(whatsapp_host)) == 1


async def test_a_malformed_message_is_set_aside_and_the_others_of_its_notification_taken(
    running_connection, whatsapp_host, caplog
):
    broken = {"id": "wamid.BROKEN", "type": "text", "text": {"body": "no sender"}, "timestamp": "1700000000"}
    async with running_connection() as (connection, driver):
        answer = await driver.post(notification(messages=[broken, text_message(ALICE, "fine")]))
        status_ = connection.status()
    assert answer.status_code == 200
    assert [e.content for e in whatsapp_host.events] == ["fine"]
    assert status_["setAside"] == 1
    assert "malformed message: message.from is missing" in status_["lastSetAside"]["why"]
    (logged,) = [r for r in caplog.records if "set aside message wamid.BROKEN" in r.getMessage()]
    assert logged.levelno == logging.WARNING


async def test_a_message_this_number_sent_is_never_dispatched(running_connection, whatsapp_host, whatsapp_graph):
    async with running_connection() as (connection, driver):
        result = await connection.send(f"private:{ALICE}", "from us")
        (ours,) = result.ids
        echo = text_message(ALICE, "from us", message_id=ours)
        answer, _ = await driver.messages(echo)
    assert answer.status_code == 200
    assert whatsapp_host.dispatches == 0


async def test_the_state_files_survive_a_mangled_copy(whatsapp_connection, whatsapp_driver, whatsapp_host, caplog):
    whatsapp_host.state_dir.mkdir(parents=True)
    (whatsapp_host.state_dir / "whatsapp-state.json").write_text("{not json")
    (whatsapp_host.state_dir / "whatsapp-seen.jsonl").write_text('garbage\n{"id": 5}\n')
    connection = whatsapp_connection()
    async with running(connection):
        answer, _ = await whatsapp_driver(connection).text(ALICE, "still works")
    assert answer.status_code == 200
    assert [e.content for e in whatsapp_host.events] == ["still works"]
    assert (whatsapp_host.state_dir / "whatsapp-state.json.bad").exists()
