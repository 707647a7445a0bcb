"""Heartbeats on a real PostgreSQL: a due beat is claimed by one claimer of many (several pools at once), once for
each slot, moved on by the heartbeat's own schedule; a claim that expires passes the run to another claimer and
its old holder records nothing; a claimer that dies inside its transaction loses nothing; and bad input (an
unknown beat, a schedule that does not parse) is refused with the beat named."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import anyio
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from ishiki_host.errors import StoreError
from ishiki_host.heartbeat.rules import next_run_for
from ishiki_host.store.pg.beats import BeatClaim, ClaimLost, PgBeats
from ishiki_host.store.repos.beat_types import BeatSpec

pytestmark = pytest.mark.anyio


def next_run(spec: BeatSpec, *, after: float) -> float | None:
    """The schedule the host's SQLite scheduler uses, in UTC."""
    return next_run_for(spec, default_tz="UTC", after=after)


def spec(beat_id: str, cron: str = "*/5 * * * *", **fields: Any) -> BeatSpec:
    return BeatSpec(beat_id, f"say {beat_id}", "task", cron, **fields)


async def db_now(pool: AsyncConnectionPool[Any]) -> float:
    async with pool.connection() as conn:
        row = await (await conn.execute("SELECT extract(epoch FROM now())::float8")).fetchone()
    assert row is not None
    return float(row[0])


async def beats_of(pool: AsyncConnectionPool[Any], holder: str, *, claim_seconds: float = 30) -> PgBeats:
    beats = PgBeats(pool, holder, next_run=next_run, claim_seconds=claim_seconds)
    await beats.setup()
    return beats


async def until_claimed(beats: PgBeats, cap: float = 60.0) -> list[BeatClaim]:
    """``beats.claim()`` until it claims something: a claim before it ends on the database's clock. A cap only as
    a last resort."""
    deadline = time.monotonic() + cap
    while not (claims := await beats.claim()):
        assert time.monotonic() < deadline, f"timed out: {beats.holder} never claimed a run"
        await anyio.sleep(0.05)
    return claims


async def test_a_due_beat_is_claimed_once_and_moves_to_its_next_slot(pg_pool: AsyncConnectionPool[Any]) -> None:
    a, b = await beats_of(pg_pool, "host-a"), await beats_of(pg_pool, "host-b")
    await b.setup()  # twice is fine
    due = await db_now(pg_pool) - 60
    await a.add(spec("news"), first_run=due)
    await a.add(spec("later"))  # its schedule's first slot: not due yet
    [claim] = await a.claim()
    assert (claim.beat.id, claim.due_at, claim.holder, claim.attempt) == ("news", due, "host-a", 1)
    assert claim.claimed_until > await db_now(pg_pool) + 20
    assert await b.claim() == []  # claimed: the slot is host-a's
    stored = await a.get("news")
    assert stored is not None
    assert stored.next_run == next_run(stored.spec, after=stored.last_run or 0)
    assert stored.next_run is not None
    assert stored.next_run > due + 60  # the next slot, after the claim
    [running] = await a.runs("news")
    assert (running.id, running.outcome, running.finished_at) == (claim.run_id, "running", None)
    done = await a.finish(claim, "ok", "said news")
    assert (done.id, done.outcome, done.output) == (claim.run_id, "ok", "said news")
    assert done.finished_at is not None
    assert done.finished_at >= done.started_at
    with pytest.raises(StoreError, match=rf"beat run {claim.run_id} already finished \(ok\)"):
        await a.finish(claim, "ok")


async def test_many_claimers_on_several_pools_at_once_never_share_a_slot(
    pg_pool: AsyncConnectionPool[Any], postgres_url: str
) -> None:
    seeder = await beats_of(pg_pool, "seeder")
    now = await db_now(pg_pool)
    ids = [f"beat-{n:02}" for n in range(40)]
    for beat_id in ids:
        await seeder.add(spec(beat_id), first_run=now - 120)
    claims: list[BeatClaim] = []
    async with contextlib.AsyncExitStack() as stack:
        pools = [pg_pool]
        for _ in range(3):
            pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                postgres_url, min_size=2, max_size=4, open=False, kwargs={"autocommit": True}
            )
            await pool.open(wait=True)
            stack.push_async_callback(pool.close)
            pools.append(pool)
        claimers = [PgBeats(pools[n % 4], f"host-{n}", next_run=next_run) for n in range(8)]
        for slot in (now - 120, now - 60):  # two slots of every beat, one after the other
            for beat_id in ids:
                assert await seeder.reschedule(beat_id, next_run=slot)
            await fleet_claims(claimers, claims)
    slots = [(claim.beat.id, claim.due_at) for claim in claims]
    assert len(slots) == len(set(slots)) == 80  # every slot claimed, none twice
    assert {beat_id for beat_id, _ in slots} == set(ids)
    assert len({claim.holder for claim in claims}) > 1  # they did claim at once
    async with pg_pool.connection() as conn:
        counted = await conn.execute("SELECT count(*), count(DISTINCT (beat_id, due_at)) FROM ishiki_heartbeat_runs")
        assert await counted.fetchone() == (80, 80)


