"""DM pairing end to end: an unlisted sender of a ``trust.unlisted: pairing`` profile gets a code and nothing
else; the real ``ishiki pairing approve`` (a subprocess on the same config dir) lets them in at a level, and
the running host serves their next message at it; ``ishiki pairing revoke`` shuts them out again from their
next message. Wrong and expired codes, and group chats, are refused."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.runtime.pairing import PAIRING_TEXT, WELCOME_TEXT
from ishiki_host.runtime.trust import REFUSAL_TEXT
from ishiki_host.store.repos.pairing import format_time

if TYPE_CHECKING:
    from ishiki_host.runtime.runtime import AgentRuntime

pytestmark = pytest.mark.anyio

MemoryHost = Any  # the fixtures of conftest.py
Router = Any
Settle = Any

PAIRING = "trust: {owners: ['fake:42'], unlisted: pairing}\n"
BOB: dict[str, Any] = {"user_id": "9", "channel_id": "private:9"}
CODE = re.compile(r"Your pairing code is ([2-9A-HJ-NP-Z]{6}):")


def runtime_of(delivery: object) -> AgentRuntime:
    assert isinstance(delivery, RuntimeDelivery), delivery
    return delivery.runtime


def code_in(text: str) -> str:
    found = CODE.search(text)
    assert found is not None, text
    return found.group(1)


async def ishiki(ishiki_bin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``ishiki`` in a worker thread (the host's event loop goes on meanwhile)."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run() -> subprocess.CompletedProcess[str]:
        command = [str(ishiki_bin), *args]
        return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=120, check=False)

    return await anyio.to_thread.run_sync(run)


async def test_an_unknown_sender_gets_a_code_and_is_served_once_approved(
    memory_host: MemoryHost, router: Router, settle: Settle, ishiki_bin: Path
) -> None:
    clock = FakeClock(time.time())  # the CLI checks the expiry against the real time
    async with memory_host(extra=PAIRING, summarizer="off", clock=clock) as th:
        channel = th.channel()
        first = await channel.say("hello? I am Bob", **BOB, user_name="Bob")
        [text] = channel.texts()
        code = code_in(text)
        assert text == PAIRING_TEXT.format(code=code, expiry="1 hour")
        await channel.say("anyone?", **BOB)  # the same code, but not again within the minute
        assert len(channel.texts()) == 1
        await clock.advance(60)
        await channel.say("still here", **BOB)
        assert channel.texts()[1:] == [PAIRING_TEXT.format(code=code, expiry="59 minutes")]  # the same code again
        runtime = runtime_of(first)
        assert first.entry_id is None
        assert list(runtime.context.log.iter_forward()) == []  # nothing in the fact log
        assert router.seen == []  # nothing reached the model

        listed = await ishiki(ishiki_bin, "pairing", "list", str(th.root))
        assert listed.returncode == 0, listed.stderr
        assert re.search(rf"{code}\s+ana\s+fake:9\s+Bob\s+fake:bot private:9", listed.stdout), listed.stdout
        approved = await ishiki(ishiki_bin, "pairing", "approve", code.lower(), str(th.root), "--level", "trusted")
        assert approved.returncode == 0, approved.stderr
        assert f"Approved fake:9 for profile ana as trusted (code {code})." in approved.stdout

        await settle(runtime_of(await channel.say("hi, it's Bob", **BOB)))
        assert channel.texts()[2:] == [WELCOME_TEXT, "re: hi, it's Bob"]
        inbound = [e for e in runtime.context.log.iter_forward() if e.type == "message" and "source" in e.data]
        assert [(e.data["source"]["content"], e.data["trust"]) for e in inbound] == [("hi, it's Bob", "trusted")]
        await settle(runtime_of(await channel.say("/whoami", **BOB)))
        assert channel.texts()[-1] == "channel: fake:bot private:9\nid: fake:9\ntrust: trusted"
        assert WELCOME_TEXT not in channel.texts()[4:]  # welcomed once

        after = await ishiki(ishiki_bin, "pairing", "list", str(th.root))
        assert "No pending pairing requests." in after.stdout
        assert re.search(r"ana\s+fake:9\s+trusted", after.stdout), after.stdout
        again = await ishiki(ishiki_bin, "pairing", "approve", code, str(th.root))
        assert again.returncode == 1
        assert f"code {code} was already approved at " in again.stderr


async def test_a_revoked_sender_is_refused_from_their_next_message(
    memory_host: MemoryHost, router: Router, settle: Settle, ishiki_bin: Path
) -> None:
    clock = FakeClock(time.time())  # the CLI checks the expiry against the real time
    async with memory_host(extra=PAIRING, summarizer="off", clock=clock) as th:
        channel = th.channel()
        await channel.say("hello?", **BOB)
        approved = await ishiki(ishiki_bin, "pairing", "approve", code_in(channel.texts()[0]), str(th.root))
        assert approved.returncode == 0, approved.stderr
        await settle(runtime_of(await channel.say("hi", **BOB)))
        assert channel.texts()[1:] == [WELCOME_TEXT, "re: hi"]
        served = len(router.seen)
        listed = await ishiki(ishiki_bin, "pairing", "list", str(th.root))
        assert "Revoke one with: ishiki pairing revoke SENDER [DIR] --profile PROFILE" in listed.stdout

        revoked = await ishiki(ishiki_bin, "pairing", "revoke", "fake:9", str(th.root), "--profile", "ana")
        assert revoked.returncode == 0, revoked.stderr
        assert revoked.stdout.startswith("Revoked fake:9 for profile ana (was untrusted).\n")
        delivery = await channel.say("still there?", **BOB)
        assert delivery.entry_id is None  # refused: not in the fact log
        renewed = code_in(channel.texts()[-1])  # a direct chat: a new request, with its code
        assert channel.texts()[3:] == [PAIRING_TEXT.format(code=renewed, expiry="1 hour")]
        assert len(router.seen) == served  # nothing more reached the model
        store = runtime_of(delivery).context.services.memory
        assert store is not None
        assert await store.pairing.all_approved() == []
        assert [r.code for r in await store.pairing.requests()] == [renewed]

        again = await ishiki(ishiki_bin, "pairing", "revoke", "fake:9", str(th.root), "--profile", "ana")
        assert (again.returncode, again.stderr) == (
            1,
            "ishiki pairing: fake:9 is not approved for profile ana (ishiki pairing list shows who is)\n",
        )
        unnamed = await ishiki(ishiki_bin, "pairing", "revoke", "fake:9", str(th.root))
        assert unnamed.returncode == 2
        assert "--profile" in unnamed.stderr


async def test_a_wrong_code_and_an_expired_code_are_refused(
    memory_host: MemoryHost, router: Router, ishiki_bin: Path
) -> None:
    async with memory_host(extra=PAIRING, summarizer="off") as th:  # the FakeClock starts in 2023
        channel = th.channel()
        await channel.say("hello?", user_id="9")
        code = code_in(channel.texts()[0])
        wrong = await ishiki(ishiki_bin, "pairing", "approve", "ZZZZZZ", str(th.root))
        assert (wrong.returncode, wrong.stderr) == (1, "ishiki pairing: no pending request with code ZZZZZZ\n")
        expired = await ishiki(ishiki_bin, "pairing", "approve", code, str(th.root))  # 2023 + 1 hour is past
        expiry = format_time(th.clock.now() + 3600)
        assert (expired.returncode, expired.stderr) == (
            1,
            f"ishiki pairing: code {code} expired at {expiry}; ask for a new one\n",
        )
        await th.clock.advance(3600)  # on the host's clock too: the next message gets a new request
        delivery = await channel.say("hello again?", user_id="9")
        renewed = code_in(channel.texts()[-1])
        assert channel.texts()[-1] == PAIRING_TEXT.format(code=renewed, expiry="1 hour")
        store = runtime_of(delivery).context.services.memory
        assert store is not None
        [request] = await store.pairing.requests()
        assert (request.code, request.expires_at) == (renewed, th.clock.now() + 3600)
        assert router.seen == []


async def test_in_a_group_an_unlisted_sender_is_refused_not_paired(
    memory_host: MemoryHost, router: Router, ishiki_bin: Path
) -> None:
    async with memory_host(extra=PAIRING, summarizer="off") as th:
        channel = th.channel()
        await channel.say("hello all", user_id="9", channel_id="group:5")
        await channel.say("hello?", user_id="9", channel_id="group:5")
        assert channel.texts() == [REFUSAL_TEXT]
        listed = await ishiki(ishiki_bin, "pairing", "list", str(th.root), "--json")
        assert listed.returncode == 0, listed.stderr
        assert '"requests": []' in listed.stdout
        assert router.seen == []


async def test_pairing_cli_on_a_dir_without_a_database_or_config(tmp_path: Path, ishiki_bin: Path) -> None:
    (tmp_path / "cfg" / "profiles").mkdir(parents=True)
    (tmp_path / "cfg" / "models.yaml").write_text("providers: {}\n")
    listed = await ishiki(ishiki_bin, "pairing", "list", str(tmp_path / "cfg"))
    assert (listed.returncode, listed.stdout) == (0, "No pending pairing requests.\n")
    approve = await ishiki(ishiki_bin, "pairing", "approve", "abc234", str(tmp_path / "cfg"))
    assert (approve.returncode, approve.stderr) == (1, "ishiki pairing: no pending request with code ABC234\n")
    assert not (tmp_path / "cfg" / "data").exists()  # nothing was created
    revoke = await ishiki(ishiki_bin, "pairing", "revoke", "fake:9", str(tmp_path / "cfg"), "--profile", "ana")
    assert (revoke.returncode, revoke.stderr) == (
        1,
        "ishiki pairing: fake:9 is not approved for profile ana (ishiki pairing list shows who is)\n",
    )
    nowhere = await ishiki(ishiki_bin, "pairing", "list", str(tmp_path / "missing"))
    assert nowhere.returncode == 2
    assert "Traceback" not in nowhere.stderr
