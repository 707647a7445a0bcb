"""The standard engine's kept window in a runtime: turn after turn it reads only what was appended, a cooled
log takes the engine's copies with it, and the model sees the same conversation either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.engines.context.standard import StandardContext, StandardContextEngine
from ishiki_host.engines.wakeup.standard import StandardWakeupEngine
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import ScriptedModel, reply

pytestmark = pytest.mark.anyio


def texts(request: Any) -> list[str]:
    return [message.text for message in request.messages[1:]]


async def test_a_cooled_log_takes_the_kept_window_with_it_and_the_next_turn_sees_the_same(
    tmp_path: Path, inbound: Any
) -> None:
    model = ScriptedModel([reply(f"answer {n}") for n in range(6)])
    with anyio.fail_after(20):
        async with RuntimeHarness(
            tmp_path, model=model, hooks=[lambda rt: StandardContextEngine().create(rt, {})]
        ) as rt:
            instance = rt.hooks[0]
            assert isinstance(instance, StandardContext)
            StandardWakeupEngine().create(rt.context, {}).attach(rt.context)  # a private chat: every message
            for number in range(3):
                await rt.agent.send(inbound(f"question {number}", channel="private:1", message_id=str(number)))
                await rt.agent.wait_idle()
            assert (instance.window.rebuilds, instance.projection.rebuilds) == (1, 1)  # then only what was added
            parsed = rt.log.stats.lines_parsed
            rt.log.shrink_cache()  # what cooling an idle runtime does
            assert instance.window._live is None  # the engine's copies went with the log's
            for number in range(3, 5):
                await rt.agent.send(inbound(f"question {number}", channel="private:1", message_id=str(number)))
                await rt.agent.wait_idle()
            assert instance.window.rebuilds == 2
            assert rt.log.stats.lines_parsed > parsed  # read again from the file, once
    last = texts(model.requests[-1])
    assert [t for t in last if t.startswith("answer")] == [f"answer {n}" for n in range(4)]
    assert sum("question" in t for t in last) == 5
