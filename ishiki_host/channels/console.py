"""The built-in ``console`` channel: a chat on the terminal (``console:local``, channel ``private:local``).

The local user (id ``local``) is the owner. The host starts the console when a ready profile claims
``console:local``; it needs no account (``channels.console.accounts: [{...}]`` in ishiki.yaml may set the
options below).

With a terminal on stdin and stdout it is an interactive chat: a prompt with line editing and history
(readline, kept in the channel's state directory), replies printed as they come. Without one, each line of
stdin is one message, delivered one at a time: the next line is read only once the turn the previous one
started has finished, so a piped script behaves like a typed conversation. Blank lines are skipped.

Output format without a terminal: stdout carries only what is said in the chat (what the persona sends, and
the host's notices: command replies, the apology for a failed turn), each message part written as its text
followed by one newline (a part with line breaks spans several lines); logs go to stderr. Why a turn failed
(``show_failure``, for the operator: the console's user sits at the host) is a dim line among the chat on a
terminal, and a line on stderr otherwise (dim only when stderr is a terminal), so piped stdout stays the
chat. At the end of input the console waits for pending turns (at most ``drain_seconds``) and asks the host
to stop; it keeps printing what is sent until the host has stopped. Without a terminal, the host stops only
when the console is its only channel: with other channels up (a headless bot under systemd or ``docker run``
without ``-it``, whose stdin is empty from the start) the host answers ``False`` and the console finishes
alone while the rest runs on. On a terminal, the end of input is the operator leaving (Ctrl-D at the prompt),
and the host stops whatever else runs.
"""

from __future__ import annotations

import contextlib
import getpass
import itertools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from ishiki_host.channels.base import Channel, SendResult
from ishiki_host.channels.events import IshikiEvent, User
from ishiki_host.channels.split import split_message
from ishiki_host.errors import ChannelError

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ishiki_host.channels.base import ChannelHost, Delivery, OutboundFile

__all__ = ["CHANNEL_ID", "SELF_ID", "ConsoleChannel", "ConsoleConnection"]

logger = logging.getLogger("ishiki_host.channels.console")

SELF_ID = "local"
CHANNEL_ID = "private:local"
PROMPT = "› "
_PART_LIMIT = 16_000
_COLOR, _DIM, _RESET = "\x1b[36m", "\x1b[2m", "\x1b[0m"
_CONNECTIONS = itertools.count(1)


class _Reader:
    """Reads one line at a time in a daemon thread (a blocked read never keeps the process alive)."""

    def __init__(self, read: Callable[[], str | None]):
        self._read = read

    async def line(self) -> str | None:
        """The next line without its newline, or ``None`` at the end of input."""
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        box: list[str | BaseException | None] = []

        def work() -> None:
            try:
                box.append(self._read())
            except BaseException as exc:  # EOFError, KeyboardInterrupt, a closed stream
                box.append(exc)
            with contextlib.suppress(RuntimeError):  # the loop may be gone when a read returns at exit
                anyio.from_thread.run_sync(done.set, token=token)

        threading.Thread(target=work, name="ishiki-console-reader", daemon=True).start()
        await done.wait()
        result = box[0]
        if isinstance(result, EOFError | KeyboardInterrupt):
            return None
        if isinstance(result, BaseException):
            raise ChannelError(f"cannot read the console: {result}") from result
        return result


