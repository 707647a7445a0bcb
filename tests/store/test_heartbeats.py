"""Heartbeat storage: user beats, managed sync by id, due order, run history."""

from __future__ import annotations

import dataclasses

import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import StoreError
from ishiki_host.store import BeatSpec, BeatTarget, MemoryStore

pytestmark = pytest.mark.anyio

TARGET = BeatTarget("alice", "telegram:1", "private:9")


def _spec(beat_id: str, text: str = "stretch", cron: str = "0 9 * * *", **kw: object) -> BeatSpec:
    return BeatSpec(beat_id, text, kw.pop("type", "task"), cron, **kw)  # type: ignore[arg-type]


class Scheduler:
    """A stand-in for cron: hands out increasing times and records which beats it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, spec: BeatSpec) -> float:
        self.asked.append(spec.id)
        return 1000.0 + len(self.asked)


async def test_user_beat_crud(store: MemoryStore, fake_clock: FakeClock) -> None:
    beat = await store.heartbeats.add(_spec("u1", target=TARGET), next_run=50.0, created_by="alice/main")
    assert (beat.managed, beat.created_by, beat.next_run, beat.target, beat.created_at) == (
        False,
        "alice/main",
        50.0,
        TARGET,
        fake_clock.now(),
    )
    with pytest.raises(StoreError, match="'u1' already exists"):
        await store.heartbeats.add(_spec("u1"), next_run=None)
    updated = await store.heartbeats.update(dataclasses.replace(beat.spec, text="drink water"), next_run=60.0)
    assert (updated.text, updated.next_run, updated.created_by) == ("drink water", 60.0, "alice/main")
    assert [b.id for b in await store.heartbeats.find(created_by="alice/main")] == ["u1"]
    assert [b.id for b in await store.heartbeats.find(target=TARGET)] == ["u1"]
    assert await store.heartbeats.find(target=BeatTarget("bob", "x", "y")) == []
    assert await store.heartbeats.delete("u1")
    assert not await store.heartbeats.delete("u1")
    with pytest.raises(StoreError, match="no beat with id 'u1'"):
        await store.heartbeats.update(_spec("u1"), next_run=None)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (_spec("b", type="alarm"), "beat 'b': type 'alarm' is not one of reminder, task"),
        (_spec("b", text=" "), "beat 'b': text is empty"),
        (_spec("b", cron=""), "beat 'b': cron is empty"),
        (_spec(""), "needs an id"),
        (_spec("b", target=BeatTarget("alice", "", "c")), "needs profile, sid and channel"),
    ],
)
async def test_bad_beats_are_refused_by_id(store: MemoryStore, spec: BeatSpec, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        await store.heartbeats.add(spec, next_run=None)


async def test_managed_sync_by_id_leaves_user_beats_alone(store: MemoryStore, fake_clock: FakeClock) -> None:
    hb = store.heartbeats
    await hb.add(_spec("mine", text="my own beat"), next_run=5.0, created_by="alice/main")
    first = Scheduler()
    report = await hb.sync_managed([_spec("m1"), _spec("m2"), _spec("m3")], schedule=first)
    assert (report.added, report.updated, report.removed, report.conflicts) == (["m1", "m2", "m3"], [], [], [])
    assert first.asked == ["m1", "m2", "m3"]
    await hb.reschedule("m2", next_run=2000.0, last_run=1500.0)
    await fake_clock.advance(1)

    second = Scheduler()
    report = await hb.sync_managed(
        [_spec("m1", cron="30 9 * * *"), _spec("m2", text="stretch well"), _spec("m4")], schedule=second
    )
    assert (report.added, report.updated, report.removed) == (["m4"], ["m1", "m2"], ["m3"])
    assert second.asked == ["m1", "m4"]  # m2 changed only its text: its schedule is kept
    beats = {b.id: b for b in await hb.find()}
    assert sorted(beats) == ["m1", "m2", "m4", "mine"]
    assert (beats["m1"].cron, beats["m1"].next_run) == ("30 9 * * *", 1001.0)
    assert (beats["m2"].text, beats["m2"].next_run, beats["m2"].last_run) == ("stretch well", 2000.0, 1500.0)
    assert beats["m2"].updated_at == fake_clock.now()
    mine = beats["mine"]
    assert (mine.managed, mine.text, mine.next_run, mine.created_by) == (False, "my own beat", 5.0, "alice/main")

    report = await hb.sync_managed([], schedule=Scheduler())
    assert report.removed == ["m1", "m2", "m4"]
    assert [b.id for b in await hb.find()] == ["mine"]


async def test_sync_without_changes_changes_nothing(store: MemoryStore) -> None:
    specs = [_spec("m1", target=TARGET), _spec("m2", type="reminder", timezone="Asia/Tokyo", recurring=False)]
    await store.heartbeats.sync_managed(specs, schedule=Scheduler())
    scheduler = Scheduler()
    report = await store.heartbeats.sync_managed(specs, schedule=scheduler)
    assert not report.changed
    assert scheduler.asked == []


async def test_sync_conflicts_and_kept_ids(store: MemoryStore) -> None:
    hb = store.heartbeats
    await hb.add(_spec("taken", text="the user's"), next_run=None)
    await hb.sync_managed([_spec("m1"), _spec("broken-now")], schedule=Scheduler())
    report = await hb.sync_managed(
        [_spec("taken", text="the file's"), _spec("m1")], schedule=Scheduler(), keep_ids=["broken-now"]
    )
    assert report.conflicts == ["taken"]
    assert report.removed == []
    taken = await hb.get("taken")
    assert taken is not None
    assert (taken.text, taken.managed) == ("the user's", False)
    assert await hb.get("broken-now") is not None


async def test_a_failing_schedule_rolls_the_sync_back(store: MemoryStore) -> None:
    await store.heartbeats.sync_managed([_spec("m1")], schedule=Scheduler())

    def bad_cron(spec: BeatSpec) -> float:
        raise ValueError(f"bad cron in {spec.id}")

    with pytest.raises(ValueError, match="bad cron in m2"):
        await store.heartbeats.sync_managed([_spec("m2")], schedule=bad_cron)
    assert [b.id for b in await store.heartbeats.find()] == ["m1"]


async def test_duplicate_ids_in_a_sync_are_refused(store: MemoryStore) -> None:
    with pytest.raises(StoreError, match="repeated: m1"):
        await store.heartbeats.sync_managed([_spec("m1"), _spec("m1")], schedule=Scheduler())


async def test_managed_beats_are_protected(store: MemoryStore) -> None:
    await store.heartbeats.sync_managed([_spec("m1")], schedule=Scheduler())
    with pytest.raises(StoreError, match=r"comes from heartbeats\.json"):
        await store.heartbeats.update(_spec("m1", text="hijack"), next_run=None)
    with pytest.raises(StoreError, match=r"comes from heartbeats\.json"):
        await store.heartbeats.delete("m1")
    await store.heartbeats.update(_spec("m1", text="by the scheduler"), next_run=None, allow_managed=True)
    assert await store.heartbeats.delete("m1", allow_managed=True)


async def test_due_beats_in_order(store: MemoryStore, fake_clock: FakeClock) -> None:
    now = fake_clock.now()
    hb = store.heartbeats
    await hb.add(_spec("later"), next_run=now + 60)
    await hb.add(_spec("late"), next_run=now - 30)
    await hb.add(_spec("latest"), next_run=now - 1)
    await hb.add(_spec("never"), next_run=None)
    assert [b.id for b in await hb.due()] == ["late", "latest"]
    assert [b.id for b in await hb.due(limit=1)] == ["late"]
    assert [b.id for b in await hb.due(now=now + 60)] == ["late", "latest", "later"]
    nxt = await hb.next_due()
    assert nxt is not None
    assert nxt.id == "late"
    await hb.reschedule("late", next_run=None, last_run=now)
    await hb.reschedule("latest", next_run=None)
    nxt = await hb.next_due()
    assert nxt is not None
    assert nxt.id == "later"
    assert not await hb.reschedule("missing", next_run=1.0)


async def test_run_history(store: MemoryStore, fake_clock: FakeClock) -> None:
    hb = store.heartbeats
    run = await hb.start_run("b1")
    assert run.outcome == "running"
    await fake_clock.advance(2)
    done = await hb.finish_run(run.id, "ok", "stretched")
    assert (done.outcome, done.output, done.finished_at) == ("ok", "stretched", fake_clock.now())
    with pytest.raises(StoreError, match="already finished"):
        await hb.finish_run(run.id, "failed")
    with pytest.raises(StoreError, match="run outcome 'meh'"):
        await hb.finish_run(run.id, "meh")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="no beat run with id 999"):
        await hb.finish_run(999, "ok")
    crashed = await hb.start_run("b1")
    await fake_clock.advance(1)
    assert await hb.fail_unfinished_runs() == 1
    runs = await hb.runs("b1")
    assert [(r.id, r.outcome) for r in runs] == [(crashed.id, "failed"), (run.id, "ok")]
    assert runs[0].output is not None
    assert "stopped" in runs[0].output
    await fake_clock.advance(86_400)
    await hb.start_run("b1")
    assert await hb.prune_runs(3600) == 2
    assert [r.outcome for r in await hb.runs("b1")] == ["running"]
