"""Streams on the host's HTTP server, on a real loopback socket read by httpx as it streams: server-sent events
and their formatting, the cap and deadline before a stream starts, failures before and during one, keep-alive
comments, and the two ways a stream ends early (the host stopping, the client leaving), on both loops."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from ishiki_host import HttpRequest, HttpStream, sse_event
from ishiki_host.eventloop import backend_options, uvloop_installed
from ishiki_host.ingress.server import GRACE_SECONDS
from ishiki_host.testing import serve_http

pytestmark = pytest.mark.anyio

CAP = 10.0  # the most any test may take: each one waits on events, this only stops a hang


@pytest.fixture(params=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Both loops ``ishiki run`` runs the host on."""
    if request.param == "uvloop" and not uvloop_installed():
        pytest.skip("uvloop is not installed")
    return ("asyncio", backend_options(request.param))


def parse_sse(text: str) -> list[dict[str, str]]:
    """The events of a ``text/event-stream`` body as a browser sees them (comments dropped, ``data`` joined)."""
    events = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        data: list[str] = []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            else:
                fields[name] = value
        if data or fields:
            events.append({**fields, "data": "\n".join(data)})
    return events


class Producer:
    """An SSE producer that says whether it ran and whether its ``finally`` did: ``first`` events, then it waits
    for ``release`` (forever unless the test sets it), then ``then``."""

    def __init__(self, first: list[str], then: list[str] | None = None):
        self.first, self.then = first, then or []
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.closed = anyio.Event()

    async def events(self) -> AsyncIterator[str]:
        self.started.set()
        try:
            for text in self.first:
                yield sse_event(text)
            await self.release.wait()
            for text in self.then:
                yield sse_event(text)
        finally:
            self.closed.set()

    async def handler(self, request: HttpRequest) -> HttpStream:
        return HttpStream.sse(self.events())


def test_an_event_has_its_fields_then_a_data_line_per_line_then_a_blank_line() -> None:
    event = sse_event("one\ntwo\r\nthree\rfour", event="reply", id="7", retry=3000)
    assert event == "event: reply\nid: 7\nretry: 3000\ndata: one\ndata: two\ndata: three\ndata: four\n\n"
    assert sse_event("") == "data: \n\n"
    assert sse_event("ends with a break\n") == "data: ends with a break\ndata: \n\n"  # the browser keeps the \n
    assert parse_sse(sse_event("a\nb") + sse_event("c")) == [{"data": "a\nb"}, {"data": "c"}]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"event": "a\nb"}, "event name"), ({"id": "1\r"}, "the id"), ({"id": "a\x00"}, "NUL"), ({"retry": -1}, "retry")],
)
def test_an_event_that_would_break_the_stream_is_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sse_event("x", **kwargs)  # type: ignore[arg-type]


def test_an_sse_stream_says_what_it_is_and_a_keep_alive_must_be_above_zero() -> None:
    async def nothing() -> AsyncIterator[str]:
        yield ""

    stream = HttpStream.sse(nothing(), headers={"X-Extra": "1", "Cache-Control": "no-store"})
    assert stream.media_type == "text/event-stream"
    assert dict(stream.headers) == {"Cache-Control": "no-store", "X-Accel-Buffering": "no", "X-Extra": "1"}
    assert stream.keep_alive_seconds == 15.0
    with pytest.raises(ValueError, match="above 0"):
        HttpStream(nothing(), keep_alive_seconds=0)


async def test_a_client_reads_every_event_and_the_producer_is_closed_at_its_end() -> None:
    producer = Producer([f"event {n}\nline two" for n in range(5)])
    producer.release.set()
    with anyio.fail_after(CAP):
        async with serve_http() as ingress, ingress.mount("/dash") as mount:
            mount.route("/live", producer.handler, methods=("GET",))
            async with httpx.AsyncClient() as client, client.stream("GET", f"{mount.local_url}/live") as answer:
                body = "".join([text async for text in answer.aiter_text()])
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert (answer.headers["cache-control"], answer.headers["x-accel-buffering"]) == ("no-cache", "no")
    assert parse_sse(body) == [{"data": f"event {n}\nline two"} for n in range(5)]
    assert producer.closed.is_set()


