"""MCP overhead: a tool call through the mcp extension vs the same call with the SDK client directly.

Both sides start the package's demo MCP server (``ishiki_ext_mcp.testing.demo_server``) over stdio and call
its ``add`` tool in sequence. The direct side is ``mcp.Client(StdioServerParameters(...)).call_tool``; the
extension side is the ``demo__add`` tool handler a persona's turn runs, mounted on a real runtime
(``RuntimeHarness``): the supervisor's live-client lookup, the call deadline on the host clock, the SDK call
over the extension's own stdio transport, and rendering into a ``ToolResult``. Each side has its own
server process. The runs are paired; the target (<= 1.25) is this project's own, the issue names none.

    .venv/bin/python bench/mcp_overhead.py [--quick] [--calls N] [--runs N] [--json PATH]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import Bench, run
from ishiki_ext_mcp import MCPExtension
from ishiki_ext_mcp.testing import DEMO_MODULE, ConfigDir, ConfigHarness, demo
from mcp import Client, StdioServerParameters

from ishiki_host import HostServices
from ishiki_host.core.clock import SystemClock
from ishiki_host.testing.models import ScriptedModel

ARGS = {"a": 20, "b": 22}


async def direct_latencies(client: Client, calls: int) -> list[float]:
    latencies = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await client.call_tool("add", ARGS)
        latencies.append(time.perf_counter() - start)
        assert result.content[0].text == "42"  # type: ignore[union-attr]
    return latencies


async def extension_latencies(tool: Any, calls: int) -> list[float]:
    latencies = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await tool.handler(ARGS, None)
        latencies.append(time.perf_counter() - start)
        assert result.content == "42"
    return latencies


async def measure_in(bench: Bench, root: Path) -> None:
    """Paired runs (order alternating) of the extension's and the SDK client's p50 per call."""
    runs = bench.runs(quick=3, full=5)
    calls = 200 if bench.quick else bench.args.calls
    bench.note(f"{runs} runs of {calls} sequential calls to the demo server's add tool, each side its own server")
    config = ConfigDir(root / "config")
    config.root.mkdir()
    config.write({"demo": demo()})
    params = StdioServerParameters(command=sys.executable, args=["-m", DEMO_MODULE])
    harness = ConfigHarness(
        root / "runtime",
        config_dir=config.root,
        services=HostServices(),
        model=ScriptedModel([]),
        profile=config.profile("bench"),
        clock=SystemClock(),
    )
    async with Client(params) as client, harness as rt:
        instance = MCPExtension().create(rt.context, {})
        await rt.mount_extension(instance)
        tool = next(t for t in instance.ishiki_tools() if t.name == "demo__add")
        await direct_latencies(client, 50)  # warm up both paths
        await extension_latencies(tool, 50)
        extension: list[float] = []
        direct: list[float] = []
        for run in range(runs):
            # alternate the order so drift (thermal, caches) does not favour one side
            if run % 2:
                extension.append(statistics.median(await extension_latencies(tool, calls)))
                direct.append(statistics.median(await direct_latencies(client, calls)))
            else:
                direct.append(statistics.median(await direct_latencies(client, calls)))
                extension.append(statistics.median(await extension_latencies(tool, calls)))
    bench.add("tool call through the extension, p50", "s", extension,
              baseline="mcp.Client.call_tool, p50", baseline_samples=direct, paired=True, target="<= 1.25")  # fmt: skip


async def measure(bench: Bench) -> None:
    """Measure in a temporary config directory."""
    with tempfile.TemporaryDirectory(prefix="ishiki-mcp-bench-") as root:
        await measure_in(bench, Path(root))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=lambda p: p.add_argument("--calls", type=int, default=1000))


if __name__ == "__main__":
    sys.exit(main())
