"""The console when a turn fails: the apology in the chat, the reason for the operator (dim on a terminal; on
stderr when piped, so piped stdout stays the chat)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from ishiki_host.channels.console import ConsoleChannel, ConsoleConnection
from ishiki_host.testing import FakeOpenAIServer, profile_yaml
from ishiki_host.testing.channel_host import FakeChannelHost
from ishiki_host.testing.host import MakeHost

pytestmark = pytest.mark.anyio

SORRY = "Sorry, something went wrong on my side; please try again in a moment."  # the default failure_reply
DIM, RESET = "\x1b[2m", "\x1b[0m"


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class PipedConsole(ConsoleChannel):
    """The console on piped stdin (one line) and captured output; ``stderr`` is a terminal when ``tty``."""

    tty: ClassVar[bool] = False
    made: ClassVar[list[ConsoleConnection]] = []

    def create(self, ctx: Any, account: Mapping[str, Any]) -> ConsoleConnection:
        stderr = Terminal() if self.tty else io.StringIO()
        connection = ConsoleConnection(
            ctx, stdin=io.StringIO("hello\n"), stdout=io.StringIO(), stderr=stderr, interactive=False, history=False
        )
        PipedConsole.made.append(connection)
        return connection


async def run_piped(make_host: MakeHost, *, tty: bool) -> ConsoleConnection:
    PipedConsole.tty, PipedConsole.made = tty, []
    profile = profile_yaml("console:local: ['*']", extra="failover: {attempts: 1}\n")
    async with make_host(profiles={"ana": profile}, plugins={"ishiki.channel.console": PipedConsole}) as th:
        with anyio.fail_after(10):
            await th.host.wait_stop_requested()  # the console's input ended once its turn was handled
    (console,) = PipedConsole.made
    return console


def written(stream: Any) -> str:
    assert isinstance(stream, io.StringIO)
    return stream.getvalue()


@pytest.mark.parametrize("tty", [False, True], ids=["stderr-piped", "stderr-terminal"])
async def test_piped_stdout_gets_the_apology_and_stderr_the_reason(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, tty: bool
) -> None:
    fake_openai.server_error(500)
    console = await run_piped(make_host, tty=tty)
    assert written(console.stdout) == f"{SORRY}\n"  # the chat, and nothing else
    reason = written(console.stderr)
    assert reason.startswith(
        f"{DIM}(the turn failed: ModelUnavailable: " if tty else "(the turn failed: ModelUnavailable: "
    )
    assert reason.endswith(f"){RESET}\n" if tty else ")\n")
    assert "500" in reason
    assert (DIM in reason) is tty


async def test_on_a_terminal_the_reason_is_a_dim_line_of_the_chat(tmp_path: Path) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    console = ConsoleConnection(
        FakeChannelHost(tmp_path), stdout=stdout, stderr=stderr, interactive=True, history=False
    )
    await console.send("private:local", SORRY)
    console.show_failure("private:local", "ModelUnavailable: cannot reach the provider")
    assert stdout.getvalue() == (
        f"\x1b[36m{SORRY}{RESET}\n{DIM}(the turn failed: ModelUnavailable: cannot reach the provider){RESET}\n"
    )
    assert stderr.getvalue() == ""
