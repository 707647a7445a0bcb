"""The pages over real HTTP: headers, masking, the overview and reload, plugins and switches, memories, logs."""

from __future__ import annotations

import json
import logging

import anyio
import httpx
import pytest

pytestmark = pytest.mark.anyio

API_KEY = "sk-test-SECRET-0123456789abcdef"
TOKEN = "t0ken-for-tests"
PAGES = ("/", "/logs", "/plugins", "/memories")
APIS = ("/api/overview", "/api/logs", "/api/plugins", "/api/memories", "/api/session")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def tool_names(body) -> list[str]:
    return sorted(t["function"]["name"] for t in body.get("tools") or ())


async def a_turn(dash, text: str = "hello") -> None:
    """One turn of ``ana`` on the fake channel (the model answers with send_message)."""
    dash.model.tool_call("send_message", {"messages": ["hi!"]})
    delivery = await dash.th.channel().say(text)
    await delivery.settled()


@pytest.mark.parametrize("path", PAGES + APIS + ("/login", "/static/dashboard.js"))
async def test_every_answer_carries_the_security_headers(dash, path) -> None:
    answer = await dash.client.get(path)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-security-policy"] == CSP
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert answer.headers["x-frame-options"] == "DENY"
    if not path.startswith("/static"):
        assert answer.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("path", PAGES)
async def test_pages_have_no_inline_script_or_style(dash, path) -> None:
    page = (await dash.client.get(path)).text
    assert "<script>" not in page
    assert "<style" not in page
    assert " style=" not in page
    assert " onclick=" not in page
    assert "javascript:" not in page
    assert f'<meta name="csrf-token" content="{dash.csrf}">' in page
    assert '<script src="/dashboard/static/dashboard.js" defer></script>' in page


async def test_static_files_have_their_media_types_and_nothing_else_is_served(dash) -> None:
    js = await dash.client.get("/static/dashboard.js")
    css = await dash.client.get("/static/dashboard.css")
    other = await dash.client.get("/static/../plugin.py")
    assert js.headers["content-type"].startswith("text/javascript")
    assert css.headers["content-type"].startswith("text/css")
    assert "data-sse" in js.text
    assert other.status_code == 404


async def test_no_page_or_api_shows_a_secret(dash) -> None:
    await a_turn(dash)
    for path in PAGES + APIS:
        answer = await dash.client.get(path)
        assert API_KEY not in answer.text, path
        assert TOKEN not in answer.text, path


async def test_the_overview_shows_the_profiles_channels_and_plugins(dash) -> None:
    data = (await dash.client.get("/api/overview")).json()
    assert [p["id"] for p in data["profiles"]] == ["ana"]
    assert data["profiles"][0]["state"] == "ready"
    assert data["plugins"]["dashboard"]["state"] == "running"
    assert "fake:bot" in json.dumps(data["channels"])
    page = (await dash.client.get("/")).text
    assert "ana" in page
    assert "Reload config" in page
    assert data["activity"]["turnsLastHour"] == 0


async def test_the_overview_counts_the_turns_and_errors_of_the_last_hour(dash) -> None:
    delivery = await dash.th.channel().say("hello")
    with anyio.fail_after(20):
        await delivery.settled()
    logging.getLogger("ishiki_host.test_overview").error("something broke")
    activity = (await dash.client.get("/api/overview")).json()["activity"]
    assert (activity["turnsLastHour"], activity["failedTurnsLastHour"], activity["errorsLastHour"]) == (1, 0, 1)
    page = (await dash.client.get("/")).text
    assert "errors logged in the last hour" in page


async def test_an_invalid_profile_shows_its_error_with_file_and_line(make_dash) -> None:
    profiles = {"ana": "model: default\nchannels:\n  fake:bot: ['*']\n", "bo": "model: [nope\n"}
    async with make_dash(profiles=profiles) as dash:
        data = (await dash.client.get("/api/overview")).json()
    bo = next(p for p in data["profiles"] if p["id"] == "bo")
    assert bo["state"] == "invalid"
    assert bo["errors"]
    assert "profile.yml" in bo["errors"][0]