async def test_a_plain_stream_sends_its_chunks_with_its_status_and_headers() -> None:
    async def chunks() -> AsyncIterator[bytes | str]:
        yield b"bytes, "
        yield "then text: é"

    async def handler(request: HttpRequest) -> HttpStream:
        return HttpStream(chunks(), status=201, headers={"X-Kind": "plain"})

    with anyio.fail_after(CAP):
        async with serve_http() as ingress, ingress.mount("/dash") as mount:
            mount.route("/plain", handler)
            async with httpx.AsyncClient() as client:
                answer = await client.post(f"{mount.local_url}/plain")
    assert (answer.status_code, answer.headers["x-kind"], answer.text) == (201, "plain", "bytes, then text: é")
    assert answer.headers["transfer-encoding"] == "chunked"


async def test_the_cap_and_the_deadline_hold_until_the_stream_is_returned_and_not_after() -> None:
    producer = Producer(["early"])
    never = anyio.Event()

    async def stuck(request: HttpRequest) -> HttpStream:
        await never.wait()
        return HttpStream.sse(producer.events())

    async def slow_events() -> AsyncIterator[str]:
        yield sse_event("first")
        await anyio.sleep(0.3)  # the stream outlives the route's deadline of 0.1 s: that is what is tested
        yield sse_event("after the deadline")

    async def slow(request: HttpRequest) -> HttpStream:
        return HttpStream.sse(slow_events())

    with anyio.fail_after(CAP):
        async with serve_http() as ingress, ingress.mount("/dash") as mount:
            mount.route("/capped", producer.handler, max_body_bytes=10)
            mount.route("/stuck", stuck, deadline_seconds=0.1)
            mount.route("/slow", slow, deadline_seconds=0.1)
            async with httpx.AsyncClient() as client:
                too_large = await client.post(f"{mount.local_url}/capped", content=b"x" * 11)
                late = await client.post(f"{mount.local_url}/stuck")
                outlived = await client.post(f"{mount.local_url}/slow")
    assert too_large.status_code == 413
    assert late.status_code == 503
    assert not producer.started.is_set()
    assert outlived.status_code == 200
    assert parse_sse(outlived.text) == [{"data": "first"}, {"data": "after the deadline"}]