async def fleet_claims(claimers: list[PgBeats], claims: list[BeatClaim]) -> None:
    """Every claimer at once, each claiming three at a time until nothing is due."""
    start = anyio.Event()

    async def claimer(beats: PgBeats) -> None:
        await start.wait()
        while batch := await beats.claim(limit=3):
            claims.extend(batch)

    with anyio.fail_after(60):  # a cap as a last resort
        async with anyio.create_task_group() as tg:
            for beats in claimers:
                tg.start_soon(claimer, beats)
            await anyio.wait_all_tasks_blocked()
            start.set()


async def test_an_expired_claim_passes_on_and_its_old_holder_records_nothing(
    pg_pool: AsyncConnectionPool[Any],
) -> None:
    a, b = await beats_of(pg_pool, "host-a", claim_seconds=0.3), await beats_of(pg_pool, "host-b")
    due = await db_now(pg_pool) - 60
    await a.add(spec("news"), first_run=due)
    [old] = await a.claim()
    moved_to = (await a.get("news") or pytest.fail("no beat")).next_run
    [new] = await until_claimed(b)  # host-a stopped (died, froze) during the run
    assert (new.run_id, new.due_at, new.holder, new.attempt) == (old.run_id, due, "host-b", 2)
    assert new.token > old.token
    assert (await b.get("news") or pytest.fail("no beat")).next_run == moved_to  # the same slot, not a new one
    with pytest.raises(ClaimLost, match=r"'news'.*no longer host-a's"):
        await a.renew(old)
    with pytest.raises(ClaimLost, match=r"'news'.*taken over by host-b.*host-a's result .* is not recorded"):
        await a.finish(old, "ok", "host-a's output")
    renewed = await b.renew(new)
    assert renewed.token == new.token
    assert renewed.claimed_until >= new.claimed_until
    await b.finish(renewed, "ok", "host-b's output")
    with pytest.raises(ClaimLost, match=r"taken over by host-b"):  # still not host-a's, finished or not
        await a.finish(old, "failed")
    assert [(run.outcome, run.output) for run in await a.runs("news")] == [("ok", "host-b's output")]


async def test_a_run_whose_claimers_keep_dying_is_recorded_failed(pg_pool: AsyncConnectionPool[Any]) -> None:
    a, b = await beats_of(pg_pool, "host-a", claim_seconds=0.2), await beats_of(pg_pool, "host-b", claim_seconds=0.2)
    await a.add(spec("crashy"), first_run=await db_now(pg_pool) - 60)
    [first] = await a.claim(max_attempts=2)
    deadline = time.monotonic() + 60
    while not (taken := await b.claim(max_attempts=2)):
        assert time.monotonic() < deadline
        await anyio.sleep(0.05)
    assert [(claim.run_id, claim.attempt) for claim in taken] == [(first.run_id, 2)]
    await anyio.sleep(0.3)  # host-b's claim ends too
    assert await a.claim(max_attempts=2) == []
    [run] = await a.runs("crashy")
    assert run.outcome == "failed"
    assert run.output is not None
    assert "claimed 2 time(s) and never finished" in run.output


async def test_a_claimer_that_dies_inside_its_transaction_loses_nothing(
    pg_pool: AsyncConnectionPool[Any], postgres_url: str
) -> None:
    beats = await beats_of(pg_pool, "host-b")
    due = await db_now(pg_pool) - 60
    for beat_id in ("held", "free"):
        await beats.add(spec(beat_id), first_run=due)
    dying = await psycopg.AsyncConnection.connect(postgres_url)  # host-a, in the middle of its claim
    try:
        await dying.execute("SELECT id FROM ishiki_heartbeat WHERE id = 'held' FOR UPDATE")
        with anyio.fail_after(10):  # passed over, not waited for
            assert [claim.beat.id for claim in await beats.claim()] == ["free"]
        async with pg_pool.connection() as conn:
            await conn.execute("SELECT pg_terminate_backend(%s)", (dying.info.backend_pid,))  # host-a dies
        [claim] = await until_claimed(beats)
        assert (claim.beat.id, claim.due_at, claim.attempt) == ("held", due, 1)
    finally:
        await dying.close()


