"""``ConsoleConnection``: the console's reading, delivery and output (the module docstring of the package
says what the user sees)."""

from __future__ import annotations

import contextlib
import getpass
import itertools
import logging
import math
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import anyio
from prompt_toolkit.utils import is_dumb_terminal

from ishiki_host.channels.base import SendResult
from ishiki_host.channels.console.reader import ThreadReader
from ishiki_host.channels.console.status import activity_line
from ishiki_host.channels.console.terminal import PROMPT, TERMINAL, Terminal
from ishiki_host.channels.events import IshikiEvent, User
from ishiki_host.channels.split import split_message
from ishiki_host.errors import ChannelError

if TYPE_CHECKING:
    from anyio.abc import TaskStatus
    from anyio.streams.memory import MemoryObjectReceiveStream

    from ishiki_host.channels.base import ChannelHost, Delivery, OutboundFile, TurnActivity
    from ishiki_host.channels.console.terminal import Line

__all__ = ["CHANNEL_ID", "SELF_ID", "ConsoleConnection"]

logger = logging.getLogger("ishiki_host.channels.console")

SELF_ID = "local"
CHANNEL_ID = "private:local"
_PART_LIMIT = 16_000
_COLOR, _DIM, _RESET = "\x1b[36m", "\x1b[2m", "\x1b[0m"
_CONNECTIONS = itertools.count(1)
_TICK = 1.0  # how often the thinking line's seconds move while a turn runs (never while idle)


