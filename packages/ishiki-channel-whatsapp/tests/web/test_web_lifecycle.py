"""The device's lives: readiness, pairing by QR code and by pairing code, reconnecting with back-off on the host's
clock, and the ends that must not be repeated (logged out, banned, replaced, linked to another number)."""

from __future__ import annotations

import json

import anyio
import pytest
from neonize.proto import Neonize_pb2 as neo

from ishiki_channel_whatsapp.web.errors import (
    WhatsAppWebError,
    WhatsAppWebLoggedOut,
    WhatsAppWebRefused,
    WhatsAppWebUnavailable,
)
from ishiki_channel_whatsapp.web.testing import (
    FakeWebClient,
    connect_failure,
    connected,
    disconnected,
    logged_out,
    pair_error,
    pair_success,
    qr_event,
)
from ishiki_channel_whatsapp.web.wire import Identity

pytestmark = pytest.mark.anyio

ME = Identity("491511234567", lid="987654321012345", name="Ishiki")


async def test_ready_once_connected(running_web, device, channel_host):
    async with running_web() as connection:
        await device.until(lambda: device.online == 1)
        assert connection.sid == "whatsapp:491511234567"
        assert connection.me == ME
        assert connection.status()["state"] == "connected"
        assert channel_host.fetchers.get("whatsapp:491511234567") is not None
        saved = json.loads((channel_host.state_dir / "whatsapp-web-identity.json").read_text())
        assert saved == {"phone": "491511234567", "lid": "987654321012345", "name": "Ishiki"}
        assert device.options[0].session == channel_host.state_dir / "whatsapp-web-session.db"
        assert device.options[0].device_name == "Ishiki Host"
    assert connection.status()["state"] == "stopped"
    assert channel_host.fetchers.get("whatsapp:491511234567") is None


async def test_typing_off_never_goes_online(running_web, device):
    async with running_web(typing=False) as connection:
        await connection.send_typing("private:491700000001")
        assert device.online == 0
        assert device.typing == []


async def test_qr_pairing_draws_each_code_and_is_ready_while_waiting(running_web, prompts, channel_host):
    device = FakeWebClient(connect_on_run=False)
    device.queue(qr_event("2@first-code,a,b,c"))
    async with running_web(client=device) as connection:
        assert connection.status()["state"] == "pairing"
        assert "Link a device" in prompts.getvalue()
        assert "▀" in prompts.getvalue()
        device.emit(qr_event("2@second-code,a,b,c"))
        device.me_identity = ME
        device.emit(pair_success(ME.phone), connected())
        await device.until(lambda: device.online == 1)
        assert prompts.getvalue().count("Link a device") == 2
        assert connection.status()["state"] == "connected"
        assert (channel_host.state_dir / "whatsapp-web-identity.json").is_file()


async def test_pairing_by_code_asks_once(running_web, prompts):
    device = FakeWebClient(connect_on_run=False, pair_code="WXYZ-1234")
    device.queue(qr_event(), qr_event())
    async with running_web(client=device, pairing="code") as connection:
        await device.until(lambda: device.pair_requests == ["491511234567"])
        device.emit(qr_event())
        device.me_identity = ME
        device.emit(pair_success(ME.phone), connected())
        await device.until(lambda: device.online == 1)
        assert device.pair_requests == ["491511234567"]
        assert "WXYZ-1234" in prompts.getvalue()
        assert "Link with phone number" in prompts.getvalue()
        assert connection.status()["state"] == "connected"


async def test_no_pairing_code_ends_the_attempt(web_connection, restart):
    class Refusing(FakeWebClient):
        async def pair_phone(self, phone: str) -> str:
            raise WhatsAppWebError("WhatsApp pairing failed: rate-overlimit", what="pairing")

    device = Refusing(connect_on_run=False)
    device.queue(qr_event())
    connection = web_connection(client=device, pairing="code")
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.run)
        await restart(connection)
        assert "WhatsApp gave no pairing code for +491511234567" in connection.status()["lastError"]
        tg.cancel_scope.cancel()


