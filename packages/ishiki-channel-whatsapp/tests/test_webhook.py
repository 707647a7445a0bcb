"""The webhook through the host's real HTTP ingress: the handshake, signatures, bad bodies, other numbers and
statuses. Nothing unsigned is ever recorded; every refusal is logged once per burst."""

from __future__ import annotations

import json
import logging

import pytest

from ishiki_channel_whatsapp.testing import message, notification, status, text_message

pytestmark = pytest.mark.anyio

ALICE = "4915112345678"


def warnings_about(caplog, words):
    return [r for r in caplog.records if r.levelno >= logging.WARNING and words in r.getMessage()]


async def test_the_handshake_answers_the_challenge_as_plain_text(running_connection):
    async with running_connection() as (_connection, driver):
        answer = await driver.handshake(challenge="1158201444")
    assert (answer.status_code, answer.text) == (200, "1158201444")
    assert answer.headers["content-type"].startswith("text/plain")


async def test_a_handshake_with_a_wrong_verify_token_is_refused(running_connection, caplog):
    async with running_connection() as (connection, driver):
        wrong = await driver.handshake("not-the-token")
        again = await driver.handshake("still-not-it")
        status_ = connection.status()
    assert (wrong.status_code, again.status_code) == (403, 403)
    assert "1158201444" not in wrong.text
    assert status_["refused"]["verifyToken"] == 2
    assert len(warnings_about(caplog, "wrong verify token")) == 1  # once per burst


async def test_a_request_that_is_no_handshake_is_a_bad_request(running_connection):
    async with running_connection() as (_connection, driver):
        answer = await driver.handshake(mode="unsubscribe")
    assert answer.status_code == 400


@pytest.mark.parametrize(
    "signature",
    [None, "sha256=" + "0" * 64, "sha1=abc", "garbage"],
    ids=["unsigned", "wrong digest", "sha1", "garbage"],
)
async def test_a_notification_without_its_true_signature_is_401_and_never_recorded(
    running_connection, whatsapp_host, signature
):
    async with running_connection() as (connection, driver):
        answer = await driver.post(notification(messages=[text_message(ALICE, "let me in")]), signature=signature)
        status_ = connection.status()
    assert answer.status_code == 401
    assert whatsapp_host.dispatches == 0
    assert status_["refused"]["signature"] == 1


async def test_a_notification_signed_with_another_secret_is_refused(running_connection, whatsapp_host):
    async with running_connection(app_secret="the-real-secret") as (_connection, driver):
        driver.app_secret = "an-old-secret"
        answer = await driver.post(notification(messages=[text_message(ALICE, "hi")]))
    assert answer.status_code == 401
    assert whatsapp_host.dispatches == 0


async def test_a_burst_of_bad_signatures_is_logged_once_then_counted(running_connection, fake_clock, caplog):
    async with running_connection() as (_connection, driver):
        for _ in range(5):
            await driver.post(b"{}", signature=None)
        await fake_clock.advance(61)
        await driver.post(b"{}", signature="sha256=00")
    logged = warnings_about(caplog, "refused a webhook")
    assert len(logged) == 2
    assert "without an X-Hub-Signature-256" in logged[0].getMessage()
    assert "with a wrong X-Hub-Signature-256" in logged[1].getMessage()
    assert "4 more like it" in logged[1].getMessage()


async def test_an_oversized_body_is_413_and_never_recorded(running_connection, whatsapp_host):
    async with running_connection() as (_connection, driver):
        answer = await driver.post(b"{" + b" " * (2 * 1024 * 1024) + b"}")
    assert answer.status_code == 413
    assert whatsapp_host.dispatches == 0


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, b""])
async def test_a_signed_body_that_is_not_json_is_400_logged_once(running_connection, whatsapp_host, caplog, body):
    async with running_connection() as (connection, driver):
        first = await driver.post(body)
        second = await driver.post(body)
        status_ = connection.status()
    assert (first.status_code, second.status_code) == (400, 400)
    assert whatsapp_host.dispatches == 0
    assert status_["refused"]["json"] == 2
    assert len(warnings_about(caplog, "is not JSON")) == 1


