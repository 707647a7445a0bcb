"""Crash consistency with worker processes: ``ishiki run --workers 2`` on Telegram, its workers SIGKILLed while
their supervisor lives on, and the supervisor itself SIGKILLed at random moments (the harness is
``bench/_crash.py``; ``test_crash_consistency.py`` says what must hold at the end, after every restart).

A worker that dies takes the turns it ran with it: the events it had made durable are in its fact logs, one it
was taking when it died was refused to the channel as "not yet" (Telegram then gives it again, and the
respawned runtime recognises a repeat), and its runtimes come back on the next worker from their logs. So the
same properties hold as with one process: every message recorded once, every direct message answered once
(at most once where a kill cut its send in flight), every tool call with one result, a sound memory.db.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SEED = 20_241_202


async def test_sigkill_of_workers_and_of_their_supervisor_loses_nothing_and_answers_once(
    crash_harness: ModuleType, crash_run: Callable[[Any], Awaitable[tuple[Any, str]]]
) -> None:
    plan = crash_harness.CrashPlan(
        seed=SEED, platform="telegram", messages=240, chats=30, groups=6, kills=10, workers=2, worker_kills=1
    )
    report, summary = await crash_run(plan)
    assert report.kills >= 8, summary
    assert report.worker_kills >= 5, summary
    assert not report.failed(), summary
