"""A Server-Sent Events parser that accepts bytes split anywhere.

It follows the WHATWG event-stream rules that matter for model APIs: lines end in ``\\r\\n``, ``\\n`` or
``\\r`` (a ``\\r`` at the end of one chunk and ``\\n`` at the start of the next are one line end); ``data``
lines of one event are joined with ``\\n``; lines starting with ``:`` are comments; a blank line completes
the event; an event without its blank line at end of stream is dropped (the stream was cut). UTF-8 sequences
may be split between chunks.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator
from dataclasses import dataclass

__all__ = ["SSEEvent", "SSEParser", "aiter_sse"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One complete event: its ``event`` name (``message`` when unnamed) and its ``data``."""

    event: str
    data: str
    id: str | None = None


class SSEParser:
    """Incremental parser: ``feed`` bytes as they arrive, get the events they complete."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._first = True

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse a chunk; returns the events whose blank line it completed."""
        text = self._decoder.decode(chunk)
        if self._first and text:
            text = text.removeprefix("\ufeff")
            self._first = False
        self._buffer += text
        events: list[SSEEvent] = []
        while True:
            end = self._line_end()
            if end is None:
                return events
            line_end, next_start = end
            line = self._buffer[:line_end]
            self._buffer = self._buffer[next_start:]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def _line_end(self) -> tuple[int, int] | None:
        """Where the first complete line ends and the next begins, if a full line is buffered."""
        buffer = self._buffer
        cr, lf = buffer.find("\r"), buffer.find("\n")
        if lf != -1 and (cr == -1 or lf < cr):
            return lf, lf + 1
        if cr == -1:
            return None
        if cr + 1 < len(buffer):
            return cr, cr + 2 if buffer[cr + 1] == "\n" else cr + 1
        return None  # a lone trailing \r may be the first half of \r\n

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._complete_event()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id = value
        return None

    def _complete_event(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent(self._event or "message", "\n".join(self._data), self._id)
        self._event, self._data = "", []
        return event

    def close(self) -> list[SSEEvent]:
        """End of stream: a final line ended by a lone ``\\r`` still counts; an unterminated event is dropped."""
        self._buffer += self._decoder.decode(b"", final=True)
        events: list[SSEEvent] = []
        if self._buffer.endswith("\r"):
            events.extend(self.feed(b"\n"))
        return events


async def aiter_sse(chunks: AsyncIterator[bytes]) -> AsyncIterator[SSEEvent]:
    """The events of a byte stream (e.g. ``response.aiter_bytes()``)."""
    parser = SSEParser()
    async for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
    for event in parser.close():
        yield event
