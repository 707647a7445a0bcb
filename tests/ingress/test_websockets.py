"""WebSocket routes of the host's HTTP server on a real loopback socket: the handler answers the handshake
(accept, or refuse with a status), talks both ways, sees the link close, and leaving the mount closes the links
still open."""

from __future__ import annotations

import anyio
import pytest
import websockets
from websockets.asyncio.client import connect

from ishiki_host import HttpWebSocket
from ishiki_host.eventloop import backend_options, uvloop_installed
from ishiki_host.testing import serve_http

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Both loops ``ishiki run`` runs the host on (uvicorn and ``websockets`` are asyncio's)."""
    if request.param == "uvloop" and not uvloop_installed():
        pytest.skip("uvloop is not installed")
    return ("asyncio", backend_options(request.param))


def ws_url(http_url: str) -> str:
    return "ws" + http_url.removeprefix("http")


async def test_an_accepted_link_talks_both_ways_and_the_handler_sees_it_close() -> None:
    ended = anyio.Event()
    seen: list[object] = []

    async def echo(socket: HttpWebSocket) -> None:
        seen.append((socket.path, socket.headers.get("x-self-id"), dict(socket.query)))
        await socket.accept()
        while (message := await socket.receive()) is not None:
            await socket.send(f"echo {message!r}")
        seen.append("closed")
        ended.set()

    async with serve_http() as ingress, ingress.mount("/hooks/onebot/0") as mount:
        mount.websocket("/", echo)
        url = ws_url(mount.local_url or "") + "?access_token=t"
        async with connect(url, additional_headers={"X-Self-ID": "10001"}) as client:
            await client.send("hello")
            assert await client.recv() == "echo 'hello'"
            await client.send(b"\x01")
            assert await client.recv() == "echo b'\\x01'"
        with anyio.fail_after(5):
            await ended.wait()
    assert seen == [("/", "10001", {"access_token": "t"}), "closed"]


async def test_a_refused_handshake_gets_the_status_and_a_path_without_a_route_gets_404() -> None:
    async def refuse(socket: HttpWebSocket) -> None:
        await socket.refuse(401, "wrong access token")

    async with serve_http() as ingress, ingress.mount("/hooks/onebot/0") as mount:
        mount.websocket("/", refuse)
        base = ws_url(mount.local_url or "")
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with connect(base):
                pass
        with pytest.raises(websockets.InvalidStatus) as missing:
            async with connect(base + "/other"):
                pass
    assert refused.value.response.status_code == 401
    assert b"wrong access token" in refused.value.response.body
    assert missing.value.response.status_code == 404


async def test_leaving_the_mount_closes_the_links_with_going_away() -> None:
    accepted = anyio.Event()

    async def hold(socket: HttpWebSocket) -> None:
        await socket.accept()
        accepted.set()
        await socket.receive()

    async with serve_http() as ingress:
        mount = ingress.mount("/hooks/onebot/0")
        mount.websocket("/", hold)
        async with mount:
            client = await connect(ws_url(mount.local_url or ""))
            with anyio.fail_after(5):
                await accepted.wait()
        with pytest.raises(websockets.ConnectionClosed) as closed:
            with anyio.fail_after(5):
                await client.recv()
        assert len(mount.sockets) == 0
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1001


async def test_a_handler_that_raises_or_never_answers_leaves_no_link_open() -> None:
    async def broken(socket: HttpWebSocket) -> None:
        raise RuntimeError("boom")

    async def accepts_then_fails(socket: HttpWebSocket) -> None:
        await socket.accept()
        raise RuntimeError("boom")

    async with serve_http() as ingress, ingress.mount("/hooks/onebot/0") as mount:
        mount.websocket("/", broken)
        mount.websocket("/late", accepts_then_fails)
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with connect(ws_url(mount.local_url or "")):
                pass
        async with connect(ws_url(mount.local_url or "") + "/late") as client:
            with pytest.raises(websockets.ConnectionClosed):
                with anyio.fail_after(5):
                    await client.recv()
    assert refused.value.response.status_code == 500


def test_a_websocket_path_is_checked_like_a_route() -> None:
    from ishiki_host.config.host import HttpSettings
    from ishiki_host.ingress import HttpIngress

    mount = HttpIngress(HttpSettings()).mount("/hooks/onebot/0")

    async def handler(socket: HttpWebSocket) -> None:
        await socket.accept()

    mount.websocket("/", handler)
    with pytest.raises(ValueError, match="routed already"):
        mount.websocket("/", handler)
    with pytest.raises(ValueError, match="a path starting with /"):
        mount.websocket("ws", handler)