class ConsoleConnection:
    """The console as a ``ChannelConnection`` (see the module docstring)."""

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
    ):
        self.host = host
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.interactive = _is_tty(self.stdin) and _is_tty(self.stdout) if interactive is None else interactive
        self.drain_seconds = drain_seconds
        self.settle_seconds = settle_seconds
        self.history = history
        self._ids = itertools.count(1)
        # Unique across runs and connections (a message id names one message: repeats are ignored by id).
        self._id_prefix = f"{int(host.clock.now())}.{os.getpid()}.{next(_CONNECTIONS)}"
        self._prompting = False
        self._user = User(SELF_ID, _user_name())

    @property
    def platform(self) -> str:
        """``console``."""
        return "console"

    @property
    def self_id(self) -> str:
        """``local``."""
        return SELF_ID

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read the console until the end of input, then ask the host to stop (returns when it runs on)."""
        task_status.started()
        with self._terminal():
            last = await (self._chat() if self.interactive else self._pipe())
        with anyio.move_on_after(self.drain_seconds) as scope:
            if last is not None:
                await last.settled()
        if scope.cancelled_caught:
            logger.warning("turns still running %.0f s after the end of input; stopping anyway", self.drain_seconds)
        stop = getattr(self.host, "request_stop", None)
        # The Host's channel context has it; a bare ChannelHost keeps running. ``False``: other channels run on.
        if callable(stop) and stop("end of console input", force=self.interactive) is False:
            return
        await anyio.sleep_forever()  # still the console's output while the host stops (late replies print)

    async def _pipe(self) -> Delivery | None:
        reader = _Reader(self._read_plain)
        last: Delivery | None = None
        while (line := await reader.line()) is not None:
            if line.strip():
                last = await self._deliver(line) or last
        return last

    async def _chat(self) -> Delivery | None:
        history = self._open_history()
        reader = _Reader(self._read_prompted)
        last: Delivery | None = None
        try:
            while (line := await reader.line()) is not None:
                if line.strip():
                    last = await self._deliver(line) or last
        finally:
            self._save_history(history)
            self._write("\n")
        return last

    async def _deliver(self, text: str) -> Delivery | None:
        event = IshikiEvent(
            kind="message.created",
            platform="console",
            self_id=SELF_ID,
            channel_id=CHANNEL_ID,
            message_id=f"{self._id_prefix}-{next(self._ids)}",
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
        with anyio.move_on_after(self.settle_seconds) as scope:
            await delivery.settled()
        if scope.cancelled_caught:
            logger.warning("the turn is still running after %.0f s; reading on", self.settle_seconds)
        return delivery

    def _read_plain(self) -> str | None:
        line = self.stdin.readline()
        return line.rstrip("\r\n") if line else None

    def _read_prompted(self) -> str | None:
        self._prompting = True
        try:
            return input(PROMPT)
        finally:
            self._prompting = False

    # -- output -----------------------------------------------------------------------------------------

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Print ``text`` (one line per part; see the module docstring for the format)."""
        ids = []
        for part in split_message(text, _PART_LIMIT):
            self._print(part)
            ids.append(f"out-{int(self.host.clock.now())}-{next(self._ids)}")
        return SendResult(tuple(ids))

    async def send_typing(self, channel_id: str) -> None:
        """Nothing to show on a console."""

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Print one line per file (its name, media type and size)."""
        ids = []
        for item in files:
            name = item.blob.name or "file"
            self._print(f"[file: {name} ({item.blob.media_type}, {len(item.blob.data)} bytes)]")
            ids.append(f"out-{int(self.host.clock.now())}-{next(self._ids)}")
        return SendResult(tuple(ids))

    def show_failure(self, channel_id: str, reason: str) -> None:
        """Say why a turn failed, for the operator: a dim line in the chat, or a line on stderr when piped."""
        line = f"(the turn failed: {reason})"
        if self.interactive:
            self._print(line, _DIM)
        else:
            self._write((f"{_DIM}{line}{_RESET}" if _is_tty(self.stderr) else line) + "\n", self.stderr)

    def _print(self, text: str, color: str = _COLOR) -> None:
        if not self.interactive:
            self._write(text + "\n")
            return
        shown = f"{color}{text}{_RESET}\n"
        if self._prompting:  # a message arriving while the user types: print above the prompt, then restore it
            self._write(f"\r\x1b[K{shown}{PROMPT}{_line_buffer()}")
        else:
            self._write(shown)

    def _write(self, text: str, stream: IO[str] | None = None) -> None:
        stream = stream or self.stdout
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError) as exc:  # a closed pipe: nobody reads any more
            logger.debug("console output lost: %s", exc)

    # -- terminal state and history ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _terminal(self) -> Iterator[None]:
        """Restore the terminal's settings when the chat ends, however it ends."""
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

    def _open_history(self) -> Path | None:
        if not self.history:
            return None
        try:
            import readline

            path = Path(self.host.state_dir) / "history"
            if path.exists():
                readline.read_history_file(path)
            readline.set_history_length(1000)
            return path
        except Exception as exc:  # no readline on this platform, or an unreadable file
            logger.debug("no console history: %s", exc)
            return None

    def _save_history(self, path: Path | None) -> None:
        if path is None:
            return
        with contextlib.suppress(Exception):
            import readline

            readline.write_history_file(path)


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _user_name() -> str | None:
    try:
        return getpass.getuser()
    except Exception:
        return None


def _line_buffer() -> str:
    try:
        import readline

        return readline.get_line_buffer()
    except Exception:
        return ""


class ConsoleChannel(Channel):
    """The local terminal as a channel; the local user is the owner (see the module docstring)."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "drain_seconds": {
                "type": "number",
                "minimum": 0,
                "default": 60,
                "description": "At the end of piped input, how long pending turns may run before the host stops.",
            },
            "settle_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 600,
                "description": "How long one line's turn may run before the next line is read anyway.",
            },
            "history": {
                "type": "boolean",
                "default": True,
                "description": "Keep the interactive chat's input history between runs.",
            },
        },
    }

    def create(self, ctx: Any, account: Mapping[str, Any]) -> ConsoleConnection:
        """The console connection (stdin and stdout of the host process)."""
        return ConsoleConnection(
            ctx,
            drain_seconds=float(account.get("drain_seconds", 60)),
            settle_seconds=float(account.get("settle_seconds", 600)),
            history=bool(account.get("history", True)),
        )
