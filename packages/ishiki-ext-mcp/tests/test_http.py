"""HTTP servers: ``url`` and ``headers`` (with ``${VAR}``), streamable HTTP and SSE, reconnecting after a loss.

The demo server runs in a subprocess serving HTTP on 127.0.0.1 and prints its URL once listening.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from ishiki_host import FakeClock

from ishiki_ext_mcp.testing import DEADLINE, DEMO_MODULE, ConfigDir, RuntimeFactory, until

pytestmark = pytest.mark.anyio

StartServer = Callable[..., Awaitable[tuple[Process, str]]]


@pytest.fixture
async def http_server() -> AsyncIterator[StartServer]:
    """``await http_server("--http"|"--sse", port=0)``: a demo server over HTTP; killed after the test."""
    async with AsyncExitStack() as stack:

        async def start(kind: str, port: int = 0) -> tuple[Process, str]:
            args = [sys.executable, "-m", DEMO_MODULE, kind, "--port", str(port)]
            process = await stack.enter_async_context(await anyio.open_process(args))
            stack.callback(kill, process)
            assert process.stdout is not None
            with anyio.fail_after(DEADLINE):
                line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1024)
            return process, line.decode().strip()

        yield start


def kill(process: Process) -> None:
    if process.returncode is None:
        process.kill()


async def test_headers_are_expanded_and_sent(
    cfg: ConfigDir, open_runtime: RuntimeFactory, http_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ISHIKI_TEST_HEADER", "from-the-environment")
    _process, url = await http_server("--http")
    cfg.write({"web": {"url": url, "headers": {"x-demo": "${ISHIKI_TEST_HEADER}"}, "trust": "owner"}})
    async with open_runtime() as (_rt, instance):
        tools = {tool.name: tool for tool in instance.ishiki_tools()}
        whoami = await tools["web__whoami"].handler({}, None)  # type: ignore[arg-type]
        status = instance.ishiki_status()
    assert "header=from-the-environment" in whoami.content
    assert {tool.trust for tool in tools.values()} == {"owner"}
    assert status == [f"mcp web: ready, 8 tools, 1 resource ({url})"]


async def test_an_sse_server(cfg: ConfigDir, open_runtime: RuntimeFactory, http_server: StartServer) -> None:
    _process, url = await http_server("--sse")
    cfg.write({"old": {"type": "sse", "url": url, "headers": {"x-demo": "sse"}}})
    async with open_runtime() as (_rt, instance):
        tools = {tool.name: tool for tool in instance.ishiki_tools()}
        result = await tools["old__whoami"].handler({}, None)  # type: ignore[arg-type]
    assert "header=sse" in result.content


async def test_a_lost_server_is_reconnected_with_back_off(
    cfg: ConfigDir, open_runtime: RuntimeFactory, http_server: StartServer, fake_clock: FakeClock
) -> None:
    process, url = await http_server("--http")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    cfg.write({"web": {"url": url, "timeout_ms": 500}})
    async with open_runtime() as (_rt, instance):
        runner = instance.runners["web"]
        add = next(tool for tool in instance.ishiki_tools() if tool.name == "web__add")
        process.kill()
        await process.wait()
        # the change subscription's stream breaks: the loss is noticed without a call
        await until(runner, lambda r: r.next_attempt is not None)
        assert instance.ishiki_status()[0].startswith("mcp web: restarting: stopped serving: ")
        assert instance.ishiki_status()[0].endswith("; next attempt in 1 s")
        async with anyio.create_task_group() as tg:

            async def call_while_down() -> None:
                with pytest.raises(
                    Exception, match=r"MCP server 'web' is restarting \(.*\) and was not back within 0.5 s"
                ):
                    await add.handler({"a": 1, "b": 1}, None)  # type: ignore[arg-type]

            tg.start_soon(call_while_down)
            await fake_clock.wait_for_sleepers(2)  # the back-off and the call's deadline
            await fake_clock.advance(0.5)
        await http_server("--http", port=port)
        await fake_clock.advance(0.5)
        await until(runner, lambda r: r.state == "ready")
        assert (await add.handler({"a": 1, "b": 1}, None)).content == "2"  # type: ignore[arg-type]
