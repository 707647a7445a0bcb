"""Gateway overhead: sequential calls through ``Gateway.model(ref).generate`` vs raw httpx to the same server.

Both sides call the same loopback ``FakeOpenAIServer`` (pre-rendered answer, run in its own process so it does
not compete for the GIL) with the same request body and parse the JSON answer; the gateway side adds request
encoding, scheduling, breakers, failover bookkeeping, result assembly and the call record.
Prints each run's p50s and the median ratio (target <= 1.25).

    .venv/bin/python bench/gateway_overhead.py [--quick] [--calls N] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import anyio
import httpx

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


async def measure(server: str, calls: int, runs: int) -> float:
    """The median over ``runs`` of the gateway-to-raw p50 ratio."""
    await raw_latencies(server, 50)  # warm up both paths
    await gateway_latencies(server, 50)
    ratios = []
    for run in range(runs):
        # alternate the order so drift (thermal, caches) does not favour one side
        if run % 2:
            gateway_p50 = statistics.median(await gateway_latencies(server, calls))
            raw_p50 = statistics.median(await raw_latencies(server, calls))
        else:
            raw_p50 = statistics.median(await raw_latencies(server, calls))
            gateway_p50 = statistics.median(await gateway_latencies(server, calls))
        ratios.append(gateway_p50 / raw_p50)
        print(f"run {run + 1}: raw p50 {raw_p50 * 1e6:7.1f} us  gateway p50 {gateway_p50 * 1e6:7.1f} us", end="")
        print(f"  ratio {ratios[-1]:.3f}")
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= 1.25 else "ABOVE TARGET"
    print(f"gateway overhead: p50 ratio {ratio:.3f} (median of {runs} runs of {calls} calls; target <= 1.25) {verdict}")
    return ratio


def main(calls: int, runs: int) -> float:
    """Start the fake server in its own process and measure against it."""
    with subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdin is not None
        server = proc.stdout.readline().strip()
        try:
            return anyio.run(measure, server, calls, runs)
        finally:
            proc.stdin.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 calls x 3 runs")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    calls, runs = (300, 3) if args.quick else (args.calls, args.runs)
    main(calls, runs)