async def test_a_pairing_nobody_finishes_shows_a_new_code_after_back_off(running_web, prompts, wake_sleeper, restart):
    device = FakeWebClient(connect_on_run=False)
    device.queue(qr_event("2@one"))
    async with running_web(client=device) as connection:
        assert await wake_sleeper() == 180  # pairing_timeout
        device.queue(qr_event("2@two"))
        delay = await restart(connection)  # the back-off before the next life
        assert 0.5 <= delay <= 1.0
        await device.wait_runs(2)
        await prompts.showing("Link a device", 2)
        status = connection.status()
        assert status["restarts"] == 1
        assert "not linked within 180 s" in status["lastError"]


async def test_a_failed_pairing_starts_again(running_web, restart):
    device = FakeWebClient(connect_on_run=False)
    device.queue(qr_event())
    async with running_web(client=device) as connection:
        device.emit(pair_error("the code was refused"))
        await restart(connection)
        await device.wait_runs(2)
        assert "pairing failed (the code was refused)" in connection.status()["lastError"]


async def test_linked_by_another_number_is_refused_and_forgotten(web_connection, channel_host):
    device = FakeWebClient(connect_on_run=False)
    database = channel_host.state_dir / "whatsapp-web-session.db"
    database.parent.mkdir(parents=True)
    database.write_bytes(b"session")
    device.queue(qr_event(), pair_success("491700000999"))
    with pytest.raises(WhatsAppWebRefused, match=r"linked by \+491700000999, but web.phone is \+491511234567"):
        with anyio.fail_after(5):
            await web_connection(client=device).run()
    assert not database.exists()


async def test_a_stored_session_of_another_number_is_refused_at_start(web_connection, session_files, device):
    session_files(phone="491700000999")
    with pytest.raises(WhatsAppWebRefused, match="is linked to"):
        await web_connection().run()
    assert device.runs == 0


async def test_the_saved_number_is_the_sid_before_connecting(web_connection, session_files):
    session_files()
    connection = web_connection(account={"backend": "web"})
    with pytest.raises(Exception, match="not known"):
        _ = connection.sid
    device = FakeWebClient(connect_on_run=False)
    device.queue(qr_event())
    connection = web_connection(account={"backend": "web"}, client=device)
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(5):
            await tg.start(connection.run)  # ready while pairing: the number was saved
        assert connection.sid == "whatsapp:491511234567"
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    "event", [logged_out(), logged_out("UNKNOWN_LOGOUT", on_connect=True), connect_failure("MAIN_DEVICE_GONE")]
)
async def test_logged_out_is_one_fatal_error_and_the_session_is_removed(web_connection, session_files, device, event):
    database, identity = session_files()
    database.with_name(database.name + "-journal").write_bytes(b"j")
    device.queue(event)
    connection = web_connection()
    with pytest.raises(WhatsAppWebLoggedOut) as caught:
        with anyio.fail_after(5):
            await connection.run()
    assert caught.value.fatal
    assert "logged the linked device out" in str(caught.value)
    assert "Pair again" in str(caught.value)
    assert not database.exists()
    assert not identity.exists()
    assert not database.with_name(database.name + "-journal").exists()
    assert connection.status()["lastError"] == str(caught.value)
    assert connection.status()["state"] == "failed"


@pytest.mark.parametrize(
    ("event", "says"),
    [
        (neo.TemporaryBan(Code=neo.TemporaryBan.SEND_TO_TOO_MANY_PEOPLE, Expire=7200), "banned this number for now"),
        (neo.StreamReplaced(), "another client connected with this device's session"),
        (neo.ClientOutdated(), "outdated"),
        (connect_failure("TEMP_BANNED", "spam"), "banned this number for a while"),
        (connect_failure("CLIENT_OUTDATED"), "outdated"),
    ],
)
async def test_refusals_are_fatal(web_connection, device, event, says, channel_host):
    device.queue(event)
    with pytest.raises(WhatsAppWebRefused, match=says) as caught:
        with anyio.fail_after(5):
            await web_connection().run()
    assert caught.value.fatal
    assert (channel_host.state_dir / "whatsapp-web-identity.json").exists()  # not a reason to forget the session


