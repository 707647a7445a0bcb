"""The reserved ``__clear_images__`` beat: no runner call; old attachment rows and files go (an asset's metadata
with its bytes), new ones stay, nothing outside the runtime homes is touched; the beat seeded without a file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.heartbeat import clear_images, clear_images_beat, sync_from_file
from ishiki_host.heartbeat.rules import CLEAR_IMAGES_ID
from ishiki_host.store import MemoryStore

pytestmark = pytest.mark.anyio

Wall = Callable[[str, str], float]


async def _attach(store: MemoryStore, name: str, body: bytes = b"png") -> Path:
    relative = f"runtimes/alice/main/assets/{name}"
    path = store.path.parent / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    await store.images.add("alice/main", f"asset://{name}", path=relative, media_type="image/png", size=len(body))
    return path


async def test_clear_images_beat_deletes_old_rows_and_files(
    store: MemoryStore, runner: Any, drive: Any, fake_clock: FakeClock, wall: Wall, tmp_path: Path
) -> None:
    await fake_clock.advance(wall("2024-06-01 08:00", "UTC") - fake_clock.now())
    old = await _attach(store, "old.png", b"12345")
    await fake_clock.advance(90 * 60)
    new = await _attach(store, "new.png")
    beats_file = tmp_path / "heartbeats.json"
    beats_file.write_text(json.dumps([{"id": CLEAR_IMAGES_ID, "text": "1h", "cron": "0 10 * * *"}]))
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert report.errors == ()
    async with drive() as driver:
        await driver.run_until(wall("2024-06-01 10:01", "UTC"))
    assert runner.calls == []
    assert (old.exists(), new.exists()) == (False, True)
    assert [r.url for r in await store.images.for_runtime("alice/main")] == ["asset://new.png"]
    runs = await store.heartbeats.runs(CLEAR_IMAGES_ID)
    assert [(r.outcome, r.output) for r in runs] == [
        ("ok", "deleted 1 attachment(s) older than 3600 s: 1 file(s), 5 bytes")
    ]


async def test_a_path_outside_the_data_directory_is_not_touched(
    store: MemoryStore, fake_clock: FakeClock, tmp_path: Path
) -> None:
    outside = tmp_path / "keep.txt"
    outside.write_text("not an attachment")
    await store.images.add("alice/main", "asset://evil", path="../keep.txt", media_type="text/plain", size=1)
    gone = await _attach(store, "gone.png")
    await fake_clock.advance(7200)
    report = await clear_images(store, store.path.parent, 3600)
    assert (report.rows, report.files, outside.exists(), gone.exists()) == (2, 1, True, False)
    assert report.problems == ["../keep.txt: outside the runtime homes"]
    assert "1 file(s) not removed: ../keep.txt: outside the runtime homes" in report.summary(3600)


async def test_a_file_already_gone_is_fine(store: MemoryStore, fake_clock: FakeClock) -> None:
    path = await _attach(store, "vanished.png")
    path.unlink()
    await fake_clock.advance(10)
    report = await clear_images(store, store.path.parent, 5)
    assert (report.rows, report.files, report.problems) == (1, 0, [])


async def test_an_asset_loses_its_metadata_and_its_bytes(store: MemoryStore, fake_clock: FakeClock) -> None:
    asset_id = "0123456789abcdef0123456789abcdef"
    data = await _attach(store, f"{asset_id}.data", b"bytes")
    meta = data.with_suffix(".json")
    meta.write_text('{"id": "x"}')
    other = data.with_name("notes.json")  # not this asset's: left alone
    other.write_text("{}")
    await fake_clock.advance(10)
    report = await clear_images(store, store.path.parent, 5)
    assert (report.rows, report.files, report.bytes) == (1, 2, 5 + len('{"id": "x"}'))
    assert (data.exists(), meta.exists(), other.exists()) == (False, False, True)


async def test_links_out_of_the_runtime_homes_are_never_followed(
    store: MemoryStore, fake_clock: FakeClock, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "precious.png").write_bytes(b"keep")
    homes = store.path.parent / "runtimes" / "alice" / "main"
    homes.mkdir(parents=True)
    (homes / "escape").symlink_to(outside, target_is_directory=True)
    (homes / "link.png").symlink_to(outside / "precious.png")
    add = store.images.add
    await add("alice/main", "asset://a", path="runtimes/alice/main/escape/precious.png", media_type="image/png", size=4)
    await add("alice/main", "asset://b", path="runtimes/alice/main/link.png", media_type="image/png", size=4)
    await add("alice/main", "asset://c", path="memory.db", media_type="image/png", size=4)
    await fake_clock.advance(10)
    report = await clear_images(store, store.path.parent, 5)
    assert (report.rows, report.files) == (3, 1)
    assert report.problems == [
        "runtimes/alice/main/escape/precious.png: outside the runtime homes",
        "memory.db: outside the runtime homes",
    ]
    assert (outside / "precious.png").read_bytes() == b"keep"
    assert not (homes / "link.png").is_symlink()  # the link went, not what it pointed at
    assert store.path.exists()


async def test_without_heartbeats_json_the_seeded_beat_follows_the_setting_and_the_rest_stays(
    store: MemoryStore, fake_clock: FakeClock, tmp_path: Path
) -> None:
    beats_file = tmp_path / "heartbeats.json"
    beats_file.write_text(json.dumps([{"id": "stretch", "text": "stretch", "cron": "0 10 * * *", "type": "task"}]))
    await sync_from_file(beats_file, store, "UTC", fake_clock, seeded=clear_images_beat("7d"))
    beats_file.unlink()  # a missing file changes no beat of the file's
    report = await sync_from_file(beats_file, store, "UTC", fake_clock, seeded=clear_images_beat("1d"))
    stored = {beat.id: beat.text for beat in await store.heartbeats.find(managed=True)}
    assert (report.found, stored) == (False, {CLEAR_IMAGES_ID: "1d", "stretch": "stretch"})
    report = await sync_from_file(beats_file, store, "UTC", fake_clock, seeded=clear_images_beat(None))
    assert [beat.id for beat in await store.heartbeats.find(managed=True)] == ["stretch"]
    assert report.summary() == f"{beats_file}: 0 added, 0 updated, 1 removed, 0 skipped"
    report = await sync_from_file(beats_file, store, "UTC", fake_clock)
    assert report.synced is None  # nothing seeded, nothing reserved stored: the table is left alone
