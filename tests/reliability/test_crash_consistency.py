"""Crash consistency: a real ``ishiki run`` on Telegram, SIGKILLed 24 times while it answers 500 messages.

The harness is ``bench/_crash.py`` (its module docstring says how lives, kills and torn tails are chosen; all
from the seed, kill points as counts of observed events). What must hold at the end, after every restart:

- every inbound message is in a fact log exactly once;
- every direct message got exactly one answer, or, when a kill cut its ``send_message`` call in flight (the
  recovery answers that call "interrupted"), at most one; group messages that mention nobody got none;
- every tool call has exactly one result;
- ``memory.db`` passes ``PRAGMA integrity_check`` (the harness's ``memo`` extension writes a row per turn);
- every torn tail written at the end of a fact log was set aside into ``facts.jsonl.corrupt`` with a warning,
  and no line of any log is left unparseable;
- every killed life died of SIGKILL and the others exited 0 after SIGTERM.

A host that records a redelivered Telegram update twice fails the first property. The channel confirms an
update only after its event is durable, so a kill between the two makes Telegram send it again; recognising
the repeat is the host's job. While the host does not (``host_drops_repeats`` asks it directly), that one
failure is an expected failure, and the test says so with the numbers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SEED = 20_240_501
INBOUND_ONCE = "inbound messages in a fact log exactly once"


@pytest.mark.xfail(
    strict=False,
    reason="was seen failing in about 1 run in 3 (a direct message that came while its chat's turn was ending, "
    "then a SIGKILL before the post-turn decision: never answered); scan_tail now owes such input a decision "
    "(tests/runtime/test_resume_scan.py). Non-strict until many runs confirm no other race is left (issue 13).",
)
async def test_sigkill_at_random_moments_loses_nothing_and_answers_once(
    crash_harness: ModuleType,
    ishiki_bin: Path,
    tmp_path: Path,
    subprocess_env: dict[str, str],
    host_drops_repeats: Callable[[], Awaitable[bool]],
) -> None:
    plan = crash_harness.CrashPlan(seed=SEED)
    assert (plan.messages, plan.chats, plan.kills) == (500, 50, 24)
    report = await crash_harness.CrashRun(plan, tmp_path / "crash", ishiki_bin, env=subprocess_env).run()
    summary = "\n".join(report.lines())
    print(summary)
    assert report.kills >= 20, summary
    failed = {p.name for p in report.failed()}
    if failed == {INBOUND_ONCE} and not await host_drops_repeats():
        pytest.xfail(f"the host records a redelivered update again (host-side deduplication: issue 8)\n{summary}")
    assert not failed, summary
