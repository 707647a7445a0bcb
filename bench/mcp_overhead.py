"""MCP overhead: a tool call through the mcp extension vs the same call with the SDK client directly.

Both sides start the package's demo MCP server (``ishiki_ext_mcp.testing.demo_server``) over stdio and call
its ``add`` tool in sequence. The direct side is ``mcp.Client(StdioServerParameters(...)).call_tool``; the
extension side is the ``demo__add`` tool handler a persona's turn runs, mounted on a real runtime
(``RuntimeHarness``): the supervisor's live-client lookup, the call deadline on the host clock, the SDK call
over the extension's own stdio transport, and rendering into a ``ToolResult``. Each side has its own
server process. Prints each run's p50s and the median ratio of p50s (target <= 1.25).

    .venv/bin/python bench/mcp_overhead.py [--quick] [--calls N] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from ishiki_ext_mcp import MCPExtension
from ishiki_ext_mcp.testing import DEMO_MODULE, ConfigDir, ConfigHarness, demo
from mcp import Client, StdioServerParameters

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


async def measure(root: Path, calls: int, runs: int) -> float:
    """The median over ``runs`` of the extension-to-direct p50 ratio."""
    config = ConfigDir(root / "config")
    config.root.mkdir()
    config.write({"demo": demo()})
    params = StdioServerParameters(command=sys.executable, args=["-m", DEMO_MODULE])
    harness = ConfigHarness(
        root / "runtime",
        config_dir=config.root,
        services={},
        model=ScriptedModel([]),
        profile=config.profile("bench"),
        clock=SystemClock(),
    )
    async with Client(params) as client, harness as rt:
        instance = MCPExtension().create(rt, {})
        await rt.mount_extension(instance)
        tool = next(t for t in instance.ishiki_tools() if t.name == "demo__add")
        await direct_latencies(client, 50)  # warm up both paths
        await extension_latencies(tool, 50)
        ratios = []
        for run in range(runs):
            # alternate the order so drift (thermal, caches) does not favour one side
            if run % 2:
                ext_p50 = statistics.median(await extension_latencies(tool, calls))
                direct_p50 = statistics.median(await direct_latencies(client, calls))
            else:
                direct_p50 = statistics.median(await direct_latencies(client, calls))
                ext_p50 = statistics.median(await extension_latencies(tool, calls))
            ratios.append(ext_p50 / direct_p50)
            print(f"run {run + 1}: direct p50 {direct_p50 * 1e6:8.1f} us", end="")
            print(f"  extension p50 {ext_p50 * 1e6:8.1f} us  ratio {ratios[-1]:.3f}")
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= 1.25 else "ABOVE TARGET"
    print(f"mcp overhead: p50 ratio {ratio:.3f} (median of {runs} runs of {calls} calls; target <= 1.25) {verdict}")
    return ratio


def main(calls: int, runs: int) -> float:
    """Measure in a temporary config directory."""
    with tempfile.TemporaryDirectory(prefix="ishiki-mcp-bench-") as root:
        return anyio.run(measure, Path(root), calls, runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 calls x 3 runs")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    calls, runs = (200, 3) if args.quick else (args.calls, args.runs)
    main(calls, runs)
