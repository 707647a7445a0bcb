"""The conversations pages on a real host: the runtimes alive, one runtime's log read as a conversation (the
person's message with its sender, a tool call with its arguments and result, the reply, the turn's end), the
live stream delivering the next entry, and the answers for a bad key and a runtime that is not running."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import anyio
import pytest
from ishiki_host import Entry, RuntimeKey

from ishiki_dashboard.pages import conversations
from ishiki_dashboard.pages.conversations import render_entry

pytestmark = pytest.mark.anyio

WAIT = 20.0
KEY = "ana/fake:bot/private:1"
"""The runtime of the fake channel's default chat (``FakeConnection.say``)."""


async def talk(dash: Any, text: str) -> None:
    """Say ``text`` in the fake channel and wait until the turn it starts has ended."""
    delivery = await dash.th.channel().say(text, user_name="Ana")
    with anyio.fail_after(WAIT):
        await delivery.settled()


async def test_the_view_shows_the_message_the_tool_call_and_the_reply(dash: Any) -> None:
    dash.model.tool_call("send_message", {"messages": ["Hi Ana <3"]})
    await talk(dash, "hello <there>")
    index = await dash.client.get("/conversations")
    page = await dash.client.get(f"/conversations/view?key={quote(KEY, safe='')}")
    assert index.status_code == 200
    assert f"/dashboard/conversations/view?key={quote(KEY, safe='')}" in index.text
    assert page.status_code == 200, page.text
    text = page.text
    assert "hello &lt;there&gt;" in text  # the person's message, escaped
    assert "Ana (fake:1)" in text  # its sender
    assert "Calls <code>send_message</code>" in text
    assert "Hi Ana &lt;3" in text  # the call's arguments, then its result
    assert "Result of send_message" in text
    assert "turn.done" in text
    assert "<script" not in text.split("</head>", 1)[1]


async def test_the_stream_delivers_the_next_entries(dash: Any, next_event: Any) -> None:
    await talk(dash, "first")
    runtime = dash.ctx.runtime(RuntimeKey.parse(KEY))
    after = runtime.log.last_id
    path = f"/conversations/stream?key={quote(KEY, safe='')}&after={after}"
    async with dash.client.stream("GET", path) as answer:
        assert answer.status_code == 200
        lines = answer.aiter_lines()
        delivery = await dash.th.channel().say("second message")
        name, data = await next_event(lines)
    assert name == "message"
    assert f'id="entry-{after + 1}"' in data
    assert "second message" in data
    with anyio.fail_after(WAIT):
        await delivery.settled()


async def test_a_bad_key_is_a_404_and_a_stopped_runtime_says_it_is_not_running(dash: Any) -> None:
    bad = await dash.client.get("/conversations/view?key=nobody%2Fwhat")
    idle = await dash.client.get(f"/conversations/view?key={quote('ana/fake:bot/private:99', safe='')}")
    stream = await dash.client.get(f"/conversations/stream?key={quote('ana/fake:bot/private:99', safe='')}")
    assert bad.status_code == 404
    assert idle.status_code == 200
    assert "This runtime is not running" in idle.text
    assert stream.status_code == 204  # EventSource does not reconnect


async def test_the_page_is_bounded_with_a_link_to_earlier_entries(dash: Any) -> None:
    runtime_key = RuntimeKey.parse(KEY)
    await talk(dash, "start")
    log = dash.ctx.runtime(runtime_key).log
    for n in range(conversations.PAGE + 5):
        await log.append("custom", {"kind": "test.filler", "n": n})
    newest = await dash.client.get(f"/conversations/view?key={quote(KEY, safe='')}")
    first_shown = log.last_id - conversations.PAGE + 1
    earlier = await dash.client.get(f"/conversations/view?key={quote(KEY, safe='')}&before={first_shown}")
    assert newest.text.count('class="entry ') == conversations.PAGE
    assert f"before={first_shown}" in newest.text
    assert f'id="entry-{first_shown - 1}"' in earlier.text
    assert 'data-sse="' not in earlier.text  # paging back does not follow the log


def test_unknown_entries_render_as_escaped_json() -> None:
    html = render_entry(Entry(7, "plugin.thing", 0.0, {"x": "<b>"}))
    assert "plugin.thing" in html
    assert "&lt;b&gt;" in html
    assert "<b>" not in html


async def test_the_list_is_capped_per_profile_and_filtered(dash: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for chat in ("7", "8", "9"):
        delivery = await dash.th.channel().say("hi", channel_id=f"private:{chat}")
        with anyio.fail_after(WAIT):
            await delivery.settled()
    monkeypatch.setattr(conversations, "LIST_LIMIT", 2)
    listing = (await dash.client.get("/conversations")).text
    assert listing.count("/dashboard/conversations/view?key=") == 2
    assert "and 1 more: narrow them with the filter." in listing
    only = (await dash.client.get("/conversations?q=private:8")).text
    assert only.count("/dashboard/conversations/view?key=") == 1
    assert "private%3A8" in only
    none = (await dash.client.get("/conversations?q=nobody")).text
    assert "No runtime matches." in none
