"""The heartbeats pages on a real host, on its ``FakeClock``: a beat made through the form's API fires when the
clock reaches its slot; a cron that does not parse is answered at the ``cron`` field; a managed beat cannot be
deleted (the reason names its file); pause and resume; every change is audited."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytestmark = pytest.mark.anyio

WAIT = 20.0
TARGET = "ana fake:bot private:7"
MANAGED = {"id": "stretch", "text": "stand up", "cron": "0 9 * * *", "type": "reminder"}


def beat(**fields: str) -> dict[str, str]:
    """The form's fields for a beat, as the dashboard's script posts them."""
    return {"id": "tea", "text": "Time for tea", "type": "reminder", "cron": "* * * * *", **fields}


async def test_a_beat_made_through_the_form_fires_on_the_host_clock(dash: Any) -> None:
    dash.model.tool_call("send_message", {"messages": ["Tea time!"]})
    made = await dash.post("/api/heartbeats", data=beat(target=TARGET))
    assert made.status_code == 200, made.text
    assert made.json()["location"] == "/dashboard/heartbeats"
    listing = await dash.client.get("/heartbeats")
    assert "tea" in listing.text
    assert 'data-field="last-run">never<' in listing.text
    stored = await dash.ctx.heartbeats.get("tea")
    assert stored.created_by == "dashboard:admin"
    await dash.clock.advance(stored.next_run - dash.clock.now())
    with anyio.fail_after(WAIT):
        sent = await dash.th.channel().wait_sent(1)
    assert [(m.channel_id, m.text) for m in sent] == [("private:7", "Tea time!")]
    audit = (dash.ctx.state_dir / "audit.jsonl").read_text("utf-8").splitlines()
    assert json.loads(audit[-1])["action"] == "heartbeat.create"


async def test_a_cron_that_does_not_parse_is_shown_at_its_field(dash: Any) -> None:
    refused = await dash.post("/api/heartbeats", data=beat(cron="every day at nine"))
    bad_target = await dash.post("/api/heartbeats", data=beat(target="ana"))
    assert refused.status_code == 400
    assert refused.json()["field"] == "cron"
    assert bad_target.json()["field"] == "target"
    assert await dash.ctx.heartbeats.get("tea") is None


async def test_a_managed_beat_is_read_only_and_deleting_it_is_refused_with_the_reason(make_dash: Any) -> None:
    files = {"heartbeats.json": json.dumps([MANAGED])}
    async with make_dash(files=files) as dash:
        refused = await dash.post("/api/heartbeats/delete", data={"id": "stretch"})
        page = await dash.client.get("/heartbeats/beat?id=stretch")
        still = await dash.ctx.heartbeats.get("stretch")
    assert refused.status_code == 409
    assert "heartbeats.json" in refused.json()["error"]
    assert "This beat is managed" in page.text
    assert "data-post" not in page.text
    assert still is not None


async def test_pause_resume_and_delete_a_user_beat(dash: Any) -> None:
    assert (await dash.post("/api/heartbeats", data=beat())).status_code == 200
    paused = await dash.post("/api/heartbeats/pause", data={"id": "tea"})
    assert paused.status_code == 200
    admin = dash.ctx.heartbeats
    assert admin.paused(await admin.get("tea"))
    assert 'badge-warn">paused' in (await dash.client.get("/heartbeats")).text
    await dash.post("/api/heartbeats/resume", data={"id": "tea"})
    assert not admin.paused(await admin.get("tea"))
    deleted = await dash.post("/api/heartbeats/delete", data={"id": "tea"})
    assert deleted.status_code == 200
    assert await admin.get("tea") is None
    gone = await dash.post("/api/heartbeats/pause", data={"id": "tea"})
    assert gone.status_code == 409


async def test_an_edit_changes_the_schedule(dash: Any) -> None:
    await dash.post("/api/heartbeats", data=beat())
    edited = await dash.post("/api/heartbeats/update", data=beat(cron="0 12 * * *", text="Lunch"))
    assert edited.status_code == 200, edited.text
    stored = await dash.ctx.heartbeats.get("tea")
    assert (stored.cron, stored.text) == ("0 12 * * *", "Lunch")


async def test_a_post_without_the_csrf_token_is_refused(dash: Any) -> None:
    refused = await dash.client.post("/api/heartbeats", data=beat())
    assert refused.status_code == 403


async def test_the_list_stream_sends_the_table_at_once_then_each_change(dash: Any, next_event: Any) -> None:
    async with dash.client.stream("GET", "/heartbeats/stream") as answer:
        assert answer.status_code == 200
        lines = answer.aiter_lines()
        name, first = await next_event(lines)  # at once: a beat that fired before the stream began is seen
        assert name == "replace"
        assert "tea" not in first
        made = await dash.post("/api/heartbeats", data=beat())
        assert made.status_code == 200, made.text
        # no clock moved: a change made through the dashboard redraws open lists at once
        name, changed = await next_event(lines)
    assert name == "replace"
    assert ">tea<" in changed
