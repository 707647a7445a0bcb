"""The host's HTTP server on a real loopback socket: routing below a mount, what it answers for the handler
(404, 405, 413, 503, 500), mounts that come and go, a failed bind, and the loops it runs on."""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from ishiki_host import HttpRequest, HttpResponse
from ishiki_host.config.host import HttpSettings
from ishiki_host.errors import IngressError
from ishiki_host.eventloop import backend_options, uvloop_installed
from ishiki_host.ingress import HttpIngress
from ishiki_host.testing import FakeChannelHost, serve_http

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Both loops ``ishiki run`` runs the host on."""
    if request.param == "uvloop" and not uvloop_installed():
        pytest.skip("uvloop is not installed")
    return ("asyncio", backend_options(request.param))


async def echo(request: HttpRequest) -> HttpResponse:
    seen = f"{request.method} {request.path} q={dict(request.query)} items={list(request.query_items)}"
    return HttpResponse(200, f"{seen} sig={request.headers.get('x-sig')} body={request.body.decode()}")


async def test_a_route_gets_the_path_below_its_mount_the_headers_the_query_and_the_raw_body() -> None:
    async with serve_http() as ingress, ingress.mount("/hooks/test/0") as mount:
        mount.route("/update", echo, methods=("GET", "POST"))
        mount.route("/", echo)
        assert mount.local_url == f"{ingress.base_url}/hooks/test/0"
        async with httpx.AsyncClient() as client:
            posted = await client.post(
                f"{mount.local_url}/update?a=1&a=2&b=3", content=b'{"x": 1}', headers={"X-Sig": "s"}
            )
            root = await client.post(mount.local_url or "", content=b"")
            health = await client.get(f"{ingress.base_url}/healthz")
    assert posted.status_code == 200
    assert (
        posted.text
        == "POST /update q={'a': '1', 'b': '3'} items=[('a', '1'), ('a', '2'), ('b', '3')] sig=s body={\"x\": 1}"
    )
    assert root.text.startswith("POST / ")
    assert (health.status_code, health.text) == (200, "ok\n")


async def test_what_the_host_answers_without_the_handler() -> None:
    async with serve_http() as ingress, ingress.mount("/hooks/test/1") as mount:
        mount.route("/update", echo)
        async with httpx.AsyncClient() as client:
            unknown = await client.post(f"{mount.local_url}/other")
            beside = await client.post(f"{ingress.base_url}/hooks/test/10/update")  # not below /hooks/test/1
            wrong_method = await client.get(f"{mount.local_url}/update")
    assert unknown.status_code == 404
    assert beside.status_code == 404
    assert wrong_method.status_code == 405
    assert wrong_method.headers["allow"] == "POST"


async def test_a_body_over_the_cap_is_413_declared_or_streamed() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(8):
            yield b"x" * 1024

    async with serve_http(max_body_bytes=4096) as ingress, ingress.mount("/hooks/test/0") as mount:
        mount.route("/update", echo)
        mount.route("/small", echo, max_body_bytes=10)
        async with httpx.AsyncClient() as client:
            declared = await client.post(f"{mount.local_url}/update", content=b"x" * 5000)
            streamed = await client.post(f"{mount.local_url}/update", content=chunks())  # chunked: no length
            small = await client.post(f"{mount.local_url}/small", content=b"x" * 11)
            fits = await client.post(f"{mount.local_url}/update", content=b"x" * 4096)
    assert declared.status_code == 413
    assert streamed.status_code == 413
    assert small.status_code == 413
    assert fits.status_code == 200


async def test_a_handler_past_its_deadline_is_answered_503_and_the_server_serves_on() -> None:
    never = anyio.Event()

    async def stuck(request: HttpRequest) -> HttpResponse:
        await never.wait()
        return HttpResponse(200, "too late")

    async with serve_http() as ingress, ingress.mount("/hooks/test/0") as mount:
        mount.route("/stuck", stuck, deadline_seconds=0.2)
        mount.route("/update", echo)
        async with httpx.AsyncClient() as client:
            late = await client.post(f"{mount.local_url}/stuck")
            after = await client.post(f"{mount.local_url}/update", content=b"still here")
    assert late.status_code == 503
    assert late.headers["retry-after"] == "5"
    assert after.text.endswith("body=still here")


async def test_a_client_that_stops_sending_its_body_is_cut_off_at_the_deadline() -> None:
    async with serve_http() as ingress, ingress.mount("/hooks/test/0") as mount:
        mount.route("/update", echo, deadline_seconds=0.2)
        assert ingress.address is not None
        head = b"POST /hooks/test/0/update HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789"
        async with await anyio.connect_tcp(*ingress.address) as stream:
            await stream.send(head)  # 10 of the 100 bytes, then nothing
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive()
    assert answer.startswith(b"HTTP/1.1 503")


async def test_a_handler_that_raises_is_500_without_its_internals(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(request: HttpRequest) -> HttpResponse:
        raise RuntimeError("the secret is hunter2")

    async with serve_http() as ingress, ingress.mount("/hooks/test/0") as mount:
        mount.route("/update", broken)
        with caplog.at_level(logging.ERROR, "ishiki_host.ingress"):
            async with httpx.AsyncClient() as client:
                answer = await client.post(f"{mount.local_url}/update")
    assert answer.status_code == 500
    assert "hunter2" not in answer.text
    assert "RuntimeError: the secret is hunter2" in caplog.text


async def test_a_prefix_is_held_once_and_leaving_the_mount_removes_its_routes() -> None:
    async with serve_http() as ingress:
        async with ingress.mount("/hooks/test/0") as mount:
            mount.route("/update", echo)
            with pytest.raises(IngressError, match="already mounted"):
                async with ingress.mount("/hooks/test/0"):
                    pass
            assert ingress.status()["mounts"] == ["/hooks/test/0"]
        async with httpx.AsyncClient() as client:
            gone = await client.post(f"{ingress.base_url}/hooks/test/0/update")
        async with ingress.mount("/hooks/test/0") as again:  # free again (a restarted connection)
            again.route("/update", echo)
    assert gone.status_code == 404
    assert ingress.status()["mounts"] == []


@pytest.mark.parametrize("prefix", ["hooks", "/", "/hooks/", "/a//b", "/a/../b", "/a b", "/a?b", "/a/%2e"])
def test_a_malformed_prefix_or_route_is_refused(prefix: str) -> None:
    ingress = HttpIngress(HttpSettings(("127.0.0.1", 0)))
    with pytest.raises(ValueError, match="mount prefix"):
        ingress.mount(prefix)
    mount = ingress.mount("/hooks/test/0")
    for path in ("update", "/a?b"):
        with pytest.raises(ValueError, match="a path starting with /"):
            mount.route(path, echo)
    mount.route("/update", echo)
    with pytest.raises(ValueError, match="routed already"):
        mount.route("/update", echo)
    with pytest.raises(ValueError, match="at least one method"):
        mount.route("/other", echo, methods=())


async def test_without_http_listen_a_mount_says_what_to_set(tmp_path: Path) -> None:
    host = FakeChannelHost(tmp_path)
    with pytest.raises(IngressError, match=r"set http\.listen in ishiki\.yaml"):
        async with host.http_mount():
            pass


async def test_a_bind_that_fails_leaves_the_host_running_and_every_mount_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ingress = HttpIngress(HttpSettings(("127.0.0.1", port)))
        async with anyio.create_task_group() as tg:
            await tg.start(ingress.run)  # reports readiness and returns: the host goes on
    assert ingress.state == "failed"
    assert ingress.status()["error"]
    assert f"cannot listen on 127.0.0.1:{port}" in caplog.text
    with pytest.raises(IngressError, match=f"could not listen on 127.0.0.1:{port}"):
        async with ingress.mount("/hooks/test/0"):
            pass


async def test_the_server_leaves_the_hosts_signal_handlers_alone_and_closes_its_port_when_stopped() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    async with serve_http() as ingress:
        during = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        address = ingress.address
    assert during == before
    assert address is not None
    assert ingress.state == "stopped"
    with pytest.raises(OSError):
        await anyio.connect_tcp(*address)
