"""asset://: eager capture (bytes or streams), lazy capture fetched once, and the fetcher registry."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import ResourceError
from ishiki_host.resources import AssetFetchers, AssetStore, ResourceCenter, create_runtime_resources

JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4


async def _stream(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        await anyio.lowlevel.checkpoint()
        yield chunk


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


class CountingFetcher:
    """Serves bytes by locator ``file_id``, counting calls; ``gate`` holds each call until set."""

    def __init__(self, files: dict[str, bytes], gate: anyio.Event | None = None):
        self.files, self.gate, self.calls = files, gate, 0
        self.started = anyio.Event()

    async def __call__(self, locator: Mapping[str, Any]) -> bytes:
        self.calls += 1
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if locator["file_id"] not in self.files:
            raise ConnectionError("file gone")
        return self.files[locator["file_id"]]


@pytest.mark.anyio
async def test_capture_bytes_and_read_back(tmp_path: Path, fake_clock: FakeClock) -> None:
    resources = create_runtime_resources(tmp_path, clock=fake_clock)
    url = await resources.assets.capture(JPEG, name="photo.JPG")
    assert url.startswith("asset://")
    assert url.endswith(".jpg")
    result = await resources.center.read(url)
    assert result.binary
    assert result.media_type == "image/jpeg"
    assert result.size == len(JPEG)
    assert result.name == "photo.JPG"
    blob = await resources.center.read_bytes(url)
    assert (blob.data, blob.media_type) == (JPEG, "image/jpeg")
    meta = json.loads((await resources.center.read(url + "?view=meta")).text or "")
    assert meta["captured"] == fake_clock.now()
    assert meta["fetched"] is True


@pytest.mark.anyio
async def test_streams_are_stored_and_identical_content_is_kept_once(tmp_path: Path) -> None:
    store = AssetStore(tmp_path / "assets")
    first = await store.capture(_stream(JPEG[:100], JPEG[100:]), media_type="image/jpeg")
    second = await store.capture(JPEG, media_type="image/jpeg", name="again.jpg")
    assert first == second
    assert len(_files(tmp_path / "assets")) == 2  # <id>.json and <id>.data, no temporary files


@pytest.mark.anyio
async def test_text_assets_are_readable(tmp_path: Path) -> None:
    resources = create_runtime_resources(tmp_path)
    url = await resources.assets.capture(b"a note\nline two", name="note.txt")
    assert (await resources.center.read(url)).text == "a note\nline two"


@pytest.mark.anyio
async def test_oversized_captures_leave_nothing(tmp_path: Path) -> None:
    store = AssetStore(tmp_path / "assets", max_bytes=100)
    for source in (bytes(101), _stream(bytes(60), bytes(60))):
        with pytest.raises(ResourceError, match="over 100 bytes") as caught:
            await store.capture(source, name="big.bin")
        assert caught.value.code == "too_large"
    with pytest.raises(ResourceError, match="101 bytes") as caught:
        await store.capture_lazy("telegram", {"file_id": "x"}, size=101)
    assert caught.value.code == "too_large"
    assert _files(tmp_path / "assets") == []


@pytest.mark.anyio
async def test_lazy_assets_are_fetched_on_first_read_only(tmp_path: Path) -> None:
    fetchers = AssetFetchers()
    fetch = CountingFetcher({"f1": JPEG})
    fetchers.register("telegram", fetch)
    resources = create_runtime_resources(tmp_path, fetchers=fetchers)
    url = await resources.assets.capture_lazy("telegram", {"file_id": "f1"}, name="p.jpg", size=len(JPEG))
    assert await resources.assets.capture_lazy("telegram", {"file_id": "f1"}, name="p.jpg") == url
    meta = json.loads((await resources.center.read(url + "?view=meta")).text or "")
    assert fetch.calls == 0
    assert meta["fetched"] is False
    assert meta["source"] == "telegram"
    assert "locator" not in json.dumps(meta)
    assert (await resources.center.read_bytes(url)).data == JPEG
    assert (await resources.center.read_bytes(url)).data == JPEG
    assert fetch.calls == 1


@pytest.mark.anyio
async def test_concurrent_first_reads_fetch_once(tmp_path: Path) -> None:
    fetchers = AssetFetchers()
    fetch = CountingFetcher({"f1": JPEG}, gate=anyio.Event())
    fetchers.register("telegram", fetch)
    store = AssetStore(tmp_path / "assets", fetchers=fetchers)
    center = ResourceCenter()
    center.register("asset", store)
    url = await store.capture_lazy("telegram", {"file_id": "f1"}, media_type="image/jpeg")
    results: list[bytes] = []

    async def reader() -> None:
        results.append((await center.read_bytes(url)).data)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(reader)
            await fetch.started.wait()
            lock = next(iter(store._locks._locks.values()))[0]
            while lock.statistics().tasks_waiting < 4:  # every other reader queues behind the fetch
                await anyio.lowlevel.checkpoint()
            assert fetch.gate is not None
            fetch.gate.set()
    assert results == [JPEG] * 5
    assert fetch.calls == 1
    assert store._locks._locks == {}


@pytest.mark.anyio
async def test_lazy_assets_survive_a_restart_once_the_fetcher_is_back(tmp_path: Path) -> None:
    before = create_runtime_resources(tmp_path)
    url = await before.assets.capture_lazy("telegram", {"file_id": "f1"})
    after = create_runtime_resources(tmp_path, fetchers=AssetFetchers())
    with pytest.raises(ResourceError, match="no 'telegram' fetcher") as caught:
        await after.center.read(url)
    assert caught.value.code == "unavailable"
    after.assets.fetchers.register("telegram", CountingFetcher({"f1": b"GIF89a!"}))
    result = await after.center.read(url)
    assert result.binary
    assert result.media_type == "image/gif"


@pytest.mark.anyio
async def test_a_failed_fetch_is_reported_and_retried_later(tmp_path: Path) -> None:
    fetchers = AssetFetchers()
    fetch = CountingFetcher({})
    fetchers.register("telegram", fetch)
    resources = create_runtime_resources(tmp_path, fetchers=fetchers)
    url = await resources.assets.capture_lazy("telegram", {"file_id": "f1"})
    with pytest.raises(ResourceError, match="file gone") as caught:
        await resources.center.read(url)
    assert caught.value.code == "fetch_failed"
    fetch.files["f1"] = JPEG
    assert (await resources.center.read_bytes(url)).data == JPEG
    assert fetch.calls == 2
    assert not [name for name in _files(tmp_path / "assets") if name.startswith(".tmp-")]


@pytest.mark.anyio
async def test_streamed_fetches_respect_the_limit(tmp_path: Path) -> None:
    fetchers = AssetFetchers()

    async def fetch(locator: Mapping[str, Any]) -> AsyncIterator[bytes]:
        return _stream(bytes(80), bytes(80))

    fetchers.register("web", fetch)
    store = AssetStore(tmp_path / "assets", fetchers=fetchers, max_bytes=100)
    center = ResourceCenter()
    center.register("asset", store)
    url = await store.capture_lazy("web", {"u": 1})
    with pytest.raises(ResourceError, match="over 100 bytes") as caught:
        await center.read(url)
    assert caught.value.code == "too_large"
    assert len(_files(tmp_path / "assets")) == 1  # only the metadata


@pytest.mark.anyio
async def test_a_fetch_that_hangs_times_out(tmp_path: Path) -> None:
    fetchers = AssetFetchers()

    async def fetch(locator: Mapping[str, Any]) -> bytes:
        await anyio.Event().wait()
        return b""

    fetchers.register("slow", fetch)
    store = AssetStore(tmp_path / "assets", fetchers=fetchers, fetch_timeout=0.01)
    center = ResourceCenter()
    center.register("asset", store)
    url = await store.capture_lazy("slow", {})
    with pytest.raises(ResourceError, match="took over") as caught:
        await center.read(url)
    assert caught.value.code == "fetch_failed"


def test_fetcher_registry() -> None:
    fetchers = AssetFetchers()
    fetch = CountingFetcher({})
    deregister = fetchers.register("telegram", fetch)
    with pytest.raises(ResourceError, match="already registered") as caught:
        fetchers.register("telegram", CountingFetcher({}))
    assert caught.value.code == "duplicate_fetcher"
    assert fetchers.get("telegram") is fetch
    deregister()
    assert fetchers.get("telegram") is None


@pytest.mark.anyio
async def test_bad_asset_urls(tmp_path: Path) -> None:
    center = create_runtime_resources(tmp_path).center
    for url, code in (
        ("asset://nothex.jpg", "not_found"),
        ("asset://" + "0" * 32, "not_found"),
        ("asset://" + "0" * 32 + "/x", "invalid_resource_uri"),
        ("asset://" + "0" * 32 + "?x=1", "invalid_resource_uri"),
        ("asset://" + "0" * 32 + "?view=original", "unknown_view"),
    ):
        with pytest.raises(ResourceError) as caught:
            await center.read(url)
        assert caught.value.code == code, url
