"""Benchmark of the WhatsApp channel's webhook path, as ratios against baselines measured in the same run.

- **Throughput.** Notifications (one text message each, across 100 chats) posted by 8 concurrent clients to
  the host's real HTTP server (uvicorn and Starlette on a loopback port), each waiting for its 200:
  - baseline: a bare route whose handler only checks the ``X-Hub-Signature-256`` HMAC and answers 200;
  - subject: a ``CloudConnection`` mounted on the same kind of server, whose host's ``dispatch`` returns at
    once: signature, parsing, shaping, the seen-set, dispatch, then 200.
  Notifications per second from the first post to the last 200. The posting client (httpx) is the same in
  both, so its cost is in both figures and the ratio understates the channel's own speed.
- **Webhook to durable record.** A real ``Host`` (fact logs, a runtime per chat, turns answered by a fake
  model in its own process) takes notifications posted one after another; each post's time to its 200, which
  the channel answers only once the message is durable in the runtime's fact log. p50 and p99, against the
  bare route's on the same machine.

Run: ``.venv/bin/python bench/whatsapp_webhooks.py [--quick] [--runs N] [--dir DIR] [--json PATH]``
(5 interleaved runs of 4,000 notifications and 400 sequential posts; ``--quick``: 3 runs of 500 and 100).
"""

from __future__ import annotations

import hmac
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from _fake_server import fake_model_process, models_yaml
from _report import Bench, add_memory_dir_option, run
from _telegram import InstantHost
from ishiki_channel_whatsapp.cloud.connection import CloudConnection
from ishiki_channel_whatsapp.config import CloudAccount
from ishiki_channel_whatsapp.testing import (
    DEFAULT_APP_SECRET,
    DEFAULT_PHONE_NUMBER_ID,
    DEFAULT_VERIFY_TOKEN,
    FakeGraphAPI,
    WebhookDriver,
    contact,
    notification,
    running,
    text_message,
)

from ishiki_host import HttpRequest, HttpResponse
from ishiki_host.core.clock import SystemClock
from ishiki_host.ingress import HttpMount
from ishiki_host.testing import serve_http
from ishiki_host.testing.host import TestHost, profile_yaml, write_config

PREFIX = "/hooks/whatsapp/0"
PUBLIC_URL = "https://bot.example.com"  # set, or the channel warns at each start that Meta cannot reach it
CLIENTS = 8
CHATS = 100


def bodies(count: int, phone_number_id: str) -> list[bytes]:
    """``count`` signed-ready notification bodies, one text message each, across ``CHATS`` senders."""
    out = []
    for n in range(count):
        sender = str(4_915_100_000_000 + n % CHATS)
        item = text_message(sender, f"message {n} with an emoji 😀 and some words")
        out.append(json.dumps(notification(phone_number_id, messages=[item], contacts=[contact(sender)])).encode())
    return out


async def post_all(url: str, payloads: list[bytes]) -> float:
    """Post every body with ``CLIENTS`` concurrent posters; the seconds from the first post to the last 200."""
    queue = list(reversed(payloads))
    async with httpx.AsyncClient(timeout=60.0, trust_env=False, limits=httpx.Limits(max_connections=CLIENTS)) as client:
        driver = WebhookDriver(url, client=client)

        async def poster() -> None:
            while queue:
                answer = await driver.post(queue.pop())
                if answer.status_code != 200:
                    raise RuntimeError(f"{url}: answered {answer.status_code}: {answer.text[:200]}")

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(CLIENTS):
                tg.start_soon(poster)
        return time.perf_counter() - start


def bare_route(mount: HttpMount) -> None:
    """The baseline: check the signature, answer 200."""
    secret = DEFAULT_APP_SECRET.encode()

    async def verify_only(request: HttpRequest) -> HttpResponse:
        expected = "sha256=" + hmac.new(secret, request.body, "sha256").hexdigest()
        if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
            return HttpResponse(401, "bad signature")
        return HttpResponse(200, "ok")

    mount.route("/", verify_only)


async def bare_rate(payloads: list[bytes]) -> float:
    async with serve_http(max_connections=200) as ingress, ingress.mount(PREFIX) as mount:
        bare_route(mount)
        return len(payloads) / await post_all(f"{ingress.base_url}{PREFIX}", payloads)


