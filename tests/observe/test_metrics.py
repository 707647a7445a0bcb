"""``/metrics`` on a real host over real HTTP: what a turn counts, what a scrape reads from the host's state, a
registry per host, and nothing served or timed with ``http.metrics: false``."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, host_yaml, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

HTTP = "http: {listen: '127.0.0.1:0'}\n"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of a scrape by name and labels."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: Samples, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


def answer_with(server: FakeOpenAIServer, text: str = "hi back") -> None:
    server.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": [text]}),), usage=(120, 8))


async def scrape(base_url: str | None) -> httpx.Response:
    assert base_url is not None
    async with httpx.AsyncClient() as client:
        return await client.get(f"{base_url}/metrics")


async def test_a_turn_counts_its_outcome_duration_model_call_tokens_tools_and_fsyncs(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    answer_with(fake_openai)
    async with make_host(profiles={"ana": profile_yaml()}, host=host_yaml(extra=HTTP)) as th:
        delivery = await th.channel().say("hello")
        with anyio.fail_after(10):
            await delivery.settled()
        response = await scrape(th.host.http.base_url)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    found = samples(response.text)
    assert value(found, "ishiki_turns_total", profile="ana", status="done") == 1
    assert value(found, "ishiki_turn_duration_seconds_count", profile="ana") == 1
    assert value(found, "ishiki_model_call_duration_seconds_count", model="fake:fake-model", outcome="ok") == 1
    assert value(found, "ishiki_tokens_total", profile="ana", model="fake:fake-model", kind="input") == 120
    assert value(found, "ishiki_tokens_total", profile="ana", model="fake:fake-model", kind="output") == 8
    assert value(found, "ishiki_tool_calls_total", profile="ana", tool="send_message") == 1
    fsyncs = value(found, "ishiki_factlog_fsync_duration_seconds_count")
    assert fsyncs is not None
    assert fsyncs >= 2


async def test_a_scrape_reads_profiles_runtimes_channels_breakers_and_queues(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    answer_with(fake_openai)
    profiles = {"ana": profile_yaml(), "off": profile_yaml(extra="enable: false\n")}
    async with make_host(profiles=profiles, host=host_yaml(extra=HTTP)) as th:
        for chat in ("private:1", "private:2"):
            delivery = await th.channel().say("hello", channel_id=chat)
            with anyio.fail_after(10):
                await delivery.settled()
        found = samples((await scrape(th.host.http.base_url)).text)
    assert value(found, "ishiki_profiles", state="ready") == 1
    assert value(found, "ishiki_profiles", state="disabled") == 1
    assert value(found, "ishiki_profiles", state="waiting") == 0
    assert value(found, "ishiki_runtimes", profile="ana") == 2
    assert value(found, "ishiki_channel_up", channel="fake#0") == 1
    assert value(found, "ishiki_channel_restarts_total", channel="fake#0") == 0
    assert value(found, "ishiki_channel_errors_total", channel="fake#0") == 0
    assert value(found, "ishiki_breaker_state", model="fake:fake-model", state="closed") == 1
    assert value(found, "ishiki_breaker_state", model="fake:fake-model", state="open") == 0
    assert value(found, "ishiki_scheduler_in_flight", provider="fake") == 0
    assert value(found, "ishiki_scheduler_waiting", provider="fake", priority="interactive") == 0


async def test_a_failed_model_call_is_timed_under_its_error_kind_and_the_turn_counted_failed(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.error(401, "bad key", type="invalid_api_key")
    async with make_host(profiles={"ana": profile_yaml()}, host=host_yaml(extra=HTTP)) as th:
        delivery = await th.channel().say("hello")
        with anyio.fail_after(10):
            await delivery.settled()
        found = samples((await scrape(th.host.http.base_url)).text)
    assert value(found, "ishiki_turns_total", profile="ana", status="failed") == 1
    assert value(found, "ishiki_model_call_duration_seconds_count", model="fake:fake-model", outcome="auth") == 1
    assert value(found, "ishiki_tokens_total", profile="ana", model="fake:fake-model", kind="input") is None


async def test_two_hosts_in_one_process_count_their_own(make_host: MakeHost, fake_openai: FakeOpenAIServer) -> None:
    answer_with(fake_openai)
    async with (
        make_host(profiles={"ana": profile_yaml()}, host=host_yaml(extra=HTTP)) as first,
        make_host(profiles={"bob": profile_yaml()}, host=host_yaml(extra=HTTP)) as second,
    ):
        delivery = await first.channel().say("hello")
        with anyio.fail_after(10):
            await delivery.settled()
        mine = samples((await scrape(first.host.http.base_url)).text)
        theirs = samples((await scrape(second.host.http.base_url)).text)
    assert value(mine, "ishiki_turns_total", profile="ana", status="done") == 1
    assert value(theirs, "ishiki_turns_total", profile="ana", status="done") is None
    assert value(theirs, "ishiki_runtimes", profile="bob") == 0


async def test_with_metrics_off_no_page_is_served_and_nothing_timed(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    answer_with(fake_openai)
    host = host_yaml(extra="http: {listen: '127.0.0.1:0', metrics: false}\n")
    async with make_host(profiles={"ana": profile_yaml()}, host=host) as th:
        assert th.host.observability is not None
        assert th.host.observability.metrics is None
        assert th.host.shared_parts.syncer is None  # the fact logs fsync untimed
        response = await scrape(th.host.http.base_url)
        async with httpx.AsyncClient() as client:
            ready = await client.get(f"{th.host.http.base_url}/readyz")
        status: Any = th.host.status()["http"]
    assert (response.status_code, ready.status_code) == (404, 200)  # /readyz needs no metrics
    assert status["mounts"] == ["/readyz"]


async def test_a_host_without_http_keeps_no_metrics(make_host: MakeHost) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        assert th.host.observability is not None
        assert th.host.observability.metrics is None
        assert th.host.status()["http"]["mounts"] == []
