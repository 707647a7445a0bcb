"""Crash consistency: a real ``ishiki run`` on Telegram, on WhatsApp's Cloud API, and on QQ over OneBot v11,
SIGKILLed 24 times while it answers 500 messages.

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
the repeat is the host's job (``channels.repeats``, tested on its own in ``tests/channels/test_repeats.py``).
WhatsApp's likewise: a webhook is answered 200 only once its message is durable, so Meta's side (played by
the harness) posts it again after a kill between the two, and it must be recorded and answered once. OneBot's
in http mode too: an event post is answered 204 only once durable, and the implementation's side (played by the
harness, the package's fake implementation taking the bot's actions) posts it again until then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SEED = 20_240_501


@pytest.mark.parametrize("platform", ["telegram", "whatsapp", "onebot"])
async def test_sigkill_at_random_moments_loses_nothing_and_answers_once(
    crash_harness: ModuleType, crash_run: Callable[[Any], Awaitable[tuple[Any, str]]], platform: str
) -> None:
    plan = crash_harness.CrashPlan(seed=SEED, platform=platform)
    assert (plan.messages, plan.chats, plan.kills) == (500, 50, 24)
    report, summary = await crash_run(plan)
    assert report.kills >= 20, summary
    assert not report.failed(), summary
