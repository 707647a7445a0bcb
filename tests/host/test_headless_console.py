"""The end of piped console input stops the host only when the console is its only channel: a headless bot
(stdin empty, as under systemd or ``docker run`` without ``-it``) whose profile also claims the console runs
on. Ctrl-D on the console's terminal is the operator leaving: the host stops whatever else runs."""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping
from typing import Any, ClassVar

import anyio
import pytest

from ishiki_host.channels.console import ConsoleChannel, ConsoleConnection
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


class EmptyStdin(ConsoleChannel):
    """The console with its input already at its end (``terminal``: Ctrl-D at the prompt of a terminal, else a
    pipe); ``ended`` is set when a connection's ``run`` returns."""

    ended: ClassVar[anyio.Event]
    terminal: ClassVar[bool] = False

    def create(self, ctx: Any, account: Mapping[str, Any]) -> ConsoleConnection:
        class Connection(ConsoleConnection):
            async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                try:
                    await super().run(task_status=task_status)
                finally:
                    EmptyStdin.ended.set()

            def _read_prompted(self) -> str | None:
                return None  # the prompt's read at Ctrl-D (the real one reads the process's own terminal)

        interactive = EmptyStdin.terminal
        return Connection(ctx, stdin=io.StringIO(""), stdout=io.StringIO(), interactive=interactive, history=False)


PLUGINS = {"ishiki.channel.console": EmptyStdin}
BOTH = "console:local: ['*']\nfake:bot: ['*']"  # the init template's console claim, plus a bot


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records]


async def first_after_the_end_of_input(host: Any) -> str:
    """What happens first once stdin has ended: ``host stops`` or ``console closed`` (the other never comes)."""
    happened: list[str] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def note(what: str, event: Any) -> None:
                await event()
                happened.append(what)
                tg.cancel_scope.cancel()

            tg.start_soon(note, "host stops", host.wait_stop_requested)
            tg.start_soon(note, "console closed", EmptyStdin.ended.wait)
    return happened[0]


async def test_with_another_channel_up_only_the_console_closes_and_the_bot_answers(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["here"]}),))
    caplog.set_level(logging.INFO)
    EmptyStdin.ended, EmptyStdin.terminal = anyio.Event(), False
    async with make_host(profiles={"ana": profile_yaml(BOTH)}, plugins=PLUGINS) as th:
        assert await first_after_the_end_of_input(th.host) == "console closed"
        with anyio.fail_after(10):
            delivery = await th.channel().say("still there?")
            await delivery.settled()
        assert th.channel().texts() == ["here"]
        assert th.host.channels.status()["console"]["state"] == "finished"  # and not restarted
        assert "fake#0" in th.host.channels.status()
        seen = messages(caplog)
    assert "stopping: end of console input" not in seen
    assert seen.count("end of console input: channel console closes; fake#0 run on") == 1


async def test_with_the_console_alone_its_end_stops_the_host(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    EmptyStdin.ended, EmptyStdin.terminal = anyio.Event(), False
    async with make_host(profiles={"ana": profile_yaml("console:local: ['*']")}, plugins=PLUGINS) as th:
        assert await first_after_the_end_of_input(th.host) == "host stops"
        assert not EmptyStdin.ended.is_set()  # still printing late replies while the host stops
    assert "stopping: end of console input" in messages(caplog)


async def test_ctrl_d_on_the_terminal_stops_the_host_even_with_another_channel_up(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    EmptyStdin.ended, EmptyStdin.terminal = anyio.Event(), True
    async with make_host(profiles={"ana": profile_yaml(BOTH)}, plugins=PLUGINS) as th:
        assert await first_after_the_end_of_input(th.host) == "host stops"
    assert "stopping: end of console input" in messages(caplog)
