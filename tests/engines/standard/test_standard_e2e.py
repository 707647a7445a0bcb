"""The three standard engines together: a group chat through ScriptedModel, and real HTTP to the fake OpenAI server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.config.models import ModelsConfig, ModelSpec
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.model import LanguageModel
from ishiki_host.engines.context.standard import StandardContext, StandardContextEngine
from ishiki_host.engines.toolcall.native import NativeToolcallEngine
from ishiki_host.engines.wakeup.standard import StandardWakeupEngine
from ishiki_host.gateway import Gateway
from ishiki_host.plugins.runtime_api import ToolcallEngineInstance
from ishiki_host.testing import FakeOpenAIServer
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import ScriptedModel, reply

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def standard_runtime(tmp_path: Path, model: LanguageModel, **harness: Any) -> AsyncIterator[RuntimeHarness]:
    """A runtime with the default engines, assembled the way the runtime does: wrap, hooks, attach."""
    toolcall = NativeToolcallEngine().create(None, {})
    with anyio.fail_after(20):
        async with RuntimeHarness(
            tmp_path,
            model=toolcall.wrap(model),
            hooks=[lambda rt: StandardContextEngine().create(rt, harness.pop("context", {}))],
            **harness,
        ) as rt:
            dispose = StandardWakeupEngine().create(rt.context, {"keywords": ["tea"]}).attach(rt.context)
            try:
                yield rt
            finally:
                dispose()


def test_native_passes_the_model_through_with_no_hooks_or_instructions() -> None:
    model = ScriptedModel([])
    instance = NativeToolcallEngine().create(None, {})
    assert isinstance(instance, ToolcallEngineInstance)
    assert instance.wrap(model) is model
    assert instance.hooks() is None
    assert anyio.run(instance.instructions) is None


async def test_a_group_chat_is_recorded_and_the_mention_is_answered_with_everything_seen(
    tmp_path: Path, inbound: Any
) -> None:
    model = ScriptedModel([reply("Green tea, Ana.")])
    async with standard_runtime(tmp_path, model) as rt:
        await rt.agent.send(inbound("morning all", message_id="1", user=("7", "Bob")))
        await rt.agent.send(inbound("anyone awake?", message_id="2", user=("8", "Cy"), timestamp=1_700_000_060))
        await rt.agent.send(
            inbound("@bot a drink?", message_id="3", user=("42", "Ana"), mentions=True, trust="untrusted")
        )
        await rt.agent.wait_idle()
        starts = [e.data["triggers"] for e in rt.log.iter_forward() if e.name == "turn.start"]
    assert starts == [[{"by": "continue", "entry": 3, "rule": "mention", "reason": "wakeup.standard"}]]
    (request,) = model.requests
    assert [m.text for m in request.messages[1:]] == [
        '[2023-11-14T22:13:20+00:00 | group | msg 1 | from "Bob" (id 7)]\nmorning all',
        '[2023-11-14T22:14:20+00:00 | group | msg 2 | from "Cy" (id 8)]\nanyone awake?',
        '[2023-11-14T22:13:20+00:00 | group | msg 3 | from "Ana" (id 42) | untrusted sender]\n@bot a drink?',
    ]


@pytest.fixture
async def gateway(fake_openai: FakeOpenAIServer, model_apis: Any, fake_clock: FakeClock) -> AsyncIterator[Gateway]:
    spec = ModelSpec("fake-model", context_window=2000)
    config = ModelsConfig(providers={"fake": fake_openai.provider("fake", [spec])})
    async with Gateway(config, model_apis, clock=fake_clock) as opened:
        yield opened


async def test_a_direct_message_over_real_http(
    tmp_path: Path, inbound: Any, fake_openai: FakeOpenAIServer, gateway: Gateway, fake_clock: FakeClock
) -> None:
    fake_openai.reply("Hello Ana!")
    async with standard_runtime(tmp_path, gateway.model("fake:fake-model"), clock=fake_clock) as rt:
        await rt.agent.send(inbound("hi bot", channel="private:42", message_id="981", user=("42", "Ana")))
        await rt.agent.wait_idle()
        answers = [e.data for e in rt.log.iter_forward() if e.data.get("role") == "assistant"]
    messages = fake_openai.last_request.json["messages"]
    assert messages[0]["role"] == "system"
    assert "first line is a header" in messages[0]["content"]
    assert messages[1] == {
        "role": "user",
        "content": '[2023-11-14T22:13:20+00:00 | private | msg 981 | from "Ana" (id 42)]\nhi bot',
    }
    assert answers[0]["parts"] == [{"type": "text", "text": "Hello Ana!"}]


async def test_a_summary_goes_over_real_http_and_heads_the_next_request(
    tmp_path: Path, inbound: Any, fake_openai: FakeOpenAIServer, gateway: Gateway, fake_clock: FakeClock
) -> None:
    summary_asked: list[dict[str, Any]] = []

    def answer(request: Any) -> Any:
        from ishiki_host.testing import Reply

        system = request.json["messages"][0]["content"]
        if "running summary of a chat" in system:
            summary_asked.append(request.json)
            return Reply("Ana keeps asking about tea.")
        return Reply("noted")

    fake_openai.default = answer
    model = gateway.model("fake:fake-model")
    async with standard_runtime(tmp_path, model, clock=fake_clock, context_window=2000) as rt:
        instance = rt.hooks[0]
        assert isinstance(instance, StandardContext)
        number = 0
        while instance.compactor.cut is None:
            number += 1
            text = f"{number}: tea question " + "with many details " * 20
            await rt.agent.send(inbound(text, channel="private:42", message_id=str(number), user=("42", "Ana")))
            await rt.agent.wait_idle()
        # the summary is a background call: the gateway holds it while the chat was active a moment ago
        await fake_clock.wait_for_sleepers(2)  # the scheduler's grace, and the summary's own deadline
        assert summary_asked == []
        await fake_clock.advance(2.5)
        await instance.compactor.settled()
        await rt.agent.send(inbound("and now?", channel="private:42", message_id="last", user=("42", "Ana")))
        await rt.agent.wait_idle()
        compacts = [e.data for e in rt.log.iter_forward() if e.type == "compact"]
    assert summary_asked[0]["max_tokens"] == 1024
    assert compacts[0]["summary"] == "Ana keeps asking about tea."
    last = fake_openai.last_request.json["messages"]
    assert last[1] == {"role": "user", "content": "Summary of the conversation so far:\nAna keeps asking about tea."}
    assert last[-1]["content"].endswith("\nand now?")