class ConsoleConnection:
    """The console as a ``ChannelConnection`` (see the package docstring).

    ``terminal`` is the prompt to read from on a terminal (by default the host's shared one, made on first
    use); ``interactive`` defaults to whether stdin and stdout are terminals.
    """

    def __init__(
        self,
        host: ChannelHost,
        *,
        stdin: IO[str] | None = None,
        stdout: IO[str] | None = None,
        stderr: IO[str] | None = None,
        interactive: bool | None = None,
        drain_seconds: float = 60.0,
        settle_seconds: float = 600.0,
        history: bool = True,
        terminal: Terminal | None = None,
    ):
        self.host = host
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        if interactive is None:
            interactive = terminal is not None or (_is_tty(self.stdin) and _is_tty(self.stdout))
        self.interactive = interactive
        self.drain_seconds = drain_seconds
        self.settle_seconds = settle_seconds
        self.history = history
        self._terminal = terminal
        self._attached: Terminal | None = None
        self._ids = itertools.count(1)
        # Unique across runs and connections (a message id names one message: repeats are ignored by id).
        self._id_prefix = f"{int(host.clock.now())}.{os.getpid()}.{next(_CONNECTIONS)}"
        self._user = User(SELF_ID, _user_name())
        self._activity: TurnActivity | None = None
        self._activity_changed = anyio.Event()
        self._last: Delivery | None = None

    @property
    def platform(self) -> str:
        """``console``."""
        return "console"

    @property
    def self_id(self) -> str:
        """``local``."""
        return SELF_ID

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read the console until the end of input, then ask the host to stop (returns when it runs on).
        Ready at once on pipes; on a terminal, once it holds the terminal (a connection it replaces let go)."""
        terminal = self._terminal_to_use()
        if terminal is not None:
            await self._chat(terminal, task_status)
        else:
            task_status.started()
            with self._saved_terminal_settings():
                await self._read_lines()
        last, self._last = self._last, None  # a receipt holds its runtime: keep none once the input ended
        with anyio.move_on_after(self.drain_seconds) as scope:
            if last is not None:
                await last.settled()
        del last
        if scope.cancelled_caught:
            logger.warning("turns still running %.0f s after the end of input; stopping anyway", self.drain_seconds)
        stop = getattr(self.host, "request_stop", None)
        reason = "Ctrl-C at the console" if terminal is not None and terminal.interrupted else "end of console input"
        # The Host's channel context has it; a bare ChannelHost keeps running. ``False``: other channels run on.
        if callable(stop) and stop(reason, force=self.interactive) is False:
            return
        await anyio.sleep_forever()  # still the console's output while the host stops (late replies print)

    # -- input ------------------------------------------------------------------------------------------

    def _terminal_to_use(self) -> Terminal | None:
        """The prompt on a terminal; ``None`` for piped input, interactive streams that are no terminal, and a
        terminal that cannot move its cursor (``TERM=dumb``: nothing can be printed above a prompt there, so
        it is a plain prompt read one line, and one turn, at a time)."""
        if self._terminal is not None:
            return self._terminal
        if not self.interactive or not (_is_tty(self.stdin) and _has_fd(self.stdin)) or is_dumb_terminal():
            return None
        return self.host.shared.setdefault(TERMINAL, lambda: Terminal(stdout=self.stdout))

    async def _read_lines(self) -> None:
        """Piped (or interactive without a terminal): one line at a time, each after the last one's turn."""
        reader = ThreadReader.of(self.stdin, self._read_prompted if self.interactive else self._read_plain)
        while (line := await reader.line()) is not None:
            if line.strip():
                delivery = await self._deliver(line, f"{self._id_prefix}-{next(self._ids)}")
                if delivery is not None:
                    self._last = delivery
                    await self._settle(delivery)
        if self.interactive:
            self._write("\n")

    async def _chat(self, terminal: Terminal, task_status: TaskStatus[None]) -> None:
        """On a terminal: every line is delivered at once, joining a running turn or answered as a command."""
        history = Path(self.host.state_dir) / "history" if self.history else None
        names = lambda: self.host.command_names(CHANNEL_ID)  # noqa: E731
        async with terminal.attached(history=history, names=names, notes=self._notes):
            self._attached = terminal
            task_status.started()
            try:
                async with anyio.create_task_group() as deliveries:
                    send, receive = anyio.create_memory_object_stream["Line"](math.inf)
                    deliveries.start_soon(self._deliver_in_order, terminal, receive)
                    async with anyio.create_task_group() as ticking:
                        ticking.start_soon(self._tick, terminal)
                        with send:
                            while (line := await terminal.read()) is not None:
                                if not line.text.strip():
                                    terminal.done(line)
                                elif self._is_command(line.text):  # answered at once, whatever runs
                                    deliveries.start_soon(self._deliver_line, terminal, line)
                                else:  # messages keep their order
                                    send.send_nowait(line)
                        ticking.cancel_scope.cancel()
            finally:
                self._attached = None

    def _is_command(self, text: str) -> bool:
        word = text.lstrip().split(maxsplit=1)[0] if text.strip() else ""
        if not word.startswith("/"):
            return False
        return word[1:].partition("@")[0].lower() in self.host.command_names(CHANNEL_ID)

    async def _deliver_in_order(self, terminal: Terminal, lines: MemoryObjectReceiveStream[Line]) -> None:
        async with lines:
            async for line in lines:
                await self._deliver_line(terminal, line)

    async def _deliver_line(self, terminal: Terminal, line: Line) -> None:
        delivery = await self._deliver(line.text, line.id)
        terminal.done(line)  # taken, or refused for good: either way not read again
        if delivery is not None and not self._is_command(line.text):
            self._last = delivery

    async def _deliver(self, text: str, message_id: str) -> Delivery | None:
        event = IshikiEvent(
            kind="message.created",
            platform="console",
            self_id=SELF_ID,
            channel_id=CHANNEL_ID,
            message_id=message_id,
            timestamp=self.host.clock.now(),
            user=self._user,
            content=text,
        )
        try:
            delivery = await self.host.dispatch(event)
        except ChannelError as exc:
            logger.error("the message was not taken: %s", exc)
            return None
        if not delivery.routed:
            logger.warning("no profile answers on the console")
            return None
        return delivery

    async def _settle(self, delivery: Delivery) -> None:
        with anyio.move_on_after(self.settle_seconds) as scope:
            await delivery.settled()
        if scope.cancelled_caught:
            logger.warning("the turn is still running after %.0f s; reading on", self.settle_seconds)

    def _read_plain(self) -> str | None:
        line = self.stdin.readline()
        return line.rstrip("\r\n") if line else None

    def _read_prompted(self) -> str | None:
        """One line typed at a prompt on streams that are no terminal (``interactive`` forced)."""
        self._write(PROMPT)
        return self._read_plain()

    # -- the thinking line ------------------------------------------------------------------------------

    def show_activity(self, channel_id: str, activity: TurnActivity) -> None:
        """Show what the running turn is doing in the line above the prompt (on a terminal)."""
        self._activity = None if activity.state == "done" else activity
        self._activity_changed.set()
        self._activity_changed = anyio.Event()
        if self._attached is not None:
            self._attached.refresh()

    def _notes(self) -> Sequence[str]:
        line = activity_line(self._activity, self.host.clock.now())
        return [f"{_DIM}{line}{_RESET}"] if line else []

    async def _tick(self, terminal: Terminal) -> None:
        """Redraw the thinking line every second while a turn runs; sleep on an event while none does."""
        while True:
            while self._activity is None:
                await self._activity_changed.wait()
            terminal.refresh()
            await anyio.sleep(_TICK)

    # -- output -----------------------------------------------------------------------------------------

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Print ``text`` (one line per part; see the package docstring for the format)."""
        ids = []
        for part in split_message(text, _PART_LIMIT):
            self._print(part)
            ids.append(self._out_id())
        return SendResult(tuple(ids))

    async def send_typing(self, channel_id: str) -> None:
        """Nothing to show: the thinking line says more (``show_activity``)."""

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Print one line per file (its name, media type and size)."""
        ids = []
        for item in files:
            name = item.blob.name or "file"
            self._print(f"[file: {name} ({item.blob.media_type}, {len(item.blob.data)} bytes)]")
            ids.append(self._out_id())
        return SendResult(tuple(ids))

    def show_failure(self, channel_id: str, reason: str) -> None:
        """Say why a turn failed, for the operator: a dim line in the chat, or a line on stderr when piped."""
        line = f"(the turn failed: {reason})"
        if self.interactive:
            self._print(line, _DIM)
        else:
            self._write((f"{_DIM}{line}{_RESET}" if _is_tty(self.stderr) else line) + "\n", self.stderr)

    def _out_id(self) -> str:
        return f"out-{int(self.host.clock.now())}-{next(self._ids)}"

    def _print(self, text: str, color: str = _COLOR) -> None:
        if not self.interactive:
            self._write(text + "\n")
        else:
            self._show(f"{color}{text}{_RESET}\n")

    def _show(self, text: str) -> None:
        """Write on the interactive console: above the prompt when one runs."""
        if self._attached is not None:
            self._attached.print(text)
        else:
            self._write(text)

    def _write(self, text: str, stream: IO[str] | None = None) -> None:
        stream = stream or self.stdout
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError) as exc:  # a closed pipe: nobody reads any more
            logger.debug("console output lost: %s", exc)

    @contextlib.contextmanager
    def _saved_terminal_settings(self) -> Iterator[None]:
        """Restore the terminal's settings when reading ends, however it ends."""
        saved = None
        if self.interactive:
            with contextlib.suppress(Exception):
                import termios

                saved = termios.tcgetattr(self.stdin.fileno())
        try:
            yield
        finally:
            if saved is not None:
                with contextlib.suppress(Exception):
                    import termios

                    termios.tcsetattr(self.stdin.fileno(), termios.TCSADRAIN, saved)


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _has_fd(stream: IO[str]) -> bool:
    try:
        stream.fileno()
    except (AttributeError, ValueError, OSError):
        return False
    return True


def _user_name() -> str | None:
    try:
        return getpass.getuser()
    except Exception:
        return None
