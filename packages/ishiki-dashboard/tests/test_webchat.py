"""The web chat end to end: the ``web`` channel in a real host, the chat page and its stream over real HTTP.

A message said through ``POST /chat/say`` reaches the persona (the fake model gets it) and the reply arrives on
``/chat/stream`` as HTML fragments, after the echo of the message: drafts as the model writes it, then the
final message in the drafts' place, once; the hub drops a slow tab's oldest events instead of blocking a send.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ishiki_host import FactLog, FactLogView, RuntimeKey
from ishiki_host.testing import FakeOpenAIServer, TestHost, host_yaml, models_yaml, profile_yaml, write_config

from ishiki_dashboard.pages.chat import _TurnFollower, render_event
from ishiki_dashboard.webchat.channel import WebChannel
from ishiki_dashboard.webchat.hub import WEB_HUB, ChatEvent, WebHub

pytestmark = pytest.mark.anyio

TOKEN = "web-chat-test-token"
WAIT = 20.0
"""The longest any one wait may take before the test fails (it never sleeps)."""
ACCOUNT = "dashboard"


def web_host_yaml() -> str:
    """An ``ishiki.yaml`` with the fake channel, the ``web`` account ``dashboard`` and the dashboard."""
    accounts = f"[{{self_id: bot}}]\n  web:\n    accounts: [{{id: {ACCOUNT}}}]"
    return host_yaml(accounts, extra=f"http: {{listen: '127.0.0.1:0'}}\nplugins:\n  dashboard: {{token: {TOKEN}}}\n")


def web_profile(*, owner: bool = True) -> str:
    """The profile ``ana`` on the fake channel and on ``web:dashboard``, with ``web:admin`` an owner or not."""
    trust = "trust: {owners: ['web:admin']}\n" if owner else ""
    return profile_yaml(f"fake:bot: ['*']\nweb:{ACCOUNT}: ['*']", extra=trust)


@asynccontextmanager
async def web_dash(tmp_path: Path, model: FakeOpenAIServer, *, owner: bool = True) -> AsyncIterator[Any]:
    """A host with the web chat on and the dashboard, and a client logged in to it (``conftest.Dash``'s
    ``client``, ``model``, ``post`` and ``ctx``); the ``web`` channel is registered by name, so the test does
    not depend on the installed entry points being current."""
    root = write_config(
        tmp_path / "bot", profiles={"ana": web_profile(owner=owner)}, models=models_yaml(model), host=web_host_yaml()
    )
    async with TestHost(root, plugins={"ishiki.channel.web": WebChannel}) as th:
        base = f"{str(th.host.http.base_url).rstrip('/')}/dashboard"
        async with httpx.AsyncClient(base_url=base) as client:
            assert (await client.post("/login", data={"token": TOKEN})).status_code == 303
            csrf = (await client.get("/api/session")).json()["csrf"]
            yield _WebDash(th, client, csrf, model)


class _WebDash:
    def __init__(self, th: TestHost, client: httpx.AsyncClient, csrf: str, model: FakeOpenAIServer):
        self.th, self.client, self.csrf, self.model = th, client, csrf, model

    @property
    def ctx(self) -> Any:
        return self.th.host.host_plugins.supervisor("dashboard").context

    async def post(self, path: str, **options: Any) -> httpx.Response:
        return await self.client.post(path, headers={"X-CSRF-Token": self.csrf}, **options)


@asynccontextmanager
async def sse(client: httpx.AsyncClient, path: str) -> AsyncIterator[AsyncIterator[tuple[str, str]]]:
    """The ``(event, data)`` pairs of a server-sent event stream (``message`` when unnamed)."""
    async with client.stream("GET", path) as answer:
        assert answer.status_code == 200, answer.status_code
        yield _events(answer.aiter_lines())


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    name, data = "message", []
    async for line in lines:
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "message", []
        elif line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])


async def until(events: AsyncIterator[tuple[str, str]], text: str) -> list[tuple[str, str]]:
    """The events up to the first whose data holds ``text``."""
    seen = []
    with anyio.fail_after(WAIT):
        async for event in events:
            seen.append(event)
            if text in event[1]:
                return seen
    raise AssertionError(f"the stream ended before {text!r}: {seen}")


async def test_a_message_reaches_the_persona_and_the_reply_arrives_on_the_stream(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with web_dash(tmp_path, fake_openai) as dash:
        dash.model.reply("Hello from the fake model")
        async with sse(dash.client, f"/chat/stream?account={ACCOUNT}") as events:
            said = await dash.post("/chat/say", json={"account": ACCOUNT, "text": "hi <b>there</b>"})
            assert said.status_code == 202, said.text
            seen = await until(events, 'class="msg msg-persona" data-key=')
    texts = [data for _, data in seen]
    assert "hi &lt;b&gt;there&lt;/b&gt;" in texts[0]  # the echo comes first, escaped
    drafts = [data for name, data in seen if name == "upsert" and "msg-draft" in data]
    final = seen[-1]
    assert drafts, seen  # the reply was shown as it was written...
    assert final[0] == "upsert"
    assert "Hello from the fake model" in final[1]
    keys = {re.search(r'data-key="([^"]+)"', data).group(1) for data in [*drafts, final[1]]}  # type: ignore[union-attr]
    assert len(keys) == 1  # ...and the message took the drafts' place
    assert not any("Hello" in data for name, data in seen if name == "message")  # never sent a second time
    prompt = dash.model.last_request.json["messages"][-1]
    assert "hi <b>there</b>" in str(prompt["content"])


async def test_the_page_offers_the_account_and_says_when_the_user_is_no_owner(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with web_dash(tmp_path, fake_openai, owner=False) as dash:
        page = await dash.client.get("/chat")
    assert page.status_code == 200
    assert 'name="text"' in page.text
    assert f'data-sse="/dashboard/chat/stream?account={ACCOUNT}"' in page.text
    assert "does not list <code>web:admin</code>" in page.text


async def test_an_owner_sees_no_notice_and_bad_input_is_shown_at_its_field(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with web_dash(tmp_path, fake_openai) as dash:
        page = await dash.client.get("/chat")
        empty = await dash.post("/chat/say", json={"account": ACCOUNT, "text": "  "})
        unknown = await dash.post("/chat/say", json={"account": "nobody", "text": "hi"})
    assert "trust.owners" not in page.text
    assert (empty.status_code, empty.json()["field"]) == (400, "text")
    assert (unknown.status_code, unknown.json()["field"]) == (400, "account")


def test_a_draft_taken_back_is_removed_and_one_cut_short_is_marked() -> None:
    key = "ana/web:dashboard/private:admin#1.1"
    draft = render_event(ChatEvent(3, "draft", ACCOUNT, "private:admin", 0.0, "Let me <look>", detail=key))
    assert draft.startswith("event: upsert\n")
    assert f'data-key="{key}"' in draft
    assert "Let me &lt;look&gt;" in draft
    tools = render_event(ChatEvent(4, "undraft", ACCOUNT, "private:admin", 0.0, "tools", detail=key))
    assert tools == f"event: remove\nid: 4\ndata: {key}\n\n"
    failed = render_event(ChatEvent(5, "undraft", ACCOUNT, "private:admin", 0.0, "failed", detail=key))
    assert failed.startswith("id: 5\n")  # appended after the draft, which stays as it was shown
    assert "cut short: the turn failed" in failed
    sent = render_event(ChatEvent(6, "sent", ACCOUNT, "private:admin", 0.0, "more", detail=""))
    assert sent.startswith("id: 6\n")  # a message no draft showed is appended as before


async def test_a_slow_tab_loses_its_oldest_events_and_is_told_so() -> None:
    hub = WebHub(queue_size=2)
    slow = hub.subscribe(ACCOUNT, "private:admin")
    for n in range(5):
        hub.publish(ACCOUNT, "private:admin", "sent", f"part {n}", ts=0.0)  # never waits for the reader
    first, second, third = [await slow.next() for _ in range(3)]
    slow.close()
    assert first is not None
    assert first.kind == "dropped"
    assert first.text.startswith("3 events dropped")
    assert [e.text for e in (second, third) if e is not None] == ["part 3", "part 4"]
    assert await slow.next() is None
    assert hub.followers(ACCOUNT, "private:admin") == 0


async def test_the_channel_and_the_dashboard_share_one_hub(tmp_path: Path, fake_openai: FakeOpenAIServer) -> None:
    async with web_dash(tmp_path, fake_openai) as dash:
        ctx: Any = dash.ctx
        hub = ctx.services.setdefault(WEB_HUB, WebHub)
        assert hub.accounts() == (ACCOUNT,)


async def test_the_tool_calls_of_the_turn_and_its_end_arrive_on_the_stream(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with web_dash(tmp_path, fake_openai) as dash:
        dash.model.tool_call("send_message", {"messages": ["Sent by a tool"]})
        async with sse(dash.client, f"/chat/stream?account={ACCOUNT}") as events:
            said = await dash.post("/chat/say", data={"account": ACCOUNT, "text": "use a tool"})  # as the page posts
            assert said.status_code == 202, said.text
            seen = await until(events, "turn ended")
    texts = [data for _, data in seen]
    assert any("Sent by a tool" in t and "msg-persona" in t for t in texts)
    tool = next(t for t in texts if "msg-tool" in t)
    assert "<code>send_message</code>" in tool
    assert "Sent by a tool" in tool  # its arguments


async def test_a_message_said_during_a_turn_is_followed_to_the_end_of_its_own_turn(tmp_path: Path) -> None:
    hub = WebHub()
    events = hub.subscribe("dashboard", "private:admin")
    async with await FactLog.open(tmp_path / "log.jsonl") as log:
        first = await log.append("message", {"role": "user", "text": "one"})
        view = FactLogView(RuntimeKey.for_cross("ana"), log)
        follower = _TurnFollower(hub, "dashboard", "private:admin", view, first.id - 1, None)
        async with anyio.create_task_group() as tg:
            tg.start_soon(follower.run)
            await log.append("event", {"name": "turn.start"})
            second = await log.append("message", {"role": "user", "text": "two"})  # said while turn 1 runs
            follower.also(second.id)
            await log.append("event", {"name": "turn.done", "reason": "sent"})
            with anyio.fail_after(10):
                ended = await events.next()
            assert ended is not None
            assert ended.kind == "done"
            await log.append("event", {"name": "turn.start"})
            await log.append("message", {"role": "assistant", "tool_calls": [{"id": "c1", "name": "read"}]})
            await log.append(
                "message", {"role": "tool", "tool_call_id": "c1", "parts": [{"type": "text", "text": "x"}]}
            )
            await log.append("event", {"name": "turn.done", "reason": "sent"})
            with anyio.fail_after(10):
                tool, done = await events.next(), await events.next()
        # the task group ended: the follower returned after turn 2, the one that answered "two"
    assert tool is not None
    assert done is not None
    assert (tool.kind, tool.text, done.kind) == ("tool", "read", "done")
