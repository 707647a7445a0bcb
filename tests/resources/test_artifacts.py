"""artifact://: archived tool outputs, their views, and the preview the agent keeps in the conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import ResourceError
from ishiki_host.resources import RuntimeResources, create_runtime_resources
from ishiki_host.resources.artifacts import preview

BIG = "\n".join(f"row {n}" for n in range(1, 3001))


@pytest.fixture
def resources(tmp_path: Path, fake_clock: FakeClock) -> RuntimeResources:
    return create_runtime_resources(tmp_path, clock=fake_clock)


@pytest.mark.anyio
async def test_archive_and_read_the_default_view(resources: RuntimeResources) -> None:
    url = await resources.artifacts.archive("web_fetch", "hello\nworld")
    assert url.startswith("artifact://web_fetch/")
    assert url.endswith(".txt")
    result = await resources.center.read(url)
    assert (result.text, result.media_type) == ("hello\nworld", "text/plain")
    assert await resources.artifacts.archive("web_fetch", "hello\nworld") == url
    assert await resources.artifacts.archive("other_tool", "hello\nworld") != url


@pytest.mark.anyio
async def test_meta_view(resources: RuntimeResources, fake_clock: FakeClock) -> None:
    url = await resources.artifacts.archive("search", "a\nb\nc", original={"hits": [1, 2]})
    meta = json.loads((await resources.center.read(url + "?view=meta")).text or "")
    assert meta["tool"] == "search"
    assert meta["created"] == fake_clock.now()
    assert (meta["chars"], meta["lines"], meta["bytes"]) == (5, 3, 5)
    assert meta["original"]["mediaType"] == "application/json"


@pytest.mark.anyio
async def test_original_view(resources: RuntimeResources) -> None:
    data = {"items": [{"id": n} for n in range(3)]}
    url = await resources.artifacts.archive("search", json.dumps(data), original=data)
    original = await resources.center.read(url + "?view=original")
    assert original.media_type == "application/json"
    assert json.loads(original.text or "") == data
    assert (original.text or "").count("\n") > 5  # indented, so it pages by lines
    plain = await resources.artifacts.archive("echo", "just text")
    assert (await resources.center.read(plain + "?view=original")).text == "just text"
    binary = await resources.artifacts.archive("shot", "[screenshot]", original=b"\x89PNG\r\n\x1a\n" + bytes(50))
    described = await resources.center.read(binary + "?view=original")
    assert described.binary
    assert described.media_type == "image/png"


@pytest.mark.anyio
async def test_views_and_urls_that_do_not_exist(resources: RuntimeResources) -> None:
    url = await resources.artifacts.archive("t", "x")
    cases = [
        (url + "?view=raw", "unknown_view", "views: meta, original"),
        ("artifact://t", "invalid_resource_uri", "artifact://<tool>/<name>"),
        ("artifact://t/a/b", "invalid_resource_uri", "artifact://<tool>/<name>"),
        ("artifact://t/nothing.txt", "not_found", "not an artifact name"),
        ("artifact://unknown/" + url.rsplit("/", 1)[1], "not_found", "no such artifact"),
    ]
    for bad, code, message in cases:
        with pytest.raises(ResourceError, match=message) as caught:
            await resources.center.read(bad)
        assert caught.value.code == code


@pytest.mark.anyio
async def test_small_outputs_stay_inline(resources: RuntimeResources, tmp_path: Path) -> None:
    kept = await resources.artifacts.archive_if_large("t", "short", limit=10)
    assert (kept.content, kept.url) == ("short", None)
    assert not (tmp_path / "artifacts").exists()


@pytest.mark.anyio
async def test_large_outputs_become_a_preview_and_a_url(resources: RuntimeResources) -> None:
    archived = await resources.artifacts.archive_if_large("shell", BIG, limit=1000, head=200, tail=100)
    assert archived.url is not None
    assert archived.content.startswith("row 1\n")
    assert "characters omitted" in archived.content
    assert "\nrow 3000\n" in archived.content
    assert f"archived at {archived.url}" in archived.content
    assert len(archived.content) < 700
    assert (archived.chars, archived.lines) == (len(BIG), 3000)
    first = await resources.center.read(archived.url)
    assert first.page is not None
    assert (first.page.last_line, first.page.next_offset) == (2000, 2001)
    rest = await resources.center.read(archived.url, offset=2001)
    assert (first.text or "") + "\n" + (rest.text or "") == BIG


def test_preview_prefers_whole_lines() -> None:
    text = "\n".join(f"line {n:03}" for n in range(100))
    shown = preview(text, 50, 30)
    head, _, tail = shown.partition("\n… [")
    assert all(line.startswith("line ") and len(line) == 8 for line in head.split("\n"))
    assert all(line.startswith("line ") and len(line) == 8 for line in tail.split("\n")[1:])
    assert preview("short", 50, 30) == "short"


def _mangle(root: Path, meta: str) -> None:
    [meta_file] = root.rglob("*.json")
    meta_file.write_text(meta)


@pytest.mark.anyio
@pytest.mark.parametrize("meta", ["[" * 100_000, '{"trust": ' + "9" * 5_000 + "}", "[1, 2]"])
async def test_a_mangled_metadata_file_is_a_read_error_not_a_crash(
    resources: RuntimeResources, tmp_path: Path, meta: str
) -> None:
    url = await resources.artifacts.archive("web_fetch", "hello")
    _mangle(tmp_path, meta)  # json.loads raised RecursionError (or its own ValueError) out of read
    with pytest.raises(ResourceError) as caught:
        await resources.center.read(url)
    assert caught.value.code == "read_failed"
