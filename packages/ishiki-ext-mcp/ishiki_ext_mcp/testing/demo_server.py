"""A small MCP server (official SDK) for tests, benchmarks and trying the extension out.

    python -m ishiki_ext_mcp.testing.demo_server [--legacy] [--noisy] [--http | --sse] [--port N]

Tools: ``add`` and ``echo`` (plain answers), ``whoami`` (pid, the ``DEMO_SECRET`` variable, the
``x-demo`` request header over HTTP), ``fail`` (an ``isError`` result), ``grow`` (adds a tool, then sends
``tools/list_changed``), ``crash`` (the process exits with code 3 mid-call), ``hang`` (never answers, but the
server stays healthy) and ``freeze`` (blocks the server's event loop: it answers nothing any more).
Resource: ``note://greeting``; template ``note://{name}``.

``--noisy`` prints two log lines on stdout first, as badly behaved servers do. ``--legacy`` serves the
``initialize`` handshake only (the pre-2026 protocol), like an older server: the 2026 ``server/discover``
probe is refused and clients fall back. ``--http``/``--sse`` serve on 127.0.0.1 at a free port (or
``--port``) and print ``http://127.0.0.1:<port>/mcp`` (or ``/sse``) on stdout once listening.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

server = MCPServer("demo", instructions="A demo server: arithmetic, echoes and ways to fail.")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Repeat the text."""
    return text


@server.tool()
def whoami(ctx: Context) -> str:
    """The server's pid, DEMO_SECRET and the x-demo header of the request (HTTP only)."""
    request = getattr(ctx.request_context, "request", None)
    header = request.headers.get("x-demo") if request is not None else None
    return f"pid={os.getpid()} secret={os.environ.get('DEMO_SECRET')} header={header} cwd={os.getcwd()}"


@server.tool()
def fail(reason: str) -> str:
    """Fail with the reason (an error result)."""
    raise ToolError(reason)


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called NAME and announce the change."""
    server.add_tool(lambda: name, name=name, description=f"A tool added at run time ({name}).")
    await ctx.notify_tools_changed()  # 2026 protocol: subscriptions/listen streams
    await ctx.session.send_tool_list_changed()  # handshake era: a session notification
    return f"added {name}"


@server.tool()
def crash() -> str:
    """Exit the process with code 3 before answering."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer (the server keeps serving other requests)."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
async def freeze() -> str:
    """Block the server's event loop: nothing is answered any more."""
    time.sleep(3600)  # noqa: ASYNC251 - blocking the loop is the point
    return "unreachable"


@server.resource("note://greeting", mime_type="text/plain", description="A friendly greeting.")
def greeting() -> str:
    """The greeting."""
    return "hello from the resource"


@server.resource("note://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note by name."""
    return f"note {name}"


async def _serve_legacy_stdio() -> None:
    """The handshake-era loop only: a 2026 ``server/discover`` probe is refused, as an older server would."""
    low = server._lowlevel_server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        await serve_loop(low, read, write, lifespan_state=state, init_options=low.create_initialization_options())


def _serve_http(kind: str, port: int) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts: the printed URL works at once
    port = sock.getsockname()[1]
    app = server.sse_app() if kind == "sse" else server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    print(f"http://127.0.0.1:{port}/{'sse' if kind == 'sse' else 'mcp'}", flush=True)
    uv.run(sockets=[sock])


def main(argv: list[str] | None = None) -> None:
    """Run the demo server on stdio (default) or HTTP."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--legacy", action="store_true", help="refuse server/discover (pre-2026 clients only)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1")
    group.add_argument("--sse", action="store_true", help="SSE on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="the HTTP port (default: a free one)")
    parser.add_argument("--noisy", action="store_true", help="print log lines on stdout (as badly behaved servers do)")
    args = parser.parse_args(argv)
    if args.noisy:
        print("demo server starting (a log line on stdout)\nstill starting", flush=True)
    if args.http or args.sse:
        _serve_http("sse" if args.sse else "http", args.port)
    elif args.legacy:
        anyio.run(_serve_legacy_stdio)
    else:
        server.run()


if __name__ == "__main__":
    main()
