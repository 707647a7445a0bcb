"""Frames on the link between a supervisor and a worker: a 4-byte big-endian length, then that much UTF-8 JSON
whose top level is an object.

``write_frame`` sends one; ``FrameReader.read`` gives the next one, ``None`` at a clean end of the stream
(between frames). Whatever does not parse (longer than ``MAX_FRAME``, not UTF-8, not JSON, not an object, the
stream ending inside a frame) is a ``FrameError`` naming what was wrong: the link is reset by its owner, and
whoever sent something that was lost with it tries again from what is durable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

import anyio

from ishiki_host.channels.codec import FrameError

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream, ByteSendStream

    from ishiki_host.jsontypes import Json

__all__ = ["MAX_FRAME", "FrameError", "FrameReader", "encode_frame", "write_frame"]

MAX_FRAME = 32 * 1024 * 1024
_HEADER = 4


def encode_frame(message: Mapping[str, Json]) -> bytes:
    """The bytes of one frame holding ``message`` (``FrameError`` when it is over ``MAX_FRAME``)."""
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(body) > MAX_FRAME:
        raise FrameError(f"a frame of {len(body)} bytes is over the limit of {MAX_FRAME}")
    return len(body).to_bytes(_HEADER, "big") + body


async def write_frame(stream: ByteSendStream, message: Mapping[str, Json]) -> None:
    """Send one frame (the caller keeps frames from interleaving)."""
    await stream.send(encode_frame(message))


class FrameReader:
    """The frames of one stream, in order (see the module docstring)."""

    def __init__(self, stream: ByteReceiveStream):
        self._stream = stream
        self._buffer = bytearray()

    async def read(self) -> dict[str, Json] | None:
        """The next frame's object; ``None`` when the stream ended between frames."""
        if not await self._fill(_HEADER, at_start=True):
            return None
        size = int.from_bytes(self._buffer[:_HEADER], "big")
        if size > MAX_FRAME:
            raise FrameError(f"a frame announces {size} bytes, over the limit of {MAX_FRAME}")
        await self._fill(_HEADER + size, at_start=False)
        body = bytes(self._buffer[_HEADER : _HEADER + size])
        del self._buffer[: _HEADER + size]
        try:
            message = json.loads(body.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise FrameError(f"a frame of {size} bytes is not UTF-8: {exc.reason} at byte {exc.start}") from None
        except ValueError as exc:
            raise FrameError(f"a frame of {size} bytes is not JSON: {exc}") from None
        if not isinstance(message, dict):
            raise FrameError(f"a frame of {size} bytes holds {type(message).__name__}, not an object")
        return cast("dict[str, Json]", message)

    async def _fill(self, wanted: int, *, at_start: bool) -> bool:
        """Read until ``wanted`` bytes are buffered; False at a clean end before a frame began."""
        while len(self._buffer) < wanted:
            try:
                chunk = await self._stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                if at_start and not self._buffer:
                    return False
                raise FrameError(f"the stream ended inside a frame ({len(self._buffer)} of {wanted} bytes)") from None
            self._buffer += chunk
        return True
