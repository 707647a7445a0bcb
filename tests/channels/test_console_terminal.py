"""The console on a terminal, driven through prompt_toolkit's pipe input: every line delivered at once and in
order (also while a turn runs), no line lost or doubled when the connection is replaced mid-session, slash
commands completed, replies streamed as they are written, Ctrl-C leaving like Ctrl-D; and on pipes, no
drafting at all."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output.plain_text import PlainTextOutput

from ishiki_host.channels.base import Draft, DraftingConnection, TurnActivity
from ishiki_host.channels.console import ConsoleChannel, ConsoleConnection, DraftingConsole, Terminal
from ishiki_host.channels.console.status import activity_line
from ishiki_host.channels.console.terminal import SlashCommandCompleter
from ishiki_host.channels.events import IshikiEvent
from ishiki_host.testing.channel_host import FakeChannelHost

pytestmark = pytest.mark.anyio

CYAN, DIM, RESET = "\x1b[36m", "\x1b[2m", "\x1b[0m"


@pytest.fixture
def keys() -> Iterator[PipeInput]:
    """What the user types."""
    with create_pipe_input() as pipe:
        yield pipe


@pytest.fixture
def screen() -> io.StringIO:
    """What the terminal shows (prompt_toolkit's drawing included)."""
    return io.StringIO()


@pytest.fixture
def terminal(keys: PipeInput, screen: io.StringIO) -> Terminal:
    return Terminal(input=keys, output=PlainTextOutput(screen), patch=False)


class Busy(FakeChannelHost):
    """A host whose turns never settle (a model that never answers), and which records ``request_stop``."""

    def __init__(self, root: Path, **kw: Any):
        super().__init__(root, **kw)
        self.stops: list[tuple[str, bool]] = []
        self.stopped = anyio.Event()

    async def dispatch(self, event: IshikiEvent, attachments: Any = ()) -> Any:
        delivery = await super().dispatch(event, attachments)

        class Running:
            routed, runtime_key, entry_id = delivery.routed, delivery.runtime_key, delivery.entry_id

            async def settled(self) -> None:
                await anyio.sleep_forever()

        return Running()

    def request_stop(self, reason: str, *, force: bool = False) -> bool:
        self.stops.append((reason, force))
        self.stopped.set()
        return True


def contents(host: FakeChannelHost) -> list[str]:
    return [event.content for event in host.events]


@pytest.fixture
async def running() -> AsyncIterator[anyio.abc.TaskGroup]:
    async with anyio.create_task_group() as tg:
        yield tg
        tg.cancel_scope.cancel()


async def test_lines_are_delivered_at_once_in_order_while_the_turn_runs(
    tmp_path: Path, terminal: Terminal, keys: PipeInput, running: anyio.abc.TaskGroup
) -> None:
    host = Busy(tmp_path)
    console = ConsoleConnection(host, terminal=terminal, history=False)
    await running.start(console.run)
    keys.send_text("one\r")
    await host.wait_for_events(1)
    keys.send_text("two\r\r/status\rthree\r")  # the first turn never settles: these still go at once
    events = await host.wait_for_events(4)
    assert contents(host) == ["one", "two", "/status", "three"]
    assert len({e.message_id for e in events}) == 4
    assert terminal.pending == ()  # each was taken


@pytest.mark.parametrize("when", ["before it was durable", "after it was durable"])
async def test_a_connection_replaced_mid_session_delivers_every_line_once(
    tmp_path: Path, terminal: Terminal, keys: PipeInput, when: str
) -> None:
    host = FakeChannelHost(tmp_path, dedupe=True)
    first = ConsoleConnection(host, terminal=terminal, history=False)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            def crash(event: IshikiEvent) -> None:
                if event.content == "two":
                    tg.cancel_scope.cancel()  # the connection dies with "two" in flight

            if when == "before it was durable":
                host.on_dispatch = crash
            else:
                host.on_recorded = crash
            await tg.start(first.run)
            keys.send_text("one\rtwo\r")
        host.on_dispatch = host.on_recorded = None
        assert [line.text for line in terminal.pending] == ["two"]
        keys.send_text("three\r")  # typed while no connection reads the terminal
        second = ConsoleConnection(host, terminal=terminal, history=False)
        async with anyio.create_task_group() as tg:
            await tg.start(second.run)
            await host.until(lambda: len(host.events) == 3)
            tg.cancel_scope.cancel()
    assert contents(host) == ["one", "two", "three"]  # each once, in order
    assert [e.content for e in host.duplicates] == (["two"] if when == "after it was durable" else [])
    assert terminal.pending == ()


async def test_ctrl_c_at_the_prompt_stops_the_host_like_ctrl_d(
    tmp_path: Path, terminal: Terminal, keys: PipeInput, running: anyio.abc.TaskGroup
) -> None:
    host = Busy(tmp_path)
    console = ConsoleConnection(host, terminal=terminal, history=False, drain_seconds=0)
    await running.start(console.run)
    keys.send_text("\x03")
    with anyio.fail_after(10):
        await host.stopped.wait()
    assert host.stops == [("Ctrl-C at the console", True)]


async def test_the_history_file_keeps_what_was_typed(
    tmp_path: Path, terminal: Terminal, keys: PipeInput, running: anyio.abc.TaskGroup
) -> None:
    host = FakeChannelHost(tmp_path)
    (host.state_dir).mkdir(parents=True)
    (host.state_dir / "history").write_text("older line\n")  # as readline kept it
    await running.start(ConsoleConnection(host, terminal=terminal).run)
    keys.send_text("hello\r")
    await host.wait_for_events(1)
    history = (host.state_dir / "history").read_text()
    assert "\n+older line\n" in history
    assert history.endswith("\n+hello\n")


def test_slash_commands_complete_from_the_hosts_names() -> None:
    completer = SlashCommandCompleter(lambda: ["stop", "status", "tools"])

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert complete("/st") == ["/stop", "/status"]
    assert complete("/") == ["/stop", "/status", "/tools"]
    assert complete("/stop now") == []  # arguments are not completed
    assert complete("st") == []  # only a slash word is a command


def test_the_fake_hosts_command_names_are_the_builtins(tmp_path: Path) -> None:
    names = FakeChannelHost(tmp_path).command_names("private:local")
    assert "stop" in names
    assert "reset" in names  # aliases too
    assert list(names) == sorted(names)


def test_the_thinking_line() -> None:
    thinking = TurnActivity("thinking", 100.0, "default", step=1)
    assert activity_line(thinking, 103.6) == "thinking 3s · default"
    assert activity_line(TurnActivity("tool", 100.0, "default", tool="web_search"), 105.0) == "running web_search 5s"
    assert activity_line(TurnActivity("writing", 100.0), 101.0) == "writing…"
    assert activity_line(TurnActivity("done", 100.0), 101.0) is None
    assert activity_line(None, 0.0) is None


async def test_a_streamed_reply_prints_only_what_is_new(tmp_path: Path) -> None:
    out = io.StringIO()
    console = DraftingConsole(FakeChannelHost(tmp_path), stdout=out, interactive=True, history=False)
    assert isinstance(console, DraftingConnection)
    await console.show_draft("private:local", Draft("d1", "Hel"))
    await console.show_draft("private:local", Draft("d1", "Hello, wor"))
    sent = await console.finish_draft("private:local", Draft("d1", "Hello, wor"), "Hello, world")
    assert out.getvalue() == f"{CYAN}Hel{RESET}{CYAN}lo, wor{RESET}{CYAN}ld{RESET}\n"
    assert len(sent.ids) == 1
    assert sent.ok


async def test_a_final_text_that_diverged_is_printed_whole(tmp_path: Path) -> None:
    out = io.StringIO()
    console = DraftingConsole(FakeChannelHost(tmp_path), stdout=out, interactive=True, history=False)
    await console.show_draft("private:local", Draft("d1", "Let me check"))
    await console.finish_draft("private:local", Draft("d1", "Let me check"), "It is 4.")
    assert out.getvalue() == f"{CYAN}Let me check{RESET}\n{CYAN}It is 4.{RESET}\n"


@pytest.mark.parametrize(("why", "tail"), [("tools", ""), ("aborted", f" {DIM}(cut off){RESET}")])
async def test_a_dropped_draft_ends_its_line(tmp_path: Path, why: Any, tail: str) -> None:
    out = io.StringIO()
    console = DraftingConsole(FakeChannelHost(tmp_path), stdout=out, interactive=True, history=False)
    await console.show_draft("private:local", Draft("d1", "Let me look"))
    await console.drop_draft("private:local", Draft("d1", "Let me look"), why)
    assert out.getvalue() == f"{CYAN}Let me look{RESET}{tail}\n"


async def test_on_a_terminal_finished_lines_go_above_the_prompt(
    tmp_path: Path, terminal: Terminal, screen: io.StringIO, running: anyio.abc.TaskGroup
) -> None:
    host = FakeChannelHost(tmp_path)
    console = DraftingConsole(host, terminal=terminal, history=False)
    await running.start(console.run)
    await console.show_draft("private:local", Draft("d1", "first line\nsec"))
    await console.finish_draft("private:local", Draft("d1", "first line\nsec"), "first line\nsecond line")
    await console.send("private:local", "a notice")
    shown = screen.getvalue()
    assert f"{CYAN}first line\n{RESET}" in shown
    assert f"{CYAN}second line{RESET}\n" in shown
    assert shown.index("first line") < shown.index("second line") < shown.index("a notice")


def test_the_piped_console_shows_no_drafts(tmp_path: Path) -> None:
    connection = ConsoleChannel().create(FakeChannelHost(tmp_path), {})  # pytest's stdin is no terminal
    assert type(connection) is ConsoleConnection
    assert not isinstance(connection, DraftingConnection)
    assert not connection.interactive
