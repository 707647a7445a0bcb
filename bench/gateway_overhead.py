"""Gateway overhead: sequential calls through ``Gateway.model(ref).generate`` vs raw httpx to the same server.

Both sides call the same loopback ``FakeOpenAIServer`` (pre-rendered answer, run in its own process so it does
not compete for the GIL) with the same request body and parse the JSON answer; the gateway side adds request
encoding, scheduling, breakers, failover bookkeeping, result assembly and the call record.
Each run measures both sides (the order alternating between runs) and records each side's p50; the figure is
the gateway's p50 against raw httpx's, runs paired (target <= 1.25).

    .venv/bin/python bench/gateway_overhead.py [--quick] [--runs N] [--json PATH] [--calls N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import anyio
import httpx
from _report import Bench, run

from ishiki_host.config.models import ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.gateway import Gateway
from ishiki_host.gateway.providers.openai import OpenAICompletionsAPI, encode_request

REQUEST = ModelRequest((Message.system("You are a benchmark."), Message.user("Say ok.")))
SERVER = """
import sys
from ishiki_host.testing import FakeOpenAIServer
with FakeOpenAIServer() as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def provider(base_url: str) -> ProviderConfig:
    return ProviderConfig("fake", "openai-completions", base_url, models=(ModelSpec("fake-model"),))


async def raw_latencies(base_url: str, calls: int) -> list[float]:
    body = encode_request(provider(base_url).models[0], REQUEST, stream=False, options={})
    url = f"{base_url}/chat/completions"
    latencies = []
    async with httpx.AsyncClient() as client:
        for _ in range(calls):
            start = time.perf_counter()
            response = await client.post(url, json=body, headers={"content-type": "application/json"})
            response.raise_for_status()
            response.json()
            latencies.append(time.perf_counter() - start)
    return latencies


async def gateway_latencies(base_url: str, calls: int) -> list[float]:
    config = ModelsConfig(providers={"fake": provider(base_url)})
    latencies = []
    async with Gateway(config, {"openai-completions": OpenAICompletionsAPI()}) as gateway:
        model = gateway.model("fake:fake-model")
        for _ in range(calls):
            start = time.perf_counter()
            await model.generate(REQUEST)
            latencies.append(time.perf_counter() - start)
    return latencies


async def measure_against(bench: Bench, server: str) -> None:
    """Warm both paths, then ``runs`` runs of ``calls`` calls on each side."""
    calls = bench.args.calls or (300 if bench.quick else 2000)
    runs = bench.runs(quick=3, full=5)
    await raw_latencies(server, 50)  # warm up both paths
    await gateway_latencies(server, 50)
    raw, gateway = [], []
    for run_no in range(runs):
        # alternate the order so drift (thermal, caches) does not favour one side
        if run_no % 2:
            gateway.append(statistics.median(await gateway_latencies(server, calls)))
            raw.append(statistics.median(await raw_latencies(server, calls)))
        else:
            raw.append(statistics.median(await raw_latencies(server, calls)))
            gateway.append(statistics.median(await gateway_latencies(server, calls)))
    bench.add("Gateway.model(ref).generate, p50", "s", gateway, baseline="raw httpx POST, p50", baseline_samples=raw,
              paired=True, target="<= 1.25", notes=f"p50 of {calls:,} sequential calls a run")  # fmt: skip


def measure(bench: Bench) -> None:
    """Start the fake server in its own process and measure against it."""
    with subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdin is not None
        server = proc.stdout.readline().strip()
        try:
            anyio.run(measure_against, bench, server)
        finally:
            proc.stdin.close()


def arguments(parser: argparse.ArgumentParser) -> None:
    """This script's own option."""
    parser.add_argument("--calls", type=int, metavar="N", help="calls per run (default 2000; 300 with --quick)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
