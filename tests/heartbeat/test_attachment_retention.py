"""Attachments on a real Host: each capture is listed in ``images`` when it arrives, the clean-up beat is
seeded from ``attachments.retention``, and it deletes old rows and their files while newer ones stay; a store
that cannot list a capture never loses the message."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.channels.base import InboundAttachment
from ishiki_host.testing import TestHost, profile_yaml
from ishiki_host.testing.host import host_yaml

pytestmark = pytest.mark.anyio

BeatHostFactory = Callable[..., Any]
HANG = 20.0
KEY = "ana/fake:bot/private:7"
ASSETS = "runtimes/ana/fake%3Abot/private%3A7/assets"


async def send_picture(th: TestHost, body: bytes, name: str = "cat.png") -> None:
    picture = InboundAttachment("image/png", name, data=body)
    delivery = await th.channel().say("look", attachments=[picture], channel_id="private:7")
    with anyio.fail_after(HANG):
        await delivery.settled()


def asset_files(data_dir: Path, body: bytes) -> tuple[Path, Path]:
    """The bytes of the one asset holding ``body``, and its metadata."""
    [data] = [p for p in data_dir.rglob("*.data") if p.read_bytes() == body]
    return data, data.with_suffix(".json")


async def test_a_captured_attachment_is_listed_and_deleted_with_its_files_after_the_retention(
    beat_host: BeatHostFactory,
) -> None:
    host = host_yaml(extra="attachments: {retention: 1h}\n")
    async with beat_host(profiles={"ana": profile_yaml()}, host=host) as bh:
        data_dir = bh.th.host.config.host.data_dir
        captured_at = bh.clock.now()
        await send_picture(bh.th, b"\x89PNG old cat")
        [old] = await bh.store.images.for_runtime(KEY)
        old_data, old_meta = asset_files(data_dir, b"\x89PNG old cat")
        slot = await bh.next_run("__clear_images__")  # 03:30, about five hours after the capture
        await bh.clock.advance(slot - 60 - bh.clock.now())
        await send_picture(bh.th, b"\x89PNG new cat", "kitten.png")
        new_data, new_meta = asset_files(data_dir, b"\x89PNG new cat")
        freed = old_data.stat().st_size + old_meta.stat().st_size
        await bh.run_to(slot)
        [(outcome, output)] = await bh.outcomes("__clear_images__")
        left = await bh.store.images.for_runtime(KEY)
    assert old.url == f"asset://{old_data.stem}.png"
    assert (old.path, old.media_type, old.size, old.created_at) == (
        f"{ASSETS}/{old_data.name}",
        "image/png",
        12,
        captured_at,
    )
    assert (outcome, output) == ("ok", f"deleted 1 attachment(s) older than 3600 s: 2 file(s), {freed} bytes")
    assert (old_data.exists(), old_meta.exists()) == (False, False)
    assert (new_data.exists(), new_meta.exists()) == (True, True)
    assert [r.path for r in left] == [f"{ASSETS}/{new_data.name}"]


async def test_the_clean_up_beat_is_seeded_by_default_replaced_by_heartbeats_json_and_gone_when_off(
    beat_host: BeatHostFactory, tmp_path: Path
) -> None:
    root = tmp_path / "bot"
    async with beat_host(profiles={"ana": profile_yaml()}, root=root) as bh:
        seeded = await bh.store.heartbeats.get("__clear_images__")
    assert seeded is not None
    assert (seeded.text, seeded.cron, seeded.managed, seeded.target) == ("30d", "30 3 * * *", True, None)

    mine = '[{"id": "__clear_images__", "text": "2d", "cron": "0 4 * * 0"}]'
    async with beat_host(profiles={"ana": profile_yaml()}, root=root, files={"heartbeats.json": mine}) as bh:
        replaced = await bh.store.heartbeats.get("__clear_images__")
    assert replaced is not None
    assert (replaced.text, replaced.cron) == ("2d", "0 4 * * 0")

    (root / "heartbeats.json").unlink()
    off = host_yaml(extra="attachments: {retention: off}\n")
    async with beat_host(profiles={"ana": profile_yaml()}, root=root, host=off) as bh:
        assert await bh.store.heartbeats.get("__clear_images__") is None


async def test_a_store_that_cannot_list_the_capture_still_takes_and_answers_the_message(
    beat_host: BeatHostFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with beat_host(profiles={"ana": profile_yaml()}) as bh:
        with sqlite3.connect(bh.store.path) as conn:  # another writer of the file: the images table refuses rows
            conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON images BEGIN SELECT RAISE(ABORT, 'disk says no'); END")
        with caplog.at_level(logging.WARNING):
            await send_picture(bh.th, b"\x89PNG cat")
        runtime = await bh.th.host.runtime_for("ana", "fake:bot", "private:7")
        [inbound] = [e for e in runtime.context.log.iter_forward() if e.data.get("role") == "user"]
        assert await bh.store.images.for_runtime(KEY) == []
        assert bh.th.channel().texts() == ["ok"]
    assert [part["type"] for part in inbound.data["parts"]] == ["text", "image"]
    assert "is kept but not listed for clean-up" in caplog.text
    assert "disk says no" in caplog.text
