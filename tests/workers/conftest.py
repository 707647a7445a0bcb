"""Fixtures of the worker tests: two ends of a real Unix socket pair."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
from anyio.abc import UNIXSocketStream


@pytest.fixture
async def socket_pair() -> AsyncIterator[tuple[UNIXSocketStream, UNIXSocketStream]]:
    """Two ends of a real Unix socket pair, closed at the end."""
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pair = (await UNIXSocketStream.from_socket(left), await UNIXSocketStream.from_socket(right))
    yield pair
    for stream in pair:
        await stream.aclose()
