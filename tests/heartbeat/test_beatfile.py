"""heartbeats.json: per-entry errors by id, managed sync by id, bad files change nothing, the watcher."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import HeartbeatInvalid
from ishiki_host.heartbeat import BeatFileWatcher, parse_beat_file, sync_from_file
from ishiki_host.heartbeat.beatfile import HEARTBEATS_FILE
from ishiki_host.store import BeatSpec, BeatTarget, MemoryStore

pytestmark = pytest.mark.anyio

TARGET = {"profile": "alice", "sid": "telegram:1", "channel": "private:9"}


def _beat(beat_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": beat_id, "text": f"do {beat_id}", "cron": "0 9 * * *", "type": "task", **fields}


def _write(path: Path, data: object) -> None:
    if isinstance(data, bytes):
        path.write_bytes(data)
        return
    text = data if isinstance(data, str) else json.dumps(data)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def beats_file(tmp_path: Path) -> Path:
    return tmp_path / HEARTBEATS_FILE


async def _ids(store: MemoryStore, **filters: Any) -> list[str]:
    return sorted(b.id for b in await store.heartbeats.find(**filters))


async def test_sync_adds_updates_and_removes_by_id_and_leaves_user_beats(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock
) -> None:
    await store.heartbeats.add(BeatSpec("mine", "my own", "reminder", "0 8 * * *"), next_run=1.0, created_by="a/b/c")
    one_time = _beat("c", recurring=False, cron="0 9 24 12 *")
    _write(beats_file, [_beat("a"), _beat("b", target=TARGET, timezone="Europe/Berlin"), one_time])
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert report.errors == ()
    assert report.synced is not None
    assert (report.synced.added, report.changed) == (["a", "b", "c"], True)
    stored_b = await store.heartbeats.get("b")
    assert stored_b is not None
    assert (stored_b.managed, stored_b.target, stored_b.timezone) == (True, BeatTarget(**TARGET), "Europe/Berlin")
    next_a = (await store.heartbeats.get("a")).next_run  # type: ignore[union-attr]

    _write(beats_file, [_beat("a", text="do a better"), _beat("d", cron="30 7 * * 1")])
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert report.synced is not None
    s = report.synced
    assert (s.added, s.updated, s.removed) == (["d"], ["a"], ["b", "c"])
    a = await store.heartbeats.get("a")
    assert a is not None
    assert (a.text, a.next_run) == ("do a better", next_a)  # only the text changed: same slot
    assert await _ids(store, managed=True) == ["a", "d"]
    mine = await store.heartbeats.get("mine")
    assert mine is not None
    assert (mine.managed, mine.next_run, mine.text) == (False, 1.0, "my own")
    assert "1 added, 1 updated, 2 removed, 0 skipped" in report.summary()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (_beat("x", cron="0 25 * * *"), r"\[1\]: beat 'x': cron '0 25 \* \* \*': bad hour field '25'"),
        (_beat("x", type="alarm"), r"\[1\]: beat 'x': 'type' 'alarm' is not one of reminder, task"),
        ({"id": "x", "text": "t", "type": "task"}, r"\[1\]: beat 'x': missing 'cron'"),
        (_beat("x", timezone="Europe/Nowhere"), r"beat 'x': unknown time zone 'Europe/Nowhere'"),
        (_beat("x", timzone="UTC"), r"beat 'x': unknown key 'timzone' \(did you mean 'timezone'\?\)"),
        (_beat("x", target={"profile": "a", "sid": "s"}), r"beat 'x': missing 'channel'"),
        (_beat("x", recurring="yes"), r"beat 'x': 'recurring' must be true or false, got a string"),
        (_beat("x", recurring=False), r"beat 'x': one-time cron '0 9 \* \* \*' would fire more than once"),
        (_beat("x", text=""), r"beat 'x': 'text' must be a non-empty string"),
        (_beat("x", trust="admin"), r"beat 'x': 'trust' must be one of untrusted, trusted, owner, got 'admin'"),
        (_beat("x", trust=["owner"]), r"beat 'x': 'trust' must be one of untrusted, trusted, owner, got an array"),
        (_beat("x", trust=None), r"beat 'x': 'trust' must be one of untrusted, trusted, owner, got null"),
        ({"text": "t", "cron": "0 9 * * *", "type": "task"}, r"\[1\]: missing 'id'"),
        ("just a string", r"\[1\]: expected an object, got a string"),
    ],
)
async def test_a_bad_entry_is_skipped_naming_file_and_id(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock, entry: object, message: str
) -> None:
    _write(beats_file, [_beat("good"), entry, _beat("fine")])
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert len(report.errors) == 1
    described = str(report.errors[0])
    assert described.startswith(f"{beats_file}: ")
    assert re.search(message, described), described
    assert await _ids(store, managed=True) == ["fine", "good"]


async def test_a_broken_entry_keeps_its_stored_beat(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock
) -> None:
    _write(beats_file, [_beat("a"), _beat("b")])
    await sync_from_file(beats_file, store, "UTC", fake_clock)
    before = await store.heartbeats.get("b")
    _write(beats_file, [_beat("a"), _beat("b", cron="0 9 * *")])
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert [e.path for e in report.errors] == ["[1]"]
    assert await store.heartbeats.get("b") == before


async def test_duplicate_ids_are_all_skipped(store: MemoryStore, beats_file: Path, fake_clock: FakeClock) -> None:
    _write(beats_file, [_beat("a"), _beat("twin"), _beat("twin", text="other")])
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert [str(e).split(": ", 1)[1] for e in report.errors] == [
        "[1]: beat 'twin': id used by entries [1], [2]; each is skipped",
        "[2]: beat 'twin': id used by entries [1], [2]; each is skipped",
    ]
    assert await _ids(store) == ["a"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"id": "a",}]', "not valid JSON: expected a key in double quotes, found '}'"),
        ('{"id": "a"}', "expected a JSON array of beats, got an object"),
        ("", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "1: not valid JSON: nested deeper than 64 levels"),
        ("[\n" + "9" * 5000 + "]", "2: [0]: not valid JSON: an integer of 5,000 digits; the limit is 100"),
        (b'[{"id": "caf\xe9"}]', "1: not UTF-8 text (byte 0xe9 at offset 12)"),
        ("[NaN]", "[0]: not valid JSON: NaN is not a JSON number"),
        ("[" + "0, " * 100_001 + "0]", "more than 100,000 values"),
    ],
)
async def test_a_file_that_is_not_a_json_array_keeps_the_managed_beats(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock, text: str | bytes, message: str
) -> None:
    _write(beats_file, [_beat("a"), _beat("b")])
    await sync_from_file(beats_file, store, "UTC", fake_clock)
    before = await store.heartbeats.find()
    _write(beats_file, text)
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert (report.found, report.synced, report.changed) == (True, None, False)
    assert len(report.errors) == 1
    assert message in str(report.errors[0])
    assert "managed beats are kept" in str(report.errors[0])
    assert await store.heartbeats.find() == before


async def test_a_key_written_twice_makes_its_entry_bad(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock
) -> None:
    _write(beats_file, [_beat("a"), _beat("b")])
    await sync_from_file(beats_file, store, "UTC", fake_clock)
    before = await store.heartbeats.get("a")
    twice = '{"id": "a", "text": "x",\n "text": "y", "cron": "0 9 * * *", "type": "task"}'
    _write(beats_file, f"[{twice}, {json.dumps(_beat('c'))}]")
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert [e.describe() for e in report.errors] == [
        f"{beats_file}: [0]: beat 'a': text: duplicate key 'text' (first at line 1)"
    ]
    assert await _ids(store, managed=True) == ["a", "c"]  # 'a' kept as it was, 'b' removed, 'c' added
    assert await store.heartbeats.get("a") == before


async def test_the_watcher_keeps_the_beats_when_the_file_turns_hostile(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock
) -> None:
    watcher = BeatFileWatcher(beats_file, store, default_tz="UTC", clock=fake_clock)
    _write(beats_file, [_beat("a")])
    await watcher.poll()
    _write(beats_file, "[" * 100_000 + "]" * 100_000)  # used to raise RecursionError out of the host's tick
    report = await watcher.poll()
    assert report is not None
    assert [e.message for e in report.errors] == [
        "not valid JSON: nested deeper than 64 levels; the managed beats are kept as they were"
    ]
    assert await _ids(store, managed=True) == ["a"]


async def test_json_errors_carry_the_line(beats_file: Path) -> None:
    with pytest.raises(HeartbeatInvalid, match="not valid JSON") as caught:
        parse_beat_file('[\n  {"id": "a"},\n  oops\n]', file=str(beats_file), default_tz="UTC", now=0.0)
    assert (caught.value.file, caught.value.line) == (str(beats_file), 3)


async def test_a_missing_file_changes_nothing(store: MemoryStore, beats_file: Path, fake_clock: FakeClock) -> None:
    _write(beats_file, [_beat("a")])
    await sync_from_file(beats_file, store, "UTC", fake_clock)
    await anyio.Path(beats_file).unlink()
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert (report.found, report.errors, report.synced) == (False, (), None)
    assert await _ids(store, managed=True) == ["a"]
    _write(beats_file, [])
    await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert await _ids(store, managed=True) == []


async def test_a_file_id_taken_by_a_user_beat_is_reported(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock
) -> None:
    await store.heartbeats.add(BeatSpec("a", "mine", "task", "0 8 * * *"), next_run=5.0, created_by="x/y/z")
    _write(beats_file, [_beat("a")])
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert len(report.errors) == 1
    assert "beat 'a': a beat made in a chat already has this id" in str(report.errors[0])
    stored = await store.heartbeats.get("a")
    assert stored is not None
    assert (stored.managed, stored.text) == (False, "mine")


async def test_target_validator_refuses_unclaimed_targets(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock
) -> None:
    _write(beats_file, [_beat("a", target=TARGET), _beat("b", target={**TARGET, "profile": "bob"})])

    def claimed(target: BeatTarget) -> str | None:
        return None if target.profile == "alice" else f"no profile {target.profile!r} claims {target.channel}"

    report = await sync_from_file(beats_file, store, "UTC", fake_clock, target_validator=claimed)
    assert "beat 'b': target: no profile 'bob' claims private:9" in str(report.errors[0])
    assert await _ids(store) == ["a"]


async def test_watcher_syncs_at_first_poll_and_on_change(
    store: MemoryStore, beats_file: Path, fake_clock: FakeClock
) -> None:
    pokes: list[int] = []
    watcher = BeatFileWatcher(beats_file, store, default_tz="UTC", clock=fake_clock, on_change=lambda: pokes.append(1))
    first = await watcher.poll()
    assert first is not None
    assert not first.found
    assert await watcher.poll() is None
    _write(beats_file, [_beat("a")])
    changed = await watcher.poll()
    assert changed is not None
    assert changed.changed
    assert (await watcher.poll(), pokes) == (None, [1])
    _write(beats_file, [_beat("a"), _beat("b")])
    os.utime(beats_file, ns=(1, 2))  # a new modification time even on a coarse file system
    assert (await watcher.poll()) is not None
    assert (await _ids(store), pokes) == (["a", "b"], [1, 1])
    forced = await watcher.poll(force=True)
    assert forced is not None
    assert (forced.changed, pokes) == (False, [1, 1])