async def channel_rate(payloads: list[bytes]) -> float:
    async with (
        FakeGraphAPI() as graph,
        serve_http(public_url="https://bot.example.com", max_connections=200) as ingress,
    ):
        with tempfile.TemporaryDirectory() as state:
            host = InstantHost(Path(state), len(payloads), http=ingress, prefix=PREFIX)
            keys = {"backend": "cloud", "phone_number_id": graph.phone_number_id, "access_token": graph.token,
                    "app_secret": DEFAULT_APP_SECRET, "verify_token": DEFAULT_VERIFY_TOKEN, "graph_base": graph.url,
                    "mark_read": False}  # fmt: skip
            async with running(CloudConnection(host, CloudAccount.from_config(keys), rng=random.Random(1))):
                seconds = await post_all(f"{ingress.base_url}{PREFIX}", payloads)
            if host.count != len(payloads):
                raise RuntimeError(f"the channel dispatched {host.count} of {len(payloads)} messages")
            return len(payloads) / seconds


async def sequential_latencies(url: str, payloads: list[bytes]) -> list[float]:
    """Each post's seconds to its 200, one post after another."""
    latencies = []
    async with httpx.AsyncClient(timeout=60.0, trust_env=False) as client:
        driver = WebhookDriver(url, client=client)
        for body in payloads:
            start = time.perf_counter()
            answer = await driver.post(body)
            latencies.append(time.perf_counter() - start)
            if answer.status_code != 200:
                raise RuntimeError(f"{url}: answered {answer.status_code}: {answer.text[:200]}")
    return latencies


async def bare_latencies(payloads: list[bytes]) -> list[float]:
    async with serve_http() as ingress, ingress.mount(PREFIX) as mount:
        bare_route(mount)
        return await sequential_latencies(f"{ingress.base_url}{PREFIX}", payloads)


async def host_latencies(payloads: list[bytes], model_url: str, base: Path) -> list[float]:
    """Post to a real host (fact logs, runtimes, turns answered by the model process)."""
    async with FakeGraphAPI() as graph:
        with tempfile.TemporaryDirectory(dir=base) as work:
            account = (
                f"      - {{backend: cloud, phone_number_id: '{graph.phone_number_id}', access_token: {graph.token}, "
                f"app_secret: {DEFAULT_APP_SECRET}, verify_token: {DEFAULT_VERIFY_TOKEN}, graph_base: '{graph.url}'}}\n"
            )
            host = (
                "reload_interval_seconds: 0\nscheduler: {interactive_grace_seconds: 0}\n"
                f"http: {{listen: '127.0.0.1:0', public_url: '{PUBLIC_URL}'}}\n"
                f"channels:\n  whatsapp:\n    accounts:\n{account}"
            )
            profile = profile_yaml(f"whatsapp:{graph.phone_number_id}: ['*']")
            root = write_config(
                Path(work) / "bot", profiles={"ana": profile}, models=models_yaml(model_url, 64), host=host
            )
            async with TestHost(root, clock=SystemClock()) as th:
                return await sequential_latencies(f"{th.host.http.base_url}{PREFIX}", payloads)


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


async def measure(bench: Bench) -> None:
    """Interleaved runs of each side, then the latencies."""
    runs = bench.runs(quick=3, full=5)
    notifications, posts = (500, 100) if bench.quick else (4_000, 400)
    payloads = bodies(notifications, DEFAULT_PHONE_NUMBER_ID)
    bare: list[float] = []
    channel: list[float] = []
    for _ in range(runs):  # interleaved, so both sides see the same machine load
        bare.append(await bare_rate(payloads))
        channel.append(await channel_rate(payloads))
    bench.note(f"{notifications:,} notifications across {CHATS} chats, {CLIENTS} concurrent posters, {runs} runs")
    bench.add("CloudConnection webhook, notifications/s", "notifications/s", channel, direction="higher",
              baseline="bare route checking the signature only", baseline_samples=bare, paired=True)  # fmt: skip
    base = Path(bench.args.dir) if bench.args.dir else Path(tempfile.gettempdir())
    with fake_model_process() as model_url:
        host_p50: list[float] = []
        host_p99: list[float] = []
        bare_p50: list[float] = []
        bare_p99: list[float] = []
        for _ in range(runs):
            timed = await host_latencies(bodies(posts, DEFAULT_PHONE_NUMBER_ID), model_url, base)
            plain = await bare_latencies(bodies(posts, DEFAULT_PHONE_NUMBER_ID))
            host_p50.append(statistics.median(timed))
            host_p99.append(_percentile(timed, 0.99))
            bare_p50.append(statistics.median(plain))
            bare_p99.append(_percentile(plain, 0.99))
    bench.note(f"{posts} sequential posts a run to a real host; its turns run meanwhile (a model in its own process)")
    bench.add("webhook to durable record, p50", "s", host_p50, baseline="bare route, p50", baseline_samples=bare_p50,
              paired=True)  # fmt: skip
    bench.add("webhook to durable record, p99", "s", host_p99, baseline="bare route, p99", baseline_samples=bare_p99,
              paired=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=add_memory_dir_option)


if __name__ == "__main__":
    sys.exit(main())