async def test_a_notification_of_another_shape_is_set_aside_and_answered_200(running_connection, whatsapp_host):
    odd = {"object": "whatsapp_business_account", "entry": {"not": "a list"}}
    async with running_connection() as (connection, driver):
        answer = await driver.post(odd)
        status_ = connection.status()
    assert answer.status_code == 200  # Meta would send the same again: nothing to gain from a refusal
    assert whatsapp_host.dispatches == 0
    assert status_["setAside"] == 1
    assert "malformed notification: entry is not an array" in status_["lastSetAside"]["why"]
    (kept,) = (whatsapp_host.state_dir / "whatsapp-set-aside.jsonl").read_text().splitlines()
    assert json.loads(kept)["input"] == odd


async def test_a_notification_about_another_object_is_ignored(running_connection, whatsapp_host):
    async with running_connection() as (_connection, driver):
        answer = await driver.post({"object": "instagram", "entry": []})
    assert answer.status_code == 200
    assert whatsapp_host.dispatches == 0


async def test_a_notification_for_another_number_is_logged_and_answered_200(running_connection, whatsapp_host, caplog):
    async with running_connection() as (_connection, driver):
        stranger = notification("999000111222333", messages=[text_message(ALICE, "wrong door")])
        first = await driver.post(stranger)
        second = await driver.post(stranger)
    assert (first.status_code, second.status_code) == (200, 200)
    assert whatsapp_host.dispatches == 0
    (logged,) = warnings_about(caplog, "phone number id 999000111222333")
    assert "its own callback URL" in logged.getMessage()


async def test_other_fields_are_answered_200_and_ignored(running_connection, whatsapp_host):
    async with running_connection() as (_connection, driver):
        answer = await driver.post(notification(field="account_update"))
    assert answer.status_code == 200
    assert whatsapp_host.dispatches == 0


async def test_statuses_are_counted_once_each_and_a_failure_logged_with_its_code(
    running_connection, whatsapp_host, caplog
):
    failure = status(
        "wamid.OUT2",
        "failed",
        errors=[{"code": 131047, "title": "Re-engagement message", "error_data": {"details": "24 hours passed"}}],
    )
    async with running_connection() as (connection, driver):
        sent = status("wamid.OUT1", "sent")
        assert (
            await driver.statuses(sent, status("wamid.OUT1", "delivered"), status("wamid.OUT1", "read"))
        ).status_code == 200
        assert (await driver.statuses(sent)).status_code == 200  # Meta's redelivery: counted once
        assert (await driver.statuses(failure)).status_code == 200
        counts = connection.status()["statuses"]
    assert counts == {"sent": 1, "delivered": 1, "read": 1, "failed": 1}
    assert whatsapp_host.dispatches == 0
    (logged,) = [r for r in caplog.records if r.levelno == logging.ERROR and "wamid.OUT2" in r.getMessage()]
    text = logged.getMessage()
    assert "131047 Re-engagement message 24 hours passed" in text
    assert "template_on_window_closed" in text


async def test_a_malformed_status_or_an_error_of_meta_does_not_stop_the_messages(
    running_connection, whatsapp_host, caplog
):
    async with running_connection() as (_connection, driver):
        answer = await driver.notify(
            statuses=[{"id": "wamid.X"}],
            errors=[{"code": 131051, "title": "Unsupported message type"}],
            messages=[text_message(ALICE, "still here")],
        )
    assert answer.status_code == 200
    assert [e.content for e in whatsapp_host.events] == ["still here"]
    assert any("Meta reported an error" in r.getMessage() and "131051" in r.getMessage() for r in caplog.records)


async def test_an_unknown_message_type_is_recorded_as_such(running_connection, whatsapp_host):
    async with running_connection() as (_connection, driver):
        answer, _ = await driver.messages(
            message(ALICE, "location", {"latitude": 1.5, "longitude": 2.5}), names=[(ALICE, "Alice")]
        )
    assert answer.status_code == 200
    (event,) = whatsapp_host.events
    assert event.content == "[location: (1.5, 2.5)]"
    assert event.extra["location"] == {"latitude": 1.5, "longitude": 2.5}
