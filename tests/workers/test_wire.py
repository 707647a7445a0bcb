"""Frames over a real Unix socket pair: whole, cut into single bytes, and every kind of bad frame named."""

from __future__ import annotations

import json

import pytest
from anyio.abc import UNIXSocketStream

from ishiki_host.jsontypes import Json
from ishiki_host.workers.wire import MAX_FRAME, FrameError, FrameReader, encode_frame, write_frame

pytestmark = pytest.mark.anyio


async def test_frames_come_through_whole_and_cut_into_single_bytes(
    socket_pair: tuple[UNIXSocketStream, UNIXSocketStream],
) -> None:
    sender, receiver = socket_pair
    messages: list[dict[str, Json]] = [{"id": 1, "text": "héllo ✓"}, {"big": "x" * 200_000}, {}]
    reader = FrameReader(receiver)
    for message in messages:
        await write_frame(sender, message)
    assert [await reader.read() for _ in messages] == messages
    frame = encode_frame({"one": "byte at a time"})
    for index in range(len(frame)):
        await sender.send(frame[index : index + 1])
    assert await reader.read() == {"one": "byte at a time"}
    await sender.send_eof()
    assert await reader.read() is None  # a clean end between frames


def frame_of(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ((MAX_FRAME + 1).to_bytes(4, "big"), "over the limit"),
        (frame_of(b"{not json"), "not JSON"),
        (frame_of(b"[1, 2]"), "holds list, not an object"),
        (frame_of(b'{"a": "\xff"}'), "not UTF-8"),
        (frame_of(b'{"a": 1}')[:-2], "ended inside a frame"),
    ],
)
async def test_a_bad_frame_is_a_frame_error_naming_it(
    socket_pair: tuple[UNIXSocketStream, UNIXSocketStream], raw: bytes, names: str
) -> None:
    sender, receiver = socket_pair
    await sender.send(raw)
    await sender.send_eof()
    with pytest.raises(FrameError, match=names):
        await FrameReader(receiver).read()


def test_a_message_over_the_limit_is_refused_before_anything_is_written() -> None:
    with pytest.raises(FrameError, match="over the limit"):
        encode_frame({"x": "y" * MAX_FRAME})
    assert json.loads(encode_frame({"a": 1})[4:]) == {"a": 1}