async def test_a_slot_that_ran_is_not_run_again(pg_pool: AsyncConnectionPool[Any]) -> None:
    beats = await beats_of(pg_pool, "host-a")
    due = await db_now(pg_pool) - 60
    await beats.add(spec("news"), first_run=due)
    [claim] = await beats.claim()
    await beats.finish(claim, "ok")
    assert await beats.reschedule("news", next_run=due)  # back to a slot that ran (an operator, a stuck clock)
    assert await beats.claim() == []
    stored = await beats.get("news")
    assert stored is not None
    assert stored.next_run is not None
    assert stored.next_run > due  # moved on past it
    assert len(await beats.runs("news")) == 1


async def test_a_paused_beat_is_not_claimed_until_resumed(pg_pool: AsyncConnectionPool[Any]) -> None:
    beats = await beats_of(pg_pool, "host-a")
    due = await db_now(pg_pool) - 60
    await beats.add(spec("news"), first_run=due, created_by="ana")
    await beats.add(spec("file"), first_run=None, managed=True)
    assert (await beats.pause("news")).paused
    assert await beats.claim() == []
    assert not (await beats.resume("news", next_run=due)).paused
    assert [claim.beat.id for claim in await beats.claim()] == ["news"]
    with pytest.raises(StoreError, match=r"beat 'file' comes from heartbeats.json"):
        await beats.pause("file")


async def test_bad_input_is_refused_naming_the_beat(pg_pool: AsyncConnectionPool[Any]) -> None:
    beats = await beats_of(pg_pool, "host-a")
    await beats.add(spec("news"))
    with pytest.raises(StoreError, match=r"a beat with id 'news' already exists"):
        await beats.add(spec("news"))
    with pytest.raises(StoreError, match=r"beat 'bad': cannot schedule cron '61 \* \* \* \*': .*61"):
        await beats.add(spec("bad", "61 * * * *"))
    with pytest.raises(StoreError, match=r"beat 'mars': cannot schedule cron .*Mars/Olympus"):
        await beats.add(spec("mars", timezone="Mars/Olympus"))
    with pytest.raises(StoreError, match=r"beat 'empty': cron is empty"):
        await beats.add(spec("empty", " "))
    assert await beats.get("bad") is None
    assert await beats.get("nope") is None
    assert not await beats.reschedule("nope", next_run=0.0)
    with pytest.raises(StoreError, match=r"no beat with id 'nope'"):
        await beats.pause("nope")
    with pytest.raises(StoreError, match=r"no beat with id 'nope'"):
        await beats.resume("nope", next_run=0.0)
    [claim] = await claim_now(beats, "news")
    with pytest.raises(StoreError, match=r"run outcome 'fine' is not one of ok, failed, skipped"):
        await beats.finish(claim, "fine")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match=r"no beat run with id 999999"):
        await beats.finish(BeatClaim(999999, claim.beat, claim.due_at, "host-a", claim.token, 0.0, 1), "ok")
    with pytest.raises(ValueError, match="a claimer of beats needs a name"):
        PgBeats(pg_pool, "", next_run=next_run)
    with pytest.raises(ValueError, match="positive number of seconds, not 0"):
        PgBeats(pg_pool, "host-a", next_run=next_run, claim_seconds=0)


async def claim_now(beats: PgBeats, beat_id: str) -> list[BeatClaim]:
    assert await beats.reschedule(beat_id, next_run=await db_now(beats.pool) - 60)
    return await beats.claim()


async def test_a_stored_schedule_that_no_longer_parses_is_not_run_and_says_why(
    pg_pool: AsyncConnectionPool[Any], caplog: pytest.LogCaptureFixture
) -> None:
    beats = await beats_of(pg_pool, "host-a")
    due = await db_now(pg_pool) - 60
    for beat_id in ("broken", "fine"):
        await beats.add(spec(beat_id), first_run=due)
    async with pg_pool.connection() as conn:  # as a schedule written by an older host, or by hand
        await conn.execute("UPDATE ishiki_heartbeat SET cron = '0 25 * * *' WHERE id = 'broken'")
    assert [claim.beat.id for claim in await beats.claim()] == ["fine"]  # one bad beat stops no other
    [run] = await beats.runs("broken")
    assert run.outcome == "failed"
    assert run.output is not None
    assert run.output.startswith("beat 'broken': cannot schedule cron '0 25 * * *': ")
    assert run.output.endswith("; not run until it is changed")
    assert "beat 'broken': cannot schedule cron '0 25 * * *'" in caplog.text
    stored = await beats.get("broken")
    assert stored is not None
    assert stored.next_run is None
    assert await beats.claim() == []
