"""``ishiki doctor`` for WhatsApp accounts: the cloud number over the fake Graph API (latency, a refused token
with its fix, a number the token may not use, a Graph API that cannot be reached), and a linked device's session
on disk (linked, not yet, or linked to another number than configured)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ishiki_channel_whatsapp import WhatsAppChannel
from ishiki_channel_whatsapp.testing.records import Fault
from ishiki_channel_whatsapp.web.session import IDENTITY_FILE, SESSION_FILE

pytestmark = pytest.mark.anyio


async def _check(account, *, seconds=10.0, state_dir=Path("/nonexistent/state")):
    return list(await WhatsAppChannel().diagnose(account, seconds=seconds, state_dir=state_dir))


async def test_a_cloud_number_is_shown_with_its_latency(whatsapp_graph, whatsapp_account):
    (finding,) = await _check(whatsapp_account(id="shop"))
    assert (finding.level, finding.what, finding.fix) == ("ok", "whatsapp account 'shop'", None)
    assert finding.detail.startswith(f"number {whatsapp_graph.display_phone_number} ")
    assert " answers in " in finding.detail
    assert whatsapp_graph.count("phone") == 1


async def test_a_refused_token_names_the_key(whatsapp_graph, whatsapp_account):
    (finding,) = await _check(whatsapp_account(access_token="EAAG-not-the-token"))
    assert finding.level == "error"
    assert finding.detail.startswith("the access token is refused")
    assert "channels.whatsapp.accounts[].access_token" in finding.fix
    assert "EAAG-not-the-token" not in finding.detail + finding.fix


async def test_a_number_the_token_may_not_use(whatsapp_graph, whatsapp_account):
    (finding,) = await _check(whatsapp_account(phone_number_id="999000999"))
    assert finding.level == "error"
    assert "phone number id 999000999" in finding.detail
    assert "phone_number_id" in finding.fix


async def test_an_unreachable_graph_api(whatsapp_graph, whatsapp_account):
    whatsapp_graph.fail("phone", Fault.cut_connection())
    (finding,) = await _check(whatsapp_account())
    assert finding.level == "error"
    assert f"the Graph API at {whatsapp_graph.url} cannot be reached" in finding.detail
    assert "graph_base" in finding.fix


def _session(directory, phone=None):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / SESSION_FILE).write_bytes(b"SQLite format 3\x00")
    if phone:
        (directory / IDENTITY_FILE).write_text(json.dumps({"phone": phone, "lid": None, "name": "Ishiki"}))


async def test_a_linked_device_reads_its_session(tmp_path):
    account = {"backend": "web", "id": "phone", "web": {"phone": "+49 151 1234567"}}
    (unlinked,) = await _check(account, state_dir=tmp_path / "state")
    assert unlinked.level == "warning"
    assert unlinked.detail.startswith("not linked yet")
    assert "ishiki run" in unlinked.fix
    _session(tmp_path / "state", "491511234567")
    (linked,) = await _check(account, state_dir=tmp_path / "state")
    assert (linked.level, linked.detail.split(" (")[0]) == ("ok", "linked to +491511234567")
    _session(tmp_path / "other", "441234567890")
    (wrong,) = await _check(account, state_dir=tmp_path / "other")
    assert wrong.level == "error"
    assert "web.phone is +491511234567" in wrong.detail


async def test_a_pairing_code_account_is_told_how_to_pair(tmp_path):
    account = {"backend": "web", "web": {"pairing": "code", "phone": "+49 151 1234567"}}
    (finding,) = await _check(account, state_dir=tmp_path)
    assert "pairing code" in finding.fix