async def test_a_handler_that_raises_before_its_stream_is_500(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(request: HttpRequest) -> HttpStream:
        raise RuntimeError("no stream for you")

    with anyio.fail_after(CAP), caplog.at_level(logging.ERROR, "ishiki_host.ingress"):
        async with serve_http() as ingress, ingress.mount("/dash") as mount:
            mount.route("/live", broken, methods=("GET",))
            async with httpx.AsyncClient() as client:
                answer = await client.get(f"{mount.local_url}/live")
    assert answer.status_code == 500
    assert "no stream" not in answer.text
    assert "RuntimeError: no stream for you" in caplog.text


@pytest.mark.parametrize("failure", ["raises", "yields a number"])
async def test_a_stream_that_fails_midway_ends_its_body_and_is_logged_once(
    failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    closed = anyio.Event()

    async def events() -> AsyncIterator[str]:
        try:
            yield sse_event("before")
            if failure == "raises":
                raise RuntimeError("the bus went away")
            yield 42  # type: ignore[misc]  # an untyped producer's mistake
        finally:
            closed.set()

    async def handler(request: HttpRequest) -> HttpStream:
        return HttpStream.sse(events())

    with anyio.fail_after(CAP), caplog.at_level(logging.ERROR, "ishiki_host.ingress"):
        async with serve_http() as ingress, ingress.mount("/dash") as mount:
            mount.route("/live", handler, methods=("GET",))
            async with httpx.AsyncClient() as client:
                answer = await client.get(f"{mount.local_url}/live")  # a body cut short would raise here
                after = await client.get(f"{ingress.base_url}/healthz")
    assert parse_sse(answer.text) == [{"data": "before"}]
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR]  # uvicorn's included: none of its own
    assert [r.getMessage() for r in failed] == ["the stream of GET /dash/live failed; its body ends here"]
    assert failed[0].exc_info is not None
    assert closed.is_set()
    assert after.status_code == 200


async def test_an_idle_stream_sends_keep_alive_comments_and_then_its_events() -> None:
    producer = Producer(["hello"], then=["bye"])

    async def handler(request: HttpRequest) -> HttpStream:
        return HttpStream.sse(producer.events(), keep_alive_seconds=0.02)

    seen: list[str] = []
    with anyio.fail_after(CAP):
        async with serve_http() as ingress, ingress.mount("/dash") as mount:
            mount.route("/live", handler, methods=("GET",))
            async with httpx.AsyncClient() as client, client.stream("GET", f"{mount.local_url}/live") as answer:
                async for line in answer.aiter_lines():
                    seen.append(line)
                    if seen.count(": keep-alive") == 2:
                        producer.release.set()  # two comments while idle: now the last event, then the end
    assert seen[:2] == ["data: hello", ""]
    assert seen[-2:] == ["data: bye", ""]
    assert seen.count(": keep-alive") >= 2
    assert parse_sse("\n".join(seen)) == [{"data": "hello"}, {"data": "bye"}]


async def test_the_host_stopping_ends_every_open_stream_cleanly(caplog: pytest.LogCaptureFixture) -> None:
    producers = [Producer(["hello"]), Producer(["hi"])]
    bodies: dict[int, str] = {}
    reading = [anyio.Event(), anyio.Event()]

    async def read(client: httpx.AsyncClient, url: str, n: int) -> None:
        async with client.stream("GET", url) as answer:
            text = ""
            async for chunk in answer.aiter_text():  # raises RemoteProtocolError if the body is cut short
                text += chunk
                reading[n].set()
            bodies[n] = text

    with anyio.fail_after(CAP), caplog.at_level(logging.INFO, "uvicorn.error"):
        async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
            async with serve_http() as ingress, ingress.mount("/dash") as mount:
                for n, producer in enumerate(producers):
                    mount.route(f"/live/{n}", producer.handler, methods=("GET",))
                    tg.start_soon(read, client, f"{mount.local_url}/live/{n}", n)
                    await reading[n].wait()
                assert ingress.status()["streams"] == 2
                stopping = anyio.current_time()
            stopped = anyio.current_time() - stopping
    assert all(p.closed.is_set() for p in producers)
    assert [parse_sse(bodies[n]) for n in (0, 1)] == [[{"data": "hello"}], [{"data": "hi"}]]
    assert ingress.status()["streams"] == 0
    assert stopped < GRACE_SECONDS  # ended by the host, not cut off by uvicorn after its grace
    assert "timeout graceful shutdown exceeded" not in caplog.text


async def test_a_client_that_leaves_closes_the_producer_at_once() -> None:
    producer = Producer(["hello"])
    with anyio.fail_after(CAP):
        async with serve_http() as ingress, ingress.mount("/dash") as mount:
            mount.route("/live", producer.handler, methods=("GET",))
            async with httpx.AsyncClient() as client:
                async with client.stream("GET", f"{mount.local_url}/live") as answer:
                    async for _ in answer.aiter_text():
                        break  # leaves with the stream open and the producer waiting (15 s to a keep-alive)
                await producer.closed.wait()
                await anyio.wait_all_tasks_blocked()
                assert ingress.status()["streams"] == 0
                again = await client.get(f"{ingress.base_url}/healthz")
    assert again.status_code == 200
