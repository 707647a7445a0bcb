"""Start and stop of a cloud connection: the number checked, the webhook mounted before readiness, and every
way start-up can fail said once and clearly."""

from __future__ import annotations

import logging

import pytest
from ishiki_host.errors import ChannelError, IngressError
from ishiki_host.testing import FakeChannelHost

from ishiki_channel_whatsapp import WhatsAppAuthError, WhatsAppBadRequest, WhatsAppUnavailable
from ishiki_channel_whatsapp.testing import Fault, running

pytestmark = pytest.mark.anyio


async def test_readiness_comes_after_the_number_is_known_and_the_webhook_mounted(
    whatsapp_connection, whatsapp_graph, whatsapp_host, caplog
):
    caplog.set_level(logging.INFO)
    connection = whatsapp_connection()
    async with running(connection):
        status = connection.status()
        phone = connection.phone
        assert whatsapp_host.http.status()["mounts"] == ["/hooks/whatsapp/0"]
    assert whatsapp_graph.calls[0].name == "phone"
    assert (phone.display_phone_number, phone.verified_name) == ("+1 555-010-0000", "Ishiki Test")
    assert status["phoneNumberId"] == whatsapp_graph.phone_number_id
    assert status["displayPhoneNumber"] == "+1 555-010-0000"
    assert status["webhook"].endswith("/hooks/whatsapp/0")
    assert (status["setAside"], status["lastSetAside"], status["failedSends"], status["statuses"]) == (0, None, 0, {})
    (line,) = [r.getMessage() for r in caplog.records if "runs as" in r.getMessage()]
    assert "runs as +1 555-010-0000 (Ishiki Test) (whatsapp:106540352242922); webhook at http://127.0.0.1:" in line
    assert whatsapp_host.http.status()["mounts"] == []  # unmounted when it stopped


async def test_a_refused_token_at_start_is_one_fatal_error_naming_the_account(whatsapp_connection, whatsapp_graph):
    connection = whatsapp_connection(access_token="EAAnotTheRightToken", id="shop")
    with pytest.raises(WhatsAppAuthError) as caught:
        async with running(connection):
            pass
    message = str(caught.value)
    assert message.startswith("whatsapp account 'shop': the Graph API at http://127.0.0.1:")
    assert "refused the access token" in message
    assert "EAAnotTheRightToken" not in message
    assert caught.value.fatal


async def test_a_phone_number_id_the_token_may_not_use_is_fatal_with_a_hint(whatsapp_connection, whatsapp_graph):
    connection = whatsapp_connection(phone_number_id="111222333444555")
    with pytest.raises(WhatsAppBadRequest) as caught:
        async with running(connection):
            pass
    assert "does not let this token use phone number id 111222333444555" in str(caught.value)
    assert "WhatsApp Manager > API setup" in str(caught.value)
    assert caught.value.fatal


async def test_a_graph_api_down_at_start_is_retried_then_the_host_restarts_the_channel(
    whatsapp_connection, whatsapp_graph, fake_clock
):
    import anyio

    whatsapp_graph.fail("phone", *[Fault.server_error()] * 20)
    connection = whatsapp_connection(startup_timeout=10, backoff_max=4)
    ended, outcome = anyio.Event(), []

    async def run():
        try:
            async with running(connection):
                outcome.append("ran")
        except WhatsAppUnavailable as exc:
            outcome.append(exc)
        ended.set()

    async def next_sleep_or_end():
        async with anyio.create_task_group() as race:

            async def first(wait):
                await wait()
                race.cancel_scope.cancel()

            race.start_soon(first, fake_clock.wait_for_sleepers)
            race.start_soon(first, ended.wait)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(5):
            while not ended.is_set():
                await next_sleep_or_end()
                if not ended.is_set():
                    await fake_clock.advance(fake_clock.next_deadline() - fake_clock.now())
    (error,) = outcome
    assert isinstance(error, WhatsAppUnavailable)
    assert not error.fatal  # the host restarts it with back-off
    assert "could not be reached for 10 s" in str(error)
    assert 4 <= whatsapp_graph.count("phone") < 20


async def test_a_graph_api_back_after_a_cut_starts_the_connection(whatsapp_connection, whatsapp_graph, wake_sleeper):
    import anyio

    whatsapp_graph.fail("phone", Fault.cut_connection())
    connection = whatsapp_connection()
    async with anyio.create_task_group() as tg:
        tg.start_soon(wake_sleeper)
        async with running(connection):
            assert connection.phone is not None


async def test_a_host_without_http_refuses_the_mount_with_what_to_set(whatsapp_connection, tmp_path, fake_clock):
    host = FakeChannelHost(tmp_path / "no-http", clock=fake_clock)
    connection = whatsapp_connection(host=host)
    with pytest.raises(IngressError) as caught:
        async with running(connection):
            pass
    assert "receives its messages by webhook" in str(caught.value)
    assert "http.listen" in str(caught.value)
    assert caught.value.fatal


async def test_the_same_number_twice_in_one_host_is_refused(whatsapp_connection):
    first, second = whatsapp_connection(), whatsapp_connection()
    async with running(first):
        with pytest.raises(ChannelError, match="configured twice"):
            async with running(second):
                pass


async def test_a_connection_runs_again_after_it_stopped(whatsapp_connection, whatsapp_driver, whatsapp_host):
    connection = whatsapp_connection()
    async with running(connection):
        await whatsapp_driver(connection).text("4915112345678", "one")
    async with running(connection):
        await whatsapp_driver(connection).text("4915112345678", "two")
        assert (await connection.send("private:4915112345678", "back")).ok
    assert [e.content for e in whatsapp_host.events] == ["one", "two"]
