"""The dashboard in a real browser against a real ``ishiki run`` (the harness: ``conftest.py`` beside this file).

Every wait is one of Playwright's auto-waiting expectations; the one slow wait, a beat's first run at the next
whole minute (cron has no seconds field), is capped at :data:`BEAT_FIRES_WITHIN_MS`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from playwright.sync_api import expect

from ishiki_dashboard.pages.plugins import ALWAYS_ON

if TYPE_CHECKING:
    from conftest import Harness, Screenshots
    from playwright.sync_api import Page

BEAT_FIRES_WITHIN_MS = 90_000
"""A ``* * * * *`` beat made now fires at the next whole minute: 60 s at most, plus a loaded machine's delay."""
PAGES = ("", "conversations", "chat", "models", "heartbeats", "memories", "plugins", "logs")
"""Every page under ``/dashboard/`` (the overview is ``""``)."""


def test_the_login_page_refuses_a_wrong_token_and_signs_in_with_the_right_one(
    page: Page, harness: Harness, screenshots: Screenshots
) -> None:
    page.goto("/dashboard/login")
    screenshots.take(page, "login")
    page.get_by_label("Token").fill("not-the-token")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/dashboard/login"))
    expect(page.locator("input[name=token]")).to_be_visible()
    page.get_by_label("Token").fill(harness.token)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/dashboard/?$"))


def test_an_unauthenticated_request_is_sent_to_the_login_page(page: Page) -> None:
    page.goto("/dashboard/conversations")
    expect(page).to_have_url(re.compile(r"/dashboard/login$"))
    expect(page.locator("input[name=token]")).to_be_visible()
    assert page.request.get("/dashboard/api/overview").status == 401


def test_the_overview_shows_the_profiles(signed_in: Page, harness: Harness, screenshots: Screenshots) -> None:
    expect(signed_in.locator("main")).to_contain_text(harness.profile)
    screenshots.take(signed_in, "overview")


def test_every_page_renders(signed_in: Page, screenshots: Screenshots) -> None:
    for name in PAGES:
        response = signed_in.goto(f"/dashboard/{name}")
        assert response is not None
        assert response.status == 200, (name, response.status)
        expect(signed_in.locator("main")).to_be_visible()
        screenshots.take(signed_in, name or "overview")
    assert len(screenshots.taken) == len(PAGES)


def test_a_post_without_the_csrf_token_is_refused(signed_in: Page) -> None:
    csrf = signed_in.locator('meta[name="csrf-token"]').get_attribute("content")
    assert csrf
    form: dict[str, str | float | bool] = {"id": "csrf-probe", "text": "x", "cron": "not a cron"}
    refused = signed_in.request.post("/dashboard/api/heartbeats", form=form)
    assert refused.status == 403, refused.status
    # The same request with the token gets past the check, to the field that is wrong.
    checked = signed_in.request.post("/dashboard/api/heartbeats", form=form, headers={"X-CSRF-Token": csrf})
    assert checked.status == 400, checked.status
    assert checked.json()["field"] == "cron"


def test_a_chat_in_the_web_chat_gets_the_streamed_reply(
    signed_in: Page, harness: Harness, screenshots: Screenshots
) -> None:
    open_chat(signed_in)
    before = len(harness.model.requests)
    say(signed_in, harness, "hello from the browser")
    expect(signed_in.locator("#chat")).to_contain_text("hello from the browser")
    assert len(harness.model.requests) > before
    # The reply was drafted as the model wrote it; the final message took the draft's place: one, no draft left.
    expect(signed_in.locator("#chat .msg-draft")).to_have_count(0)
    expect(signed_in.locator("#chat .msg-persona", has_text=harness.reply)).to_have_count(1)
    screenshots.take(signed_in, "chat-answered")


def test_a_beat_made_in_the_heartbeats_form_fires(signed_in: Page, harness: Harness, screenshots: Screenshots) -> None:
    signed_in.goto("/dashboard/heartbeats")
    form = signed_in.locator("form#beat-form")
    form.locator("[name=id]").fill("browser-beat")
    form.locator("[name=text]").fill("Time to stretch")
    form.locator("[name=cron]").fill("* * * * *")
    # Another chat than the dashboard user's: the beat's messages stay out of the chat the other tests read.
    form.locator("[name=target]").fill(f"{harness.profile} web:{harness.web_account} private:beats")
    with signed_in.expect_response(re.compile(r"/dashboard/heartbeats/stream")):
        form.get_by_role("button", name="Create").click()  # the page reloads and follows the list's stream
    row = signed_in.locator("#beats tr", has_text="browser-beat")
    expect(row.locator("[data-field=last-run]")).to_have_text("never")
    expect(row.locator("[data-field=last-run]")).not_to_have_text("never", timeout=BEAT_FIRES_WITHIN_MS)
    screenshots.take(signed_in, "heartbeats-fired")


def test_a_tool_turned_off_on_the_plugins_page_is_not_offered_next_turn(signed_in: Page, harness: Harness) -> None:
    open_chat(signed_in)
    say(signed_in, harness, "first turn")
    tool = next(name for name in harness.offered_tools("first turn") if name not in ALWAYS_ON)
    signed_in.goto("/dashboard/plugins")
    row = signed_in.locator("tr").filter(has=signed_in.get_by_role("cell", name=tool, exact=True))
    row.get_by_role("button", name="Turn off").click()
    expect(row.get_by_role("button", name="Turn on")).to_be_visible()
    open_chat(signed_in)
    say(signed_in, harness, "second turn")
    offered = harness.offered_tools("second turn")
    assert tool not in offered, offered
    assert "send_message" in offered, offered


def open_chat(page: Page) -> None:
    """Open the chat page and wait until its event stream is connected (so no reply can be missed)."""
    with page.expect_response(re.compile(r"/dashboard/chat/stream")) as stream:
        page.goto("/dashboard/chat")
    assert stream.value.status == 200, stream.value.status


def say(page: Page, harness: Harness, text: str) -> None:
    """Send ``text`` in the web chat and wait for the model's reply to appear in it."""
    replies = page.locator("#chat").get_by_text(harness.reply)
    count = replies.count()
    requests = len(harness.model.requests)
    page.locator("#chat-form input[name=text]").fill(text)
    page.keyboard.press("Enter")
    expect(replies).to_have_count(count + 1)
    assert len(harness.model.requests) > requests
