"""The pairing tables: one code per sender while it holds, rate-limited resends, approval, wrong and expired
codes, revocation, and approvals written or revoked by another connection seen at once."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import PairingCodeError, StoreError
from ishiki_host.store.memory_store import MemoryStore
from ishiki_host.store.migrations import MIGRATIONS, SCHEMA_VERSION
from ishiki_host.store.repos.pairing import format_time

pytestmark = pytest.mark.anyio

CODES = ("AAAAAA", "BBBBBB", "CCCCCC", "DDDDDD")


def codes(*values: str) -> itertools.cycle[str]:
    return itertools.cycle(values or CODES)


async def ask(store: MemoryStore, sender: str, source: itertools.cycle[str], ttl: float = 3600) -> tuple[str, bool]:
    issued = await store.pairing.issue(
        "ana", sender, channel="fake:bot private:1", name="Bob", ttl=ttl, resend_after=60, new_code=lambda: next(source)
    )
    return issued.request.code, issued.send


def test_migration_6_adds_the_pairing_tables(db_path: Path) -> None:
    assert MIGRATIONS[5].version == 6 <= SCHEMA_VERSION
    assert "pairing_requests" in MIGRATIONS[5].statements[0]


async def test_a_sender_keeps_one_code_while_it_holds_and_resends_are_rate_limited(db_path: Path) -> None:
    clock = FakeClock()
    source = codes()
    async with await MemoryStore.open(db_path, clock=clock) as store:
        assert await ask(store, "fake:9", source) == ("AAAAAA", True)
        assert await ask(store, "fake:9", source) == ("AAAAAA", False)  # the same code, not sent again yet
        await clock.advance(59)
        assert await ask(store, "fake:9", source) == ("AAAAAA", False)
        await clock.advance(1)
        assert await ask(store, "fake:9", source) == ("AAAAAA", True)  # a minute on: sent again
        assert await ask(store, "fake:8", source) == ("BBBBBB", True)  # another sender, another code
        await clock.advance(3600)
        assert await ask(store, "fake:9", source) == ("CCCCCC", True)  # expired: a new code
        pending = await store.pairing.requests()
        assert [r.code for r in pending] == ["CCCCCC"]
        assert [r.code for r in await store.pairing.requests(expired=True)] == ["BBBBBB", "CCCCCC"]
        assert pending[0].name == "Bob"
        assert pending[0].channel == "fake:bot private:1"


async def test_a_drawn_code_already_in_use_is_drawn_again(db_path: Path) -> None:
    async with await MemoryStore.open(db_path, clock=FakeClock()) as store:
        assert (await ask(store, "fake:1", codes("AAAAAA")))[0] == "AAAAAA"
        assert (await ask(store, "fake:2", codes("AAAAAA", "bbb-bbb")))[0] == "BBBBBB"


async def test_approve_lists_the_sender_and_uses_the_code_up(db_path: Path) -> None:
    clock = FakeClock()
    async with await MemoryStore.open(db_path, clock=clock) as store:
        code, _ = await ask(store, "fake:9", codes())
        assert await store.pairing.approved("ana") == {}
        paired = await store.pairing.approve(code.lower(), "trusted")  # typed in any case
        assert (paired.profile, paired.sender, paired.level, paired.told_at) == ("ana", "fake:9", "trusted", None)
        assert (await store.pairing.approved("ana"))["fake:9"].level == "trusted"
        assert await store.pairing.approved("bob") == {}
        assert await store.pairing.requests() == []
        with pytest.raises(PairingCodeError, match=f"code {code} was already approved at ") as again:
            await store.pairing.approve(code, "owner")
        assert again.value.reason == "approved"
        assert await store.pairing.mark_told("ana", "fake:9") is True
        assert await store.pairing.mark_told("ana", "fake:9") is False
        assert (await store.pairing.approved("ana"))["fake:9"].told_at == clock.now()


async def test_a_wrong_code_and_an_expired_code_are_refused_with_what_happened(db_path: Path) -> None:
    clock = FakeClock()
    async with await MemoryStore.open(db_path, clock=clock) as store:
        code, _ = await ask(store, "fake:9", codes(), ttl=600)
        with pytest.raises(PairingCodeError, match=r"^no pending request with code ZZZZZZ$") as wrong:
            await store.pairing.approve("zzz zzz", "trusted")
        assert wrong.value.reason == "unknown"
        await clock.advance(600)
        with pytest.raises(PairingCodeError) as expired:
            await store.pairing.approve(code, "trusted")
        assert expired.value.reason == "expired"
        assert str(expired.value) == f"code {code} expired at {format_time(1_700_000_600)}; ask for a new one"
        assert format_time(1_700_000_600) == "2023-11-14 22:23:20 UTC"
        assert await store.pairing.approved("ana") == {}
        await clock.advance(7 * 86_400 + 1)
        assert await store.pairing.expire() == 1  # a week after it expired, the request is gone
        with pytest.raises(PairingCodeError, match="no pending request"):
            await store.pairing.approve(code, "trusted")


async def test_an_approval_written_by_another_connection_is_seen_at_the_next_read(db_path: Path) -> None:
    clock = FakeClock()
    async with await MemoryStore.open(db_path, clock=clock) as host:
        code, _ = await ask(host, "fake:9", codes())
        assert await host.pairing.approved("ana") == {}  # remembered from here on
        async with await MemoryStore.open(db_path, clock=clock, check=False) as cli:
            await cli.pairing.approve(code, "owner")
        assert (await host.pairing.approved("ana"))["fake:9"].level == "owner"
        conn = sqlite3.connect(db_path)  # a plain writer too: the data version moves for any other connection
        with conn:
            conn.execute("UPDATE paired_senders SET level = 'untrusted'")
        conn.close()
        assert (await host.pairing.approved("ana"))["fake:9"].level == "untrusted"


async def test_revoke_removes_one_approval_and_says_what_it_was(db_path: Path) -> None:
    clock = FakeClock()
    async with await MemoryStore.open(db_path, clock=clock) as store:
        for sender in ("fake:8", "fake:9"):
            code, _ = await ask(store, sender, codes(sender[-1] * 6))
            await store.pairing.approve(code, "trusted")
        assert set(await store.pairing.approved("ana")) == {"fake:8", "fake:9"}  # remembered from here on
        removed = await store.pairing.revoke("ana", "fake:9")
        assert removed is not None
        assert (removed.profile, removed.sender, removed.level, removed.code) == ("ana", "fake:9", "trusted", "999999")
        assert set(await store.pairing.approved("ana")) == {"fake:8"}  # this connection's own delete is seen
        assert await store.pairing.revoke("ana", "fake:9") is None  # nothing left to remove
        assert await store.pairing.revoke("bob", "fake:8") is None  # another profile's approval is not this one
        assert [p.sender for p in await store.pairing.all_approved()] == ["fake:8"]
        code, send = await ask(store, "fake:9", codes("EEEEEE"))  # a revoked sender who writes asks again
        assert (code, send) == ("EEEEEE", True)
        again = await store.pairing.approve(code, "owner")
        assert (again.level, again.told_at) == ("owner", None)  # welcomed again once let in again


async def test_a_revocation_by_another_connection_is_seen_at_the_next_read(db_path: Path) -> None:
    clock = FakeClock()
    async with await MemoryStore.open(db_path, clock=clock) as host:
        code, _ = await ask(host, "fake:9", codes())
        await host.pairing.approve(code, "trusted")
        assert "fake:9" in await host.pairing.approved("ana")  # remembered from here on
        async with await MemoryStore.open(db_path, clock=clock, check=False) as cli:
            assert await cli.pairing.revoke("ana", "fake:9") is not None
        assert await host.pairing.approved("ana") == {}


async def test_bad_arguments_are_refused(db_path: Path) -> None:
    async with await MemoryStore.open(db_path, clock=FakeClock()) as store:
        with pytest.raises(StoreError, match="positive time"):
            await ask(store, "fake:9", codes(), ttl=0)
        with pytest.raises(StoreError, match="level must be"):
            await store.pairing.approve("AAAAAA", "admin")  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="empty code"):
            await ask(store, "fake:9", codes("--"))
