"""``HostLogTail``: a bounded ring of log lines, filtered by level and seq, followed with ``wait_after`` (woken by
lines logged on the event loop's thread and on others), installed on a logger only while its block runs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable

import anyio
import pytest

from ishiki_host import LogTail
from ishiki_host.testing import HostLogTail

pytestmark = pytest.mark.anyio

HANG = 10.0


@pytest.fixture
def logger() -> logging.Logger:
    """A logger of its own that lets every level through (and does not reach pytest's handlers)."""
    log = logging.getLogger(f"ishiki_host.test.logtail.{threading.get_ident()}")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    return log


def test_recent_filters_by_level_and_seq_oldest_first(logger: logging.Logger) -> None:
    tail: LogTail = HostLogTail()
    assert (tail.last_seq, tail.recent()) == (0, ())
    with HostLogTail().installed(logger) as tail:
        logger.debug("d %d", 1)
        logger.info("i")
        logger.warning("w")
        logger.error("e")
    assert [(x.seq, x.level, x.message) for x in tail.recent()] == [
        (1, "DEBUG", "d 1"), (2, "INFO", "i"), (3, "WARNING", "w"), (4, "ERROR", "e"),
    ]  # fmt: skip
    assert [x.message for x in tail.recent(min_level="warning")] == ["w", "e"]
    assert [x.message for x in tail.recent(2)] == ["w", "e"]
    assert [x.message for x in tail.recent(after=3)] == ["e"]
    assert tail.recent(0) == ()
    assert tail.last_seq == 4
    assert {x.logger for x in tail.recent()} == {logger.name}


def test_an_unknown_level_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown log level 'LOUD'"):
        HostLogTail().recent(min_level="LOUD")


def test_the_ring_keeps_the_newest_lines_and_seq_keeps_counting(logger: logging.Logger) -> None:
    with HostLogTail(capacity=3).installed(logger) as tail:
        for n in range(5):
            logger.info("line %d", n)
    assert [(x.seq, x.message) for x in tail.recent()] == [(3, "line 2"), (4, "line 3"), (5, "line 4")]


def test_a_traceback_gives_its_last_line_and_a_custom_level_is_kept(logger: logging.Logger) -> None:
    logging.addLevelName(25, "NOTICE")
    with HostLogTail().installed(logger) as tail:
        try:
            1 / 0  # noqa: B018
        except ZeroDivisionError:
            logger.exception("the sum failed")
        logger.log(27, "between the levels")
    failed, odd = tail.recent()
    assert failed.message == "the sum failed\nZeroDivisionError: division by zero"
    assert (odd.level, odd.message) == ("Level 27", "between the levels")
    assert [x.message for x in tail.recent(min_level="NOTICE")] == [failed.message, odd.message]


def test_the_handler_is_removed_when_the_block_ends(logger: logging.Logger) -> None:
    tail = HostLogTail()
    with tail.installed(logger):
        assert tail in logger.handlers
    assert tail not in logger.handlers
    logger.error("after")
    assert tail.last_seq == 0


async def test_wait_after_returns_at_once_when_a_newer_line_exists() -> None:
    tail = HostLogTail()
    tail.write("INFO", "one")
    with anyio.fail_after(HANG):
        await tail.wait_after(0)


async def woken(tail: HostLogTail, log_it: Callable[[], Awaitable[None]]) -> None:
    """A follower waiting after the newest line is woken once ``log_it`` logged one more."""
    done = anyio.Event()

    async def follow(after: int) -> None:
        await tail.wait_after(after)
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(follow, tail.last_seq)
        await anyio.wait_all_tasks_blocked()
        assert not done.is_set()
        await log_it()
        with anyio.fail_after(HANG):
            await done.wait()


async def test_wait_after_is_woken_by_a_line_from_the_loop_and_from_another_thread(logger: logging.Logger) -> None:
    async def here() -> None:
        logger.info("here")

    async def there() -> None:
        thread = threading.Thread(target=logger.info, args=("there",))
        thread.start()
        await anyio.to_thread.run_sync(thread.join)

    with HostLogTail().installed(logger) as tail:
        await woken(tail, here)
        await woken(tail, there)
    assert [x.message for x in tail.recent()] == ["here", "there"]


def test_a_tail_fed_by_hand_keeps_the_line_as_given() -> None:
    tail = HostLogTail()
    line = tail.write("WARNING", "disk almost full", logger="ishiki_host.store", ts=12.5)
    assert tail.recent() == (line,)
    assert (line.seq, line.ts, line.level, line.logger, line.message) == (
        1, 12.5, "WARNING", "ishiki_host.store", "disk almost full",
    )  # fmt: skip
