"""The fact log: ids, reading, torn and bad lines, the writer's lock, fsync policies and read cost."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import anyio
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.factlog import FactLog
from ishiki_host.errors import FactLogError, FactLogLocked

CHILDREN = Path(__file__).parent / "children"


def user(text: str) -> dict[str, object]:
    return {"role": "user", "parts": [{"type": "text", "text": text}]}


def file_ids(path: Path) -> list[int]:
    """The ids of the lines of ``path``, read straight from the file."""
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]


def read(path: Path) -> bytes:
    return path.read_bytes()


def put(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_lines(path: Path, count: int, *, start: int = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for index in range(start, start + count):
            out.write(json.dumps({"id": index, "type": "message", "ts": 1.0, "data": user(f"m{index}")}) + "\n")


@pytest.mark.anyio
async def test_appends_get_consecutive_ids_and_survive_reopening(log_path: Path, fake_clock: FakeClock) -> None:
    async with await FactLog.open(log_path, clock=fake_clock) as log:
        first = await log.append("message", user("hello"))
        second = await log.append("event", {"name": "turn.start"}, turn=1)
        more = await log.append_many([("custom", {"kind": "a"}), ("custom", {"kind": "b"})], turn=1)
    assert [first.id, second.id, *(e.id for e in more)] == [1, 2, 3, 4]
    assert first.ts == fake_clock.now()
    assert first.turn is None
    assert second.turn == 1
    lines = read(log_path).splitlines()
    assert json.loads(lines[1]) == {
        "id": 2,
        "type": "event",
        "ts": fake_clock.now(),
        "turn": 1,
        "data": {"name": "turn.start"},
    }
    async with await FactLog.open(log_path, clock=fake_clock) as log:
        assert log.last_id == 4
        assert (await log.append("custom", {})).id == 5
        assert [e.id for e in log.iter_forward()] == [1, 2, 3, 4, 5]


@pytest.mark.anyio
async def test_stored_entry_is_what_a_reader_gets_back(log: FactLog) -> None:
    entry = await log.append("custom", {"pair": (1, 2), "text": "ünïcode"})
    assert entry.data == {"pair": [1, 2], "text": "ünïcode"}
    assert next(log.iter_forward()) == entry


@pytest.mark.anyio
async def test_a_lone_surrogate_is_stored_as_a_replacement_character(log_path: Path, fake_clock: FakeClock) -> None:
    async with await FactLog.open(log_path, clock=fake_clock) as log:
        entry = await log.append("message", user("half an emoji: \ud83d, a split pair: \ud83d\ude00"))
        after = await log.append("message", user("and on it goes"))
    assert entry.data == user("half an emoji: \ufffd, a split pair: 😀")
    lines = read(log_path).decode("utf-8").splitlines()  # the file is valid UTF-8
    assert [json.loads(line)["data"] for line in lines] == [entry.data, after.data]
    async with await FactLog.open(log_path, clock=fake_clock) as log:
        assert [e.data for e in log.iter_forward()] == [entry.data, after.data]


@pytest.mark.anyio
@pytest.mark.parametrize("cache_size", [0, 1, 7, 256])
async def test_readers_agree_whatever_the_cache(log_path: Path, cache_size: int) -> None:
    write_lines(log_path, 40)
    async with await FactLog.open(log_path, cache_size=cache_size) as log:
        await log.append_many([("custom", {"n": n}) for n in range(10)])
        ids = list(range(1, 51))
        assert [e.id for e in log.iter_forward()] == ids
        assert [e.id for e in log.iter_reverse()] == ids[::-1]
        assert [e.id for e in log.tail(12)] == ids[-12:]
        assert [e.id for e in log.tail(500)] == ids
        assert log.tail(0) == []
        assert [e.id for e in log.iter_forward(after_id=45)] == ids[45:]


@pytest.mark.anyio
@pytest.mark.parametrize("keep", [0, 1, 5])
async def test_readers_agree_after_the_cache_shrinks_and_appends_refill_it(log_path: Path, keep: int) -> None:
    write_lines(log_path, 40)
    async with await FactLog.open(log_path, cache_size=16) as log:
        assert log.cached == 16
        assert log.shrink_cache(keep) == 16 - keep
        assert log.cached == keep
        assert log.shrink_cache(keep) == 0  # nothing more to give back
        parsed = log.stats.lines_parsed
        assert [e.id for e in log.tail(12)] == list(range(29, 41))
        assert log.stats.lines_parsed - parsed == 12 - keep  # what is not cached is read from the file
        await log.append_many([("custom", {"n": n}) for n in range(3)])
        assert log.cached == keep + 3
        ids = list(range(1, 44))
        assert [e.id for e in log.iter_reverse()] == ids[::-1]
        assert await log.read_back(lambda entries: [e.id for e in entries]) == ids[::-1]
        assert [e.id for e in log.iter_forward(after_id=38)] == ids[38:]
        with pytest.raises(ValueError, match="keep must be >= 0"):
            log.shrink_cache(-1)


@pytest.mark.anyio
async def test_the_cache_grows_to_hold_the_window_read_back_reads(log_path: Path) -> None:
    write_lines(log_path, 100)
    async with await FactLog.open(log_path, cache_size=30) as log:
        log.shrink_cache(2)

        def newest(count: int):  # type: ignore[no-untyped-def]
            return lambda entries: [e.id for _, e in zip(range(count), entries, strict=False)]

        assert await log.read_back(newest(20)) == list(range(100, 80, -1))  # 18 of them from the file
        assert log.cached == 20
        read = log.stats.bytes_read
        assert await log.read_back(newest(20)) == list(range(100, 80, -1))
        assert log.stats.bytes_read == read  # the same window again: all from the cache
        assert await log.read_back(newest(60)) == list(range(100, 40, -1))  # a wider window: the cache grows
        assert log.cached == 60
        read = log.stats.bytes_read
        assert await log.read_back(newest(60)) == list(range(100, 40, -1))
        assert log.stats.bytes_read == read  # no step re-reads the window from the file
        await log.append_many([("custom", {}) for _ in range(20)])
        assert log.cached == 80  # room for appends beyond the window: it does not fall out at the next step
        log.shrink_cache(0)
        await log.append_many([("custom", {}) for _ in range(40)])
        assert log.cached == 30  # after a shrink, the cache is back to its size
        assert [e.id for e in log.iter_reverse()] == list(range(160, 0, -1))
        assert [e.id for e in log.tail(3)] == [158, 159, 160]
        assert [e.id for e in log.iter_forward(after_id=155)] == [156, 157, 158, 159, 160]


@pytest.mark.anyio
async def test_reading_the_tail_costs_what_the_tail_is_not_what_the_file_is(tmp_path: Path) -> None:
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    write_lines(small, 100)
    write_lines(big, 50_000)
    costs = []
    for path in (small, big):
        async with await FactLog.open(path, cache_size=0) as log:
            bytes_before, lines_before = log.stats.bytes_read, log.stats.lines_parsed
            assert len(log.tail(20)) == 20
            costs.append((log.stats.bytes_read - bytes_before, log.stats.lines_parsed - lines_before))
    assert costs[0][1] == costs[1][1] == 20
    assert costs[1][0] <= 64 * 1024  # one block, though the big file is about 3.5 MB
    assert len(read(big)) > 40 * costs[1][0]


@pytest.mark.anyio
async def test_recent_entries_come_from_the_cache(log_path: Path) -> None:
    write_lines(log_path, 1000)
    async with await FactLog.open(log_path, cache_size=64) as log:
        await log.append("custom", {})
        before = log.stats.bytes_read
        assert [e.id for e in log.tail(50)] == list(range(952, 1002))
        assert log.stats.bytes_read == before
        assert len(log.tail(100)) == 100
        assert log.stats.bytes_read > before


@pytest.mark.anyio
async def test_read_back_runs_from_cache_and_falls_back_to_a_thread(log_path: Path) -> None:
    write_lines(log_path, 100)
    async with await FactLog.open(log_path, cache_size=8) as log:

        def ids_down_to(stop: int):  # type: ignore[no-untyped-def]
            def select(entries):  # type: ignore[no-untyped-def]
                return [e.id for e in entries if e.id >= stop][: 101 - stop]

            return select

        before = log.stats.bytes_read
        assert await log.read_back(lambda it: [next(it).id, next(it).id]) == [100, 99]
        assert log.stats.bytes_read == before
        assert await log.read_back(ids_down_to(80)) == list(range(100, 79, -1))
        assert log.stats.bytes_read > before


@pytest.mark.anyio
async def test_a_torn_last_line_is_set_aside(log_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_lines(log_path, 3)
    with log_path.open("ab") as out:
        out.write(b'{"id":4,"type":"mess')
    with caplog.at_level(logging.WARNING):
        async with await FactLog.open(log_path) as log:
            assert log.last_id == 3
            assert len(log.warnings) == 1
            assert "torn tail of 20 bytes" in log.warnings[0]
            assert (await log.append("custom", {})).id == 4
    assert "torn tail" in caplog.text
    corrupt = read(log_path.with_name("facts.jsonl.corrupt"))
    assert corrupt.startswith(b"# ")
    assert corrupt.endswith(b'{"id":4,"type":"mess\n')
    assert file_ids(log_path) == [1, 2, 3, 4]


@pytest.mark.anyio
async def test_a_complete_entry_missing_its_newline_counts_as_torn(log_path: Path) -> None:
    write_lines(log_path, 2)
    with log_path.open("ab") as out:
        out.write(b'{"id":3,"type":"custom","ts":1,"data":{}}')
    async with await FactLog.open(log_path) as log:
        assert log.last_id == 2
        assert log.warnings


@pytest.mark.anyio
async def test_a_zero_filled_tail_is_set_aside_and_appends_go_on(log_path: Path) -> None:
    write_lines(log_path, 2)
    with log_path.open("ab") as out:
        out.write(b"\0" * 300 + b"\n" + b"\0" * 10)
    async with await FactLog.open(log_path) as log:
        assert log.last_id == 2
        await log.append("custom", {})
    assert file_ids(log_path) == [1, 2, 3]
    assert len(read(log_path.with_name("facts.jsonl.corrupt"))) > 310


@pytest.mark.anyio
async def test_a_torn_first_line_leaves_an_empty_log(log_path: Path) -> None:
    put(log_path, b'{"id":1,"ty')
    async with await FactLog.open(log_path) as log:
        assert log.last_id == 0
        assert read(log_path) == b""
        assert (await log.append("custom", {})).id == 1


@pytest.mark.anyio
async def test_a_file_that_is_not_a_fact_log_is_refused_untouched(log_path: Path) -> None:
    put(log_path, b"name: not a log\nother: yaml\n")
    with pytest.raises(FactLogError, match="does not look like a fact log"):
        await FactLog.open(log_path)
    assert read(log_path) == b"name: not a log\nother: yaml\n"


@pytest.mark.anyio
async def test_a_bad_line_in_the_middle_is_skipped_with_one_warning(log_path: Path) -> None:
    write_lines(log_path, 3)
    with log_path.open("a") as out:
        out.write("this is not json\n\n")
    write_lines(log_path, 3, start=4)
    async with await FactLog.open(log_path, cache_size=2) as log:
        assert log.last_id == 6
        assert [e.id for e in log.iter_forward()] == [1, 2, 3, 4, 5, 6]
        assert [e.id for e in log.iter_reverse()] == [6, 5, 4, 3, 2, 1]
        assert len(log.warnings) == 1
        assert "skipped a bad line" in log.warnings[0]


@pytest.mark.anyio
async def test_a_second_writer_in_this_process_is_refused(log_path: Path) -> None:
    log = await FactLog.open(log_path)
    with pytest.raises(FactLogLocked, match=rf"{log_path}.*pid {os.getpid()}"):
        await FactLog.open(log_path)
    await log.close()
    await log.close()  # idempotent
    async with await FactLog.open(log_path):
        pass


@pytest.mark.anyio
async def test_a_second_writer_in_another_process_is_refused(log_path: Path) -> None:
    with anyio.fail_after(30):
        async with await anyio.open_process([sys.executable, str(CHILDREN / "hold_lock.py"), str(log_path)]) as child:
            assert child.stdout is not None
            assert child.stdin is not None
            buffer = b""
            async for chunk in child.stdout:
                buffer += chunk
                if b"locked" in buffer:
                    break
            with pytest.raises(FactLogLocked, match=rf"{log_path}.*held by pid {child.pid}"):
                await FactLog.open(log_path)
            await child.stdin.aclose()
            assert await child.wait() == 0
    async with await FactLog.open(log_path) as log:
        assert log.last_id == 1


@pytest.mark.anyio
async def test_a_killed_writer_leaves_no_stale_lock(log_path: Path) -> None:
    with anyio.fail_after(30):
        async with await anyio.open_process([sys.executable, str(CHILDREN / "hold_lock.py"), str(log_path)]) as child:
            assert child.stdout is not None
            async for chunk in child.stdout:
                if b"locked" in chunk:
                    break
            child.kill()
            await child.wait()
    async with await FactLog.open(log_path) as log:
        assert log.last_id == 1
        assert read(log_path.with_name("facts.jsonl.lock")).strip() == str(os.getpid()).encode()


@pytest.mark.anyio
async def test_a_writer_killed_mid_append_leaves_a_torn_line_that_is_set_aside(log_path: Path) -> None:
    with anyio.fail_after(30):
        async with await anyio.open_process([sys.executable, str(CHILDREN / "torn_append.py"), str(log_path)]) as child:
            assert child.stdout is not None
            async for chunk in child.stdout:
                if b"torn" in chunk:
                    break
            child.send_signal(9)
            assert await child.wait() == -9
    raw = read(log_path)
    assert not raw.endswith(b"\n")  # the kill really left half a line
    async with await FactLog.open(log_path) as log:
        assert log.last_id == 5
        assert "torn tail" in log.warnings[0]
        assert (await log.append("custom", {})).id == 6
    assert read(log_path.with_name("facts.jsonl.corrupt")).count(b"x") > 40_000


@pytest.mark.anyio
async def test_fsync_always_syncs_every_append(log_path: Path) -> None:
    calls: list[int] = []
    async with await FactLog.open(log_path, fsync="always", syncer=calls.append) as log:
        await log.append("custom", {}, turn=1)
        await log.append("custom", {})
        await log.append_many([("custom", {}), ("custom", {})], turn=1)
        assert len(calls) == 3
        assert log.durable_id == 4


@pytest.mark.anyio
async def test_fsync_turn_syncs_outside_turns_at_once_and_inside_on_request(log_path: Path) -> None:
    calls: list[int] = []
    async with await FactLog.open(log_path, fsync="turn", syncer=calls.append) as log:
        inbound = await log.append("message", user("hi"))
        assert len(calls) == 1
        assert log.durable_id == inbound.id
        await log.append("event", {"name": "turn.start"}, turn=1)
        await log.append("message", {"role": "assistant", "parts": []}, turn=1)
        assert len(calls) == 1
        assert log.durable_id == 1
        await log.sync()
        await log.sync()  # nothing new: no second fsync
        assert len(calls) == 2
        assert log.durable_id == 3
        await log.append("custom", {}, turn=1)
    assert len(calls) == 3  # close syncs what is pending


@pytest.mark.anyio
async def test_fsync_never_never_syncs(log_path: Path) -> None:
    calls: list[int] = []
    async with await FactLog.open(log_path, fsync="never", syncer=calls.append) as log:
        await log.append("message", user("hi"))
        await log.sync()
    assert calls == []


@pytest.mark.anyio
async def test_concurrent_appends_share_an_fsync_and_keep_ids_in_file_order(log_path: Path) -> None:
    calls: list[int] = []
    async with await FactLog.open(log_path, syncer=calls.append) as log:
        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(log.append, "message", user(str(n)))
        assert log.durable_id == 50
    assert len(calls) <= 50
    assert file_ids(log_path) == list(range(1, 51))


@pytest.mark.anyio
async def test_large_appends_are_written_whole(log: FactLog) -> None:
    blob = "y" * 600_000
    entry = await log.append("custom", {"blob": blob})
    assert log.tail(1) == [entry]
    assert next(log.iter_forward()).data["blob"] == blob


@pytest.mark.anyio
async def test_bad_arguments_and_closed_logs_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fsync policy"):
        await FactLog.open(tmp_path / "x.jsonl", fsync="sometimes")  # type: ignore[arg-type]
    with pytest.raises(FactLogError, match=f"cannot open fact log {tmp_path}"):
        await FactLog.open(tmp_path)
    log = await FactLog.open(tmp_path / "y.jsonl")
    await log.close()
    with pytest.raises(FactLogError, match="is closed"):
        await log.append("custom", {})
    with pytest.raises(FactLogError, match="is closed"):
        log.tail(1)
    with pytest.raises(FactLogError, match="is closed"):
        log.iter_forward()


@pytest.mark.anyio
async def test_close_waits_for_a_read_running_in_a_thread(log_path: Path) -> None:
    import threading

    write_lines(log_path, 50)
    log = await FactLog.open(log_path, cache_size=4)
    in_thread, release = threading.Event(), threading.Event()
    order: list[str] = []

    def select(entries):  # type: ignore[no-untyped-def]
        ids = [next(entries).id for _ in range(4)]
        in_a_thread = threading.current_thread() is not threading.main_thread()
        if in_a_thread:
            in_thread.set()
            release.wait(10)
        ids += [e.id for e in entries]
        if in_a_thread:
            order.append("read")
        return ids

    async def close() -> None:
        await anyio.to_thread.run_sync(in_thread.wait, 10)
        async with anyio.create_task_group() as tg:
            tg.start_soon(log.close)
            while not log.closed:  # close() has begun: without its wait, the file would be closed now
                await anyio.lowlevel.checkpoint()
            release.set()
        order.append("closed")

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(close)
            assert await log.read_back(select) == list(range(50, 0, -1))
    assert order == ["read", "closed"]
    assert log.closed