async def test_reload_asks_the_host_and_is_audited(dash, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ishiki_host.hostplugin.dashboard.audit")
    answer = await dash.post("/reload")
    assert answer.status_code == 202
    assert answer.json() == {"reloading": True}
    assert any("admin: reload" in r.getMessage() for r in caplog.records)
    audit = (dash.ctx.state_dir / "audit.jsonl").read_text("utf-8").splitlines()
    record = json.loads(audit[-1])
    assert record["action"] == "reload"
    assert record["user"] == "admin"
    assert record["ts"] == dash.clock.now()


async def test_a_tool_switched_off_is_not_offered_on_the_next_turn(dash) -> None:
    await a_turn(dash)
    offered = tool_names(dash.model.requests[-1].json)
    plugins = (await dash.client.get("/api/plugins")).json()
    ana = plugins["profiles"][0]
    listed = {t["name"]: t for t in ana["tools"]}
    assert set(offered) <= set(listed)
    victim = next(n for n in offered if not listed[n]["always_on"])
    answer = await dash.post(
        "/plugins/switch", data={"kind": "tool", "name": victim, "profile": "ana", "enabled": "off"}
    )
    assert answer.status_code == 200, answer.text
    ana = (await dash.client.get("/api/plugins")).json()["profiles"][0]
    assert {t["name"]: t["on"] for t in ana["tools"]}[victim] is False
    await a_turn(dash, "again")
    assert victim not in tool_names(dash.model.requests[-1].json)


async def test_a_kernel_tool_cannot_be_switched_off(dash) -> None:
    answer = await dash.post(
        "/plugins/switch", data={"kind": "tool", "name": "send_message", "profile": "ana", "enabled": "off"}
    )
    assert answer.status_code == 400
    assert answer.json()["field"] == "name"


async def test_a_channel_account_can_be_switched_and_is_audited(dash) -> None:
    answer = await dash.post(
        "/plugins/switch", data={"kind": "channel", "name": "fake:bot", "profile": "ana", "enabled": "off"}
    )
    assert answer.status_code == 200
    ana = (await dash.client.get("/api/plugins")).json()["profiles"][0]
    assert ana["channels"] == [{"name": "fake:bot", "on": False}]
    record = json.loads((dash.ctx.state_dir / "audit.jsonl").read_text("utf-8").splitlines()[-1])
    assert record["action"] == "switch"
    assert record["detail"]["name"] == "fake:bot"


async def test_the_plugins_page_says_when_no_runtime_is_alive(dash) -> None:
    page = (await dash.client.get("/plugins")).text
    assert "No runtime of this profile is alive" in page


async def test_memories_search_view_and_delete(dash) -> None:
    store = dash.ctx.services.memory
    kept = await store.memories.add("fact", "Ana likes green tea", profile="ana", runtime_key="ana")
    other = await store.memories.add("lesson", "Bo prefers coffee", profile="ana", runtime_key="ana")
    found = (await dash.client.get("/api/memories", params={"q": "tea"})).json()["memories"]
    assert [m["id"] for m in found] == [kept.id]
    lessons = (await dash.client.get("/api/memories", params={"type": "lesson"})).json()["memories"]
    assert [m["id"] for m in lessons] == [other.id]
    view = await dash.client.get("/memories/view", params={"id": kept.id})
    assert view.status_code == 200
    assert "Ana likes green tea" in view.text
    deleted = await dash.post("/memories/delete", data={"id": str(kept.id)})
    assert deleted.status_code == 200
    assert await store.memories.get(kept.id) is None
    assert (await dash.client.get("/memories/view", params={"id": kept.id})).status_code == 404
    assert (await dash.client.get("/api/memories", params={"type": "nope"})).status_code == 400


async def test_the_logs_page_filters_by_level(dash, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="ishiki_host.hostplugin.dashboard.test")
    log = logging.getLogger("ishiki_host.hostplugin.dashboard.test")
    log.info("an-info-line")
    log.warning("a-warning-line")
    info = (await dash.client.get("/logs", params={"level": "INFO"})).text
    warning = (await dash.client.get("/logs", params={"level": "WARNING"})).text
    assert "an-info-line" in info
    assert "a-warning-line" in info
    assert "an-info-line" not in warning
    assert "a-warning-line" in warning
    assert (await dash.client.get("/api/logs", params={"level": "LOUD"})).status_code == 400


async def test_malformed_json_is_a_bad_request(dash) -> None:
    from ishiki_host import HttpRequest

    from ishiki_dashboard.app import DashRequest, Problem

    request = DashRequest(HttpRequest("POST", "/x", body=b'{"a": 1, "a": 2}'), "admin", "c")
    with pytest.raises(Problem) as refused:
        request.json()
    assert refused.value.status == 400


async def test_the_log_stream_sends_new_lines_and_ends_when_the_host_stops(make_dash, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="ishiki_host.hostplugin.dashboard.test")
    log = logging.getLogger("ishiki_host.hostplugin.dashboard.test")
    received: list[str] = []
    got_line = anyio.Event()
    ended = anyio.Event()

    async def read(base_url: str, cookies: httpx.Cookies, after: int) -> None:
        params = {"level": "WARNING", "after": str(after)}
        async with (
            httpx.AsyncClient(base_url=base_url, cookies=cookies, timeout=None) as client,
            client.stream("GET", "/logs/stream", params=params) as stream,
        ):
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for line in stream.aiter_lines():
                received.append(line)
                if "streamed-warning" in line:
                    got_line.set()
        ended.set()

    with anyio.fail_after(30):  # a last resort: a stream that outlives its host would hang the test otherwise
        async with anyio.create_task_group() as tg, make_dash() as dash:
            tg.start_soon(read, dash.base_url, dash.client.cookies, dash.ctx.logs.last_seq)
            log.info("not-this-one")
            log.warning("streamed-warning")
            await got_line.wait()
            # leaving make_dash stopped the host: the stream ends by itself
    assert ended.is_set()
    assert any("streamed-warning" in line for line in received)
    assert not any("not-this-one" in line for line in received)