async def test_a_dropped_connection_that_comes_back_by_itself(running_web, device, fake_clock):
    async with running_web() as connection:
        await device.until(lambda: device.online == 1)
        device.emit(disconnected())
        with anyio.fail_after(5):
            await fake_clock.wait_for_sleepers(1)  # the life now waits reconnect_timeout for Connected
        assert connection.status()["state"] == "reconnecting"
        device.emit(connected())
        await device.until(lambda: device.online == 2)
        assert fake_clock.sleepers == 0
        assert device.runs == 1
        assert connection.status()["state"] == "connected"


async def test_a_connection_that_does_not_come_back_is_restarted(running_web, device, wake_sleeper, restart):
    async with running_web() as connection:
        await device.until(lambda: device.online == 1)
        device.emit(disconnected())
        assert await wake_sleeper() == 120
        await restart(connection)
        await device.wait_runs(2)
        await device.until(lambda: device.online == 2)
        status = connection.status()
        assert (status["restarts"], status["state"]) == (1, "connected")
        assert "did not come back within 120 s" in status["lastError"]


async def test_the_client_ending_is_restarted_with_growing_back_off(running_web, device, restart):
    device.connect_on_run = False
    device.queue(connected())
    async with running_web() as connection:
        delays = []
        for _ in range(3):
            device.end(WhatsAppWebUnavailable("the WhatsApp client ended: dial tcp: i/o timeout", what="connect"))
            delays.append(await restart(connection))
            await device.wait_runs(len(delays) + 1)
        assert 0.5 <= delays[0] <= 1
        assert 1 <= delays[1] <= 2
        assert 2 <= delays[2] <= 4
        assert connection.status()["restarts"] == 3
        device.emit(connected())  # connected again: the next trouble starts from the shortest wait
        await device.until(lambda: device.online == 2)
        device.end()
        assert await restart(connection) <= 1


async def test_a_connect_failure_ends_the_life(running_web, device, restart):
    async with running_web() as connection:
        device.emit(connect_failure("SERVICE_UNAVAILABLE", "try later"))
        await restart(connection)
        await device.wait_runs(2)
        assert "SERVICE_UNAVAILABLE: try later" in connection.status()["lastError"]


async def test_no_connection_at_start_is_given_the_startup_timeout(
    web_connection, session_files, wake_sleeper, restart
):
    session_files()
    device = FakeWebClient(me=ME, connect_on_run=False)
    connection = web_connection(client=device)
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.run)
        assert await wake_sleeper() == 60
        device.queue(connected())
        await restart(connection)
        await device.wait_runs(2)
        await device.until(lambda: device.online == 1)
        assert "no connection within 60 s" in connection.status()["lastError"]
        tg.cancel_scope.cancel()


async def test_the_same_number_twice_in_one_host(running_web, web_connection, channel_host, fake_clock, tmp_path):
    from ishiki_host.testing import FakeChannelHost

    other = FakeChannelHost(tmp_path / "other", clock=fake_clock)
    other.fetchers = channel_host.fetchers
    async with running_web():
        with pytest.raises(WhatsAppWebRefused, match="already runs in this host"):
            with anyio.fail_after(5):
                await web_connection(host=other, client=FakeWebClient(me=ME)).run()


async def test_status_before_and_while_running(web_connection, running_web):
    assert web_connection().status() == {
        "state": "stopped",
        "phone": "+491511234567",
        "restarts": 0,
        "lastError": None,
        "taken": 0,
        "setAside": 0,
        "lastSetAside": None,
    }
    async with running_web() as connection:
        assert connection.status()["state"] == "connected"
