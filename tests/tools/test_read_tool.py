"""The kernel read tool: arguments, rendering, continuation hints that really continue, and error results."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.core.messages import ToolCall
from ishiki_host.core.tools import ToolResult
from ishiki_host.errors import ResourceError
from ishiki_host.resources import RuntimeResources, create_runtime_resources
from ishiki_host.tools import make_read_tool
from ishiki_host.tools.read import parse_read_arguments


@dataclass(frozen=True)
class Context:
    call: ToolCall
    turn: int | None = 1


@pytest.fixture
def resources(tmp_path: Path) -> RuntimeResources:
    return create_runtime_resources(tmp_path)


async def _read(resources: RuntimeResources, **args: Any) -> ToolResult:
    tool = make_read_tool(resources.center)
    result = await tool.handler(args, Context(ToolCall("c1", "read", args)))
    assert isinstance(result, ToolResult)
    return result


def test_the_tool_is_untrusted_and_takes_a_url(resources: RuntimeResources) -> None:
    tool = make_read_tool(resources.center)
    assert (tool.name, tool.trust, tool.kind) == ("read", "untrusted", "action")
    assert tool.spec().parameters["required"] == ["url"]
    assert set(tool.spec().parameters["properties"]) == {"url", "lines", "offset", "column"}


@pytest.mark.anyio
async def test_a_whole_small_file(resources: RuntimeResources, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    result = await _read(resources, url="local://a.txt")
    assert result.content == "[local://a.txt · text/plain · 2 lines]\none\ntwo"
    assert not result.is_error
    assert result.data["totalLines"] == 2


@pytest.mark.anyio
async def test_following_the_hint_reads_a_long_file_exactly_once(resources: RuntimeResources, tmp_path: Path) -> None:
    lines = [f"{n}: " + "w" * (n % 37) for n in range(1, 5001)]
    (tmp_path / "long.txt").write_text("\n".join(lines))
    seen: list[str] = []
    args: dict[str, Any] = {"url": "local://long.txt"}
    for _ in range(100):
        result = await _read(resources, **args)
        header, *body = result.content.split("\n")
        assert header.startswith("[local://long.txt · text/plain · lines ")
        hint = re.search(r"call read with offset=(\d+)$", result.content)
        page = body[:-1] if hint else body
        assert len(page) <= 2000
        assert len("\n".join(page)) <= 30_000
        seen += page
        if not hint:
            break
        assert body[-1].startswith(f"… {5000 - len(seen):,} more lines")
        args["offset"] = int(hint.group(1))
    assert seen == lines


@pytest.mark.anyio
async def test_a_selection_keeps_its_end_across_pages(resources: RuntimeResources, tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("\n".join(str(n) for n in range(1, 5001)))
    result = await _read(resources, url="local://n.txt", lines="1000-3500")
    assert result.content.split("\n")[0] == "[local://n.txt · text/plain · lines 1,000-2,999 of 5,000]"
    assert result.content.endswith('… 501 more lines; call read with offset=3000, lines="1000-3500"')
    rest = await _read(resources, url="local://n.txt", lines="1000-3500", offset=3000)
    assert rest.content.split("\n")[-1] == "3500"
    fragment = await _read(resources, url="local://n.txt#L10-L12")
    assert fragment.content.split("\n")[1:] == ["10", "11", "12"]


@pytest.mark.anyio
async def test_a_line_longer_than_a_page_continues_by_column(resources: RuntimeResources) -> None:
    url = await resources.artifacts.archive("fetch", "{" + '"k": 1, ' * 10_000 + "}")
    first = await _read(resources, url=url)
    assert first.content.endswith("… line 1 continues; call read with offset=1, column=30001")
    second = await _read(resources, url=url, offset=1, column=30001)
    assert "(from column 30,001)" in second.content.split("\n")[0]


@pytest.mark.anyio
async def test_binary_empty_and_meta(resources: RuntimeResources, tmp_path: Path) -> None:
    url = await resources.assets.capture(b"\x89PNG\r\n\x1a\n" + bytes(100), name="cat.png")
    binary = await _read(resources, url=url)
    assert binary.content == f"[{url} · cat.png · image/png · 108 bytes · binary: content not shown]"
    (tmp_path / "empty.txt").write_text("")
    assert (await _read(resources, url="local://empty.txt")).content == "[local://empty.txt · text/plain · empty]"
    meta = await _read(resources, url=url + "?view=meta")
    assert '"mediaType": "image/png"' in meta.content


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"url": "local://../../etc/passwd"}, "invalid_resource_uri"),
        ({"url": "ftp://x"}, "unknown_scheme"),
        ({"url": ""}, "invalid_resource_uri"),
        ({"url": "local://nothing.txt"}, "not_found"),
        ({"url": "local://", "lines": "ten"}, "invalid_selector"),
        ({"url": "local://", "offset": "abc"}, "invalid_selector"),
        ({"url": "local://", "offset": 0}, "invalid_selector"),
        ({"url": "local://", "path": "x"}, "invalid_selector"),
    ],
)
async def test_errors_become_error_results(resources: RuntimeResources, args: dict[str, Any], code: str) -> None:
    result = await _read(resources, **args)
    assert result.is_error
    assert result.data == {"error": code}
    assert result.content.startswith(f"read failed: {code}: ")


@pytest.mark.anyio
async def test_unknown_scheme_result_lists_the_schemes(resources: RuntimeResources) -> None:
    result = await _read(resources, url="ftp://x")
    assert "artifact://, asset://, local://" in result.content


def test_arguments_accept_what_models_send() -> None:
    assert parse_read_arguments({"url": "local://a", "offset": "12", "lines": 5}) == ("local://a", 5, 12, None)
    assert parse_read_arguments({"url": "local://a", "lines": ""}) == ("local://a", None, None, None)
    with pytest.raises(ResourceError, match="unknown argument"):
        parse_read_arguments({"url": "local://a", "view": "meta"})
