"""What an account keeps on disk: the ids taken (``SeenIds``) and the tally of its trouble (``StateStore``)."""

from __future__ import annotations

import json
import logging

import pytest

from ishiki_channel_whatsapp.seen import SeenIds
from ishiki_channel_whatsapp.state import AccountState, StateStore

pytestmark = pytest.mark.anyio
LOG = logging.getLogger("test")


async def test_seen_ids_are_remembered_across_loads(tmp_path, fake_clock):
    seen = SeenIds(tmp_path, clock=fake_clock, logger=LOG)
    await seen.load()
    await seen.add("wamid.A")
    again = SeenIds(tmp_path, clock=fake_clock, logger=LOG)
    await again.load()
    assert "wamid.A" in again
    assert "wamid.B" not in again


async def test_the_seen_file_is_compacted_as_it_grows(tmp_path, fake_clock):
    seen = SeenIds(tmp_path, clock=fake_clock, logger=LOG, keep_seconds=100, limit=5)
    await seen.load()
    for n in range(4):
        await seen.add(f"wamid.OLD{n}")
    await fake_clock.advance(200)
    await seen.add("wamid.NEW")  # the fifth line: the file is rewritten without what expired
    lines = [json.loads(line) for line in seen.path.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["wamid.NEW"]
    assert len(seen) == 1


async def test_unreadable_lines_of_the_seen_file_are_skipped(tmp_path, fake_clock):
    (tmp_path / "whatsapp-seen.jsonl").write_text(
        f'{{"id": "wamid.A", "at": {fake_clock.now()}}}\nnot json\n[1]\n{{"id": 5, "at": 1}}\n\xff\n'
    )
    seen = SeenIds(tmp_path, clock=fake_clock, logger=LOG)
    await seen.load()
    assert "wamid.A" in seen
    assert len(seen) == 1
    assert len(seen.path.read_text().splitlines()) == 1


async def test_the_state_round_trips(tmp_path):
    store = StateStore(tmp_path, "whatsapp:1", logger=LOG)
    state = AccountState(set_aside=2, last_set_aside={"updateId": "wamid.X", "why": "rejected"})
    state.failing["wamid.Y"] = 1
    await store.save(state)
    loaded = await store.load()
    assert (loaded.set_aside, loaded.last_set_aside, dict(loaded.failing)) == (2, state.last_set_aside, {"wamid.Y": 1})


async def test_another_accounts_state_is_not_taken(tmp_path, caplog):
    await StateStore(tmp_path, "whatsapp:1", logger=LOG).save(AccountState(set_aside=3))
    loaded = await StateStore(tmp_path, "whatsapp:2", logger=LOG).load()
    assert loaded.set_aside == 0
    assert "belongs to whatsapp:1" in caplog.text


@pytest.mark.parametrize(
    "text",
    ["{not json", '{"account": "whatsapp:1", "setAside": -1}', '{"account": "whatsapp:1", "failing": {"x": "two"}}'],
)
async def test_a_mangled_state_file_is_moved_aside(tmp_path, text):
    (tmp_path / "whatsapp-state.json").write_text(text)
    loaded = await StateStore(tmp_path, "whatsapp:1", logger=LOG).load()
    assert loaded.set_aside == 0
    assert (tmp_path / "whatsapp-state.json.bad").read_text() == text
