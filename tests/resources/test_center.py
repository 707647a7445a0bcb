"""The resource center: registration, dispatch, views, detection, limits and error codes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from ishiki_host.errors import ResourceError
from ishiki_host.resources import Resource, ResourceCenter, ResourceRequest


@dataclass
class MemoryScheme:
    """A scheme serving fixed resources by authority, recording the requests it saw."""

    items: dict[str, Resource]
    views: tuple[str, ...] = ()
    seen: list[ResourceRequest] = field(default_factory=list)

    async def read(self, request: ResourceRequest) -> Resource:
        self.seen.append(request)
        try:
            return self.items[request.url.authority]
        except KeyError:
            raise ResourceError("not_found", f"{request.url} is not here") from None


class Broken:
    async def read(self, request: ResourceRequest) -> Resource:
        raise KeyError("oops")


def _center(page_lines: int = 3, **items: Resource) -> tuple[ResourceCenter, MemoryScheme]:
    center = ResourceCenter(page_lines=page_lines, page_chars=1000)
    scheme = MemoryScheme(items)
    center.register("mem", scheme)
    return center, scheme


def _code(exc: pytest.ExceptionInfo[ResourceError]) -> str:
    return exc.value.code


def test_registration_duplicates_and_deregistration() -> None:
    center = ResourceCenter()
    first = MemoryScheme({})
    deregister = center.register("mem", first, owner="extension 'memx'")
    with pytest.raises(ResourceError, match="already registered by extension 'memx'") as caught:
        center.register("mem", MemoryScheme({}))
    assert _code(caught) == "duplicate_scheme"
    deregister()
    assert center.schemes == ()
    again = center.register("mem", MemoryScheme({}))
    deregister()  # a stale deregister must not remove the newer registration
    assert center.schemes == ("mem",)
    again()
    assert center.schemes == ()


@pytest.mark.parametrize("scheme", ["", "Mem", "1mem", "me m", "mem:"])
def test_invalid_scheme_names(scheme: str) -> None:
    with pytest.raises(ResourceError) as caught:
        ResourceCenter().register(scheme, MemoryScheme({}))
    assert _code(caught) == "invalid_scheme"


@pytest.mark.anyio
async def test_unknown_scheme_lists_the_available_ones() -> None:
    center, _ = _center()
    center.register("asset", MemoryScheme({}))
    with pytest.raises(ResourceError, match=r"no handler for ftp://; schemes available: asset://, mem://") as caught:
        await center.read("ftp://x")
    assert _code(caught) == "unknown_scheme"


@pytest.mark.anyio
async def test_handlers_get_the_parsed_url_and_view() -> None:
    center, scheme = _center(a=Resource(text="one\ntwo"))
    scheme.views = ("raw",)
    result = await center.read("mem://a/deep/path?view=raw&x=1#L2")
    request = scheme.seen[-1]
    assert request.url.path_segments == ("deep", "path")
    assert request.url.params == {"view": "raw", "x": "1"}
    assert request.view == "raw"
    assert request.wants_content
    assert result.text == "two"
    assert result.url == "mem://a/deep/path?view=raw&x=1"


@pytest.mark.anyio
async def test_unknown_views_are_refused_before_the_handler_runs() -> None:
    center, scheme = _center(a=Resource(text="x"))
    with pytest.raises(ResourceError, match="views: meta") as caught:
        await center.read("mem://a?view=original")
    assert _code(caught) == "unknown_view"
    assert scheme.seen == []
    with pytest.raises(ResourceError, match="view 'meta' given"):
        await center.read("mem://a?view=original", view="meta")


@pytest.mark.anyio
async def test_meta_view_describes_without_content() -> None:
    center, scheme = _center(100, a=Resource(media_type="image/png", size=2048, name="cat.png", meta={"width": 10}))
    result = await center.read("mem://a?view=meta")
    assert not scheme.seen[-1].wants_content
    assert result.view == "meta"
    assert result.media_type == "application/json"
    assert json.loads(result.text or "") == {
        "url": "mem://a?view=meta",
        "mediaType": "image/png",
        "size": 2048,
        "name": "cat.png",
        "width": 10,
    }


@pytest.mark.anyio
async def test_binary_content_is_described_never_shown() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    center, _ = _center(img=Resource(data=png), blob=Resource(data=b"abc\x00def", name="x.bin"))
    for url, media_type in (("mem://img", "image/png"), ("mem://blob", "application/octet-stream")):
        result = await center.read(url)
        assert result.binary
        assert result.text is None
        assert result.page is None
        assert result.media_type == media_type
    assert (await center.read("mem://img")).size == len(png)


@pytest.mark.anyio
async def test_text_detection() -> None:
    center, _ = _center(
        utf8=Resource(data="héllo\nwörld".encode()),
        bom=Resource(data=b"\xef\xbb\xbfbom"),
        utf16=Resource(data="wide".encode("utf-16")),
        latin=Resource(data="caf\xe9".encode("latin-1"), media_type="text/plain"),
        typed=Resource(data=b'{"a": 1}', media_type="application/json"),
        image_named_txt=Resource(data=b"plain", media_type="image/jpeg"),
    )
    assert (await center.read("mem://utf8")).text == "héllo\nwörld"
    assert (await center.read("mem://utf8")).media_type == "text/plain"
    assert (await center.read("mem://bom")).text == "bom"
    assert (await center.read("mem://utf16")).text == "wide"
    assert (await center.read("mem://latin")).binary
    assert (await center.read("mem://typed")).media_type == "application/json"
    assert (await center.read("mem://image_named_txt")).binary


@pytest.mark.anyio
async def test_paging_through_the_center() -> None:
    center, _ = _center(a=Resource(text="\n".join(f"l{n}" for n in range(1, 11))))
    page = await center.read("mem://a")
    assert page.text == "l1\nl2\nl3"
    assert page.page is not None
    assert page.page.next_offset == 4
    assert (await center.read("mem://a", offset=4)).text == "l4\nl5\nl6"
    assert (await center.read("mem://a", lines="-2")).text == "l9\nl10"
    assert (await center.read("mem://a#L5-L6")).text == "l5\nl6"
    assert (await center.read("mem://a#L5-L6", lines="5-6")).text == "l5\nl6"
    with pytest.raises(ResourceError, match="disagrees") as caught:
        await center.read("mem://a#L5-L6", lines="1-2")
    assert _code(caught) == "invalid_selector"
    with pytest.raises(ResourceError) as caught:
        await center.read("mem://a", offset=0)
    assert _code(caught) == "invalid_selector"


@pytest.mark.anyio
async def test_limits() -> None:
    center = ResourceCenter(max_bytes=10)
    center.register("mem", MemoryScheme({"big": Resource(data=b"x" * 11), "long": Resource(text="y" * 11)}))
    for url in ("mem://big", "mem://long"):
        with pytest.raises(ResourceError) as caught:
            await center.read(url)
        assert _code(caught) == "too_large"
    with pytest.raises(ResourceError) as caught:
        await center.read_bytes("mem://big")
    assert _code(caught) == "too_large"


@pytest.mark.anyio
async def test_read_bytes() -> None:
    center, _ = _center(a=Resource(data=b"GIF89a...", name="x"), t=Resource(text="é"), none=Resource(size=3))
    blob = await center.read_bytes("mem://a")
    assert (blob.data, blob.media_type) == (b"GIF89a...", "image/gif")
    assert (await center.read_bytes("mem://t")).data == "é".encode()
    with pytest.raises(ResourceError, match="no content"):
        await center.read_bytes("mem://none")


@pytest.mark.anyio
async def test_handler_failures_are_wrapped_and_resource_errors_pass_through() -> None:
    center, _ = _center()
    center.register("broken", Broken())
    with pytest.raises(ResourceError, match="broken:// handler failed") as caught:
        await center.read("broken://x")
    assert _code(caught) == "read_failed"
    assert isinstance(caught.value.__cause__, KeyError)
    with pytest.raises(ResourceError, match="is not here") as caught:
        await center.read("mem://missing")
    assert _code(caught) == "not_found"


@pytest.mark.anyio
async def test_read_result_to_dict() -> None:
    center, _ = _center(a=Resource(text="a\nb\nc\nd", meta={"k": 1}))
    data = (await center.read("mem://a", lines="2-4")).to_dict()
    assert data["text"] == "b\nc\nd"
    assert data["lines"] == "2-4"
    assert (data["firstLine"], data["lastLine"], data["totalLines"]) == (2, 4, 4)
    assert data["meta"] == {"k": 1}
    assert "nextOffset" not in data
