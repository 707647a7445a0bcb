"""Exactly once: an event taken is remembered on disk, so the same event after a restart (a replay, a repost) is
not dispatched again; one set aside is remembered too; the file keeps the newest keys and survives a bad line."""

from __future__ import annotations

import logging

import pytest
from ishiki_host.errors import EventRejected

from ishiki_channel_onebot.seen import SEEN_FILE, SeenEvents
from ishiki_channel_onebot.testing import running

pytestmark = pytest.mark.anyio


async def test_an_event_replayed_after_a_restart_is_not_dispatched_twice(onebot, onebot_host, onebot_connection):
    first = onebot_connection()
    async with running(first):
        await first.linked()
        frame = await onebot.push_private(20001, "only once")
        await onebot_host.wait_for_events(1)
        await first.settled()  # taken: durable, and its key remembered
    second = onebot_connection()
    async with running(second):
        await second.linked()
        await onebot.push(frame)
        await onebot.push_private(20001, "and then this")
        await onebot_host.wait_for_events(2)
        status = second.status()
    assert [e.content for e in onebot_host.events] == ["only once", "and then this"]
    assert status["repeats"] == 1
    assert (onebot_host.state_dir / SEEN_FILE).is_file()


async def test_an_event_the_host_rejects_is_set_aside_once_and_the_next_flows(onebot, onebot_host, onebot_connection):
    connection = onebot_connection()
    async with running(connection):
        await connection.linked()
        onebot_host.fail_next(EventRejected("no"))
        poison = await onebot.push_private(20001, "poison")
        await onebot.push_private(20001, "fine")
        await onebot_host.wait_for_events(1)
        await onebot.push(poison)
        await onebot.push_private(20001, "after")  # frames are taken in order: the repeat came before it
        await onebot_host.wait_for_events(2)
        status = connection.status()
    assert [e.content for e in onebot_host.events] == ["fine", "after"]
    assert status["setAside"] == 1
    assert status["repeats"] == 1
    assert "the host rejected it" in status["lastSetAside"]["why"]


async def test_the_file_keeps_the_newest_keys_and_skips_a_bad_line(tmp_path):
    log = logging.getLogger("test")
    seen = SeenEvents(tmp_path, logger=log, limit=3)
    for n in range(7):
        seen.add(f"message.created/private:1/{n}")
    await seen.flush()
    with (tmp_path / SEEN_FILE).open("a", encoding="utf-8") as out:
        out.write("{torn\n")
    again = SeenEvents(tmp_path, logger=log, limit=3)
    await again.load()
    assert [f"message.created/private:1/{n}" in again for n in range(7)] == [False] * 4 + [True] * 3
    lines = (tmp_path / SEEN_FILE).read_text("utf-8").splitlines()
    assert len(lines) == 4  # rewritten at twice the limit: the newest 3, then the torn line
