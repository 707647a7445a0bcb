"""The real client: neonize's Go core driven on the test's own loop (asyncio and uvloop), reaching only a SOCKS5
proxy on loopback that refuses to go further, so WhatsApp is never contacted."""

from __future__ import annotations

import gc
import logging
import subprocess
import sys

import anyio
import pytest

from ishiki_channel_whatsapp.web.client import ClientOptions
from ishiki_channel_whatsapp.web.errors import WhatsAppWebRefused, WhatsAppWebUnavailable
from ishiki_channel_whatsapp.web.neonize_client import NeonizeClient

pytestmark = pytest.mark.anyio

LOG = logging.getLogger("test.whatsapp.web")


class RefusingSocks5:
    """A SOCKS5 proxy on loopback that records each CONNECT request and refuses it (reply 05: refused)."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.port = 0

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener:
            task_status.started()
            await listener.serve(self._handle)

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive(3)  # version 5, one method, no authentication
            await stream.send(b"\x05\x00")
            self.requests.append(await stream.receive(512))
            await stream.send(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")


@pytest.mark.parametrize("anyio_backend", [("asyncio", {"use_uvloop": False}), ("asyncio", {"use_uvloop": True})])
async def test_the_go_core_runs_on_this_loop_and_its_failure_is_ours(tmp_path, anyio_backend):
    proxy = RefusingSocks5()
    session = tmp_path / "state" / "whatsapp-web-session.db"
    handlers = list(logging.root.handlers)
    events: list[object] = []
    async with anyio.create_task_group() as tg:
        await tg.start(proxy.serve)
        for _ in range(2):  # two lives on one session, the first one's client collected in between
            client = NeonizeClient(ClientOptions(session, "Ishiki Test", LOG, f"socks5://127.0.0.1:{proxy.port}"))
            with pytest.raises(WhatsAppWebUnavailable, match=r"the WhatsApp client ended: .*refused") as caught:
                with anyio.fail_after(30):
                    await client.run(events.append)
            gc.collect()
        tg.cancel_scope.cancel()
    assert not caught.value.fatal
    assert len(proxy.requests) == 2
    assert all(b"web.whatsapp.com" in request for request in proxy.requests)  # resolved by the proxy, not here
    assert session.is_file()  # whatsmeow made its store where it was told
    assert events == []
    assert logging.root.handlers == handlers
    with pytest.raises(WhatsAppWebUnavailable):
        await client.send_text("491700000001@s.whatsapp.net", "hi")  # after run: never reaches Go


async def test_calls_before_run_never_reach_go(tmp_path):
    client = NeonizeClient(ClientOptions(tmp_path / "s.db", "Ishiki Test", LOG))
    with pytest.raises(WhatsAppWebUnavailable, match="not connected"):
        await client.me()
    with pytest.raises(WhatsAppWebUnavailable):
        await client.mark_read("491700000001@s.whatsapp.net", "491700000001@s.whatsapp.net", ["3A01"])
    assert await client.contact_name("491700000001@s.whatsapp.net") is None
    await client.stop()  # nothing to stop: fine


def test_a_session_path_its_database_cannot_open(tmp_path):
    with pytest.raises(WhatsAppWebRefused, match="'\\?' or '#'"):
        NeonizeClient(ClientOptions(tmp_path / "a?b" / "s.db", "Ishiki Test", LOG))


def test_the_channel_does_not_load_neonize_until_a_device_runs():
    script = (
        "import sys\n"
        "import ishiki_channel_whatsapp, ishiki_channel_whatsapp.web.connection\n"
        "from ishiki_channel_whatsapp.web.config import WebSettings\n"
        "WebSettings.from_config({'backend': 'web'})\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'neonize'))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "[]"
