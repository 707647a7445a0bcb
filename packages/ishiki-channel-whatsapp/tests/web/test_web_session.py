"""The session files in the state directory, and the pairing prompts shown on stderr."""

from __future__ import annotations

import io
import logging

import pytest
import segno

from ishiki_channel_whatsapp.web.pairing import PairingPrompt, render_qr
from ishiki_channel_whatsapp.web.session import Session
from ishiki_channel_whatsapp.web.wire import Identity

pytestmark = pytest.mark.anyio

LOG = logging.getLogger("test.whatsapp.web")


async def test_an_identity_is_kept_beside_its_session(tmp_path):
    session = Session(tmp_path, logger=LOG)
    me = Identity("491511234567", "987654321012345", "Ishiki")
    await session.save_identity(me)
    assert await session.load_identity() is None  # no session database: the identity would be stale
    session.database.write_bytes(b"SQLite format 3\x00")
    assert await session.load_identity() == me


async def test_clear_removes_the_session_its_journals_and_the_identity(tmp_path):
    session = Session(tmp_path, logger=LOG)
    await session.save_identity(Identity("491511234567"))
    session.database.write_bytes(b"db")
    (tmp_path / "whatsapp-web-session.db-wal").write_bytes(b"wal")
    (tmp_path / "whatsapp-seen.jsonl").write_text("{}\n")
    removed = await session.clear()
    assert sorted(path.name for path in removed) == [
        "whatsapp-web-identity.json",
        "whatsapp-web-session.db",
        "whatsapp-web-session.db-wal",
    ]
    assert [path.name for path in tmp_path.iterdir()] == ["whatsapp-seen.jsonl"]  # the ids taken stay


@pytest.mark.parametrize("content", ["not json", '{"phone": 491511234567}', '["491511234567"]', '{"phone": "+49"}'])
async def test_an_unreadable_identity_is_no_identity(tmp_path, content):
    session = Session(tmp_path, logger=LOG)
    session.database.write_bytes(b"db")
    session.identity_path.write_text(content)
    assert await session.load_identity() is None


def test_the_qr_code_is_drawn_in_half_blocks():
    data = "2@AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/=,EfGh0123456789=,IjKl0123456789=,MnOp0123456789="
    drawing = render_qr(data)
    lines = drawing.rstrip("\n").split("\n")
    modules = segno.make_qr(data, error="L").symbol_size(border=2)[0]
    assert len(lines) == (modules + 1) // 2  # two module rows per text row
    assert all(len(line) == modules for line in lines)
    assert set(drawing) <= {"█", "▀", "▄", " ", "\n"}


def test_the_prompts_say_where_to_scan_or_type():
    out = io.StringIO()
    prompt = PairingPrompt(out, LOG, "'home'")
    prompt.qr("2@code")
    prompt.code("ABCD-EFGH", "491511234567")
    text = out.getvalue()
    assert "WhatsApp account 'home': scan this code" in text
    assert "Linked devices > Link a device" in text
    assert "on the phone of +491511234567" in text
    assert "    ABCD-EFGH\n" in text
    assert prompt.shown == 2


def test_a_broken_stderr_does_not_stop_pairing(caplog):
    out = io.StringIO()
    out.close()
    PairingPrompt(out, LOG, "x").qr("2@code")
    assert "could not show the pairing prompt" in caplog.text
