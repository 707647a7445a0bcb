"""The reserved ``__clear_images__`` beat: no runner call; old attachment rows and files go, new ones stay."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.heartbeat import clear_images, sync_from_file
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
    assert report.problems == ["../keep.txt: outside the data directory"]
    assert "1 file(s) not removed: ../keep.txt: outside the data directory" in report.summary(3600)


async def test_a_file_already_gone_is_fine(store: MemoryStore, fake_clock: FakeClock) -> None:
    path = await _attach(store, "vanished.png")
    path.unlink()
    await fake_clock.advance(10)
    report = await clear_images(store, store.path.parent, 5)
    assert (report.rows, report.files, report.problems) == (1, 0, [])
