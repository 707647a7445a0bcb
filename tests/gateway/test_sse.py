"""The SSE parser gives the same events however the bytes are split."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ishiki_host.gateway.sse import SSEEvent, SSEParser, aiter_sse

# A recorded-style stream: OpenAI chunks with CRLF line ends, a comment, a multi-line data event,
# multi-byte UTF-8 (Japanese, emoji), an Anthropic-style named event, lone-CR line ends, and [DONE].
RECORDED = (
    b": keep-alive\r\n\r\n"
    b'data: {"choices":[{"delta":{"content":"Hello "}}]}\r\n\r\n'
    + 'data: {"choices":[{"delta":{"content":"こんにちは 👋"}}]}\n\n'.encode()
    + b"event: content_block_delta\n"
    b'data: {"type":"content_block_delta","delta":{"partial_json":"{\\"a\\": 1"}}\n\n'
    b"data: line one\rdata: line two\r\r"
    b"id: 7\ndata: with id\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent("message", '{"choices":[{"delta":{"content":"Hello "}}]}'),
    SSEEvent("message", '{"choices":[{"delta":{"content":"こんにちは 👋"}}]}'),
    SSEEvent("content_block_delta", '{"type":"content_block_delta","delta":{"partial_json":"{\\"a\\": 1"}}'),
    SSEEvent("message", "line one\nline two"),
    SSEEvent("message", "with id", "7"),
    SSEEvent("message", "[DONE]", "7"),
]


def parse(pieces: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for piece in pieces:
        events.extend(parser.feed(piece))
    events.extend(parser.close())
    return events


def test_whole_stream() -> None:
    assert parse([RECORDED]) == EXPECTED


def test_split_at_every_byte_offset() -> None:
    for offset in range(len(RECORDED) + 1):
        assert parse([RECORDED[:offset], RECORDED[offset:]]) == EXPECTED, offset


def test_one_byte_at_a_time() -> None:
    assert parse([RECORDED[i : i + 1] for i in range(len(RECORDED))]) == EXPECTED


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(RECORDED)), max_size=30))
def test_split_anywhere_any_number_of_times(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [RECORDED[a:b] for a, b in zip([0, *points], [*points, len(RECORDED)], strict=True)]
    assert parse(pieces) == EXPECTED


def test_unterminated_last_event_is_dropped() -> None:
    assert parse([b'data: {"a": 1}\n\ndata: {"cut mid']) == [SSEEvent("message", '{"a": 1}')]


def test_lone_cr_at_end_of_stream_ends_the_line() -> None:
    assert parse([b"data: x\r\r"]) == [SSEEvent("message", "x")]
    assert parse([b"data: x\r", b"\r"]) == [SSEEvent("message", "x")]


def test_bom_and_field_without_space() -> None:
    assert parse([b"\xef\xbb\xbfdata:tight\n\n"]) == [SSEEvent("message", "tight")]


def test_event_without_data_is_not_dispatched() -> None:
    assert parse([b"event: ping\n\ndata: real\n\n"]) == [SSEEvent("message", "real")]


@pytest.mark.anyio
async def test_aiter_sse() -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        for i in range(0, len(RECORDED), 7):
            yield RECORDED[i : i + 7]

    assert [event async for event in aiter_sse(chunks())] == EXPECTED
