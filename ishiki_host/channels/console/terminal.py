"""The host's terminal as console connections share it: one prompt_toolkit session that outlives them.

The host restarts a crashed connection and makes a new one on a reload; the terminal stays. A ``Terminal`` is
kept in the host's shared objects (``TERMINAL``), and each console connection on a terminal attaches to it in
turn (``async with terminal.attached(...)``: a second connection waits until the first has let go):

- ``read()`` prompts at the bottom of the screen (``PromptSession.prompt_async`` with the history file and
  completion of slash commands) and returns each submitted ``Line`` with a message id of the terminal's own,
  so the same line always has the same id;
- a line stays ``pending`` until its connection calls ``done(line)`` (the host took it); a connection that
  ends before that leaves it to the next one, whose first reads return it again (the host recognises a repeat
  by its id, so a line the old connection did hand over is not taken twice);
- what was typed but not yet submitted when a connection ended is put back in the next prompt, and keys typed
  while no prompt runs wait in the terminal's input for the next one;
- ``print(text)`` writes above the prompt (the prompt is redrawn below it), or straight out when none runs;
- ``notes`` are lines drawn above the prompt's own line while it runs (the partial line of a streamed reply,
  the thinking line); ``refresh()`` redraws them.

On the process's own terminal (``patch``), writes to ``sys.stdout`` and ``sys.stderr`` and the log lines of
the root logger's terminal handlers also go above the prompt while a connection is attached. Ctrl-D ends the
input (``read()`` returns ``None``); Ctrl-C does too, with ``interrupted`` set.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import anyio
from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.formatted_text import ANSI, FormattedText, to_formatted_text
from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from ishiki_host.core.shared import ServiceKey

if TYPE_CHECKING:
    from prompt_toolkit.document import Document
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

__all__ = ["PROMPT", "TERMINAL", "Line", "SlashCommandCompleter", "Terminal"]

logger = logging.getLogger("ishiki_host.channels.console")

PROMPT = "› "
_TERMINALS = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Line:
    """One submitted line and its message id (unique in the process and across runs)."""

    id: str
    text: str


class SlashCommandCompleter(Completer):
    """Completes ``/name`` from the names the attached connection's host gives (nothing after a space)."""

    def __init__(self, names: Callable[[], Sequence[str]]):
        self.names = names

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        """The commands starting with what is typed after the ``/``."""
        typed = document.text_before_cursor
        if not typed.startswith("/") or any(c.isspace() for c in typed):
            return
        word = typed[1:].lower()
        for name in self.names():
            if name.startswith(word):
                yield Completion(f"/{name}", start_position=-len(typed))


class Terminal:
    """The terminal console connections attach to in turn (see the module docstring).

    ``input`` and ``output`` default to the process's stdin and stdout; a test gives a pipe input and an
    output on a string buffer, and ``patch=False`` (leave ``sys.stdout`` and the log handlers alone).
    """

    def __init__(
        self,
        *,
        input: Input | None = None,
        output: Output | None = None,
        stdout: IO[str] | None = None,
        patch: bool = True,
    ):
        self._input = input
        self._output = output
        self._stdout = stdout
        self._patch = patch
        self._session: PromptSession[str] | None = None
        self._completer = SlashCommandCompleter(lambda: ())
        self._pending: deque[Line] = deque()  # read, not yet taken by the host (``done``)
        self._replay: deque[Line] = deque()  # pending lines a connection left: the next one reads them first
        self._typed = ""  # what was typed but not submitted when the last prompt was cancelled
        self._lock: anyio.Lock | None = None
        self._ids = itertools.count(1)
        self._prefix = f"{int(time.time())}.{os.getpid()}.t{next(_TERMINALS)}"
        self.notes: Callable[[], Sequence[str]] = lambda: ()
        self.interrupted = False

    @property
    def pending(self) -> tuple[Line, ...]:
        """The lines read but not yet taken by the host, oldest first."""
        return tuple(self._pending)

    @property
    def prompting(self) -> bool:
        """Whether the prompt is on the screen now."""
        app = self._session.app if self._session is not None else None
        return app is not None and app.is_running

    @contextlib.asynccontextmanager
    async def attached(
        self,
        *,
        history: Path | None,
        names: Callable[[], Sequence[str]],
        notes: Callable[[], Sequence[str]],
    ) -> AsyncIterator[Terminal]:
        """Hold the terminal for one connection: its history file (used from the first attach on), the
        commands it completes and the notes it shows; the next connection gets it once this one let go."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._session is None:
                self._session = self._make_session(history)
            self._completer.names, self.notes = names, notes
            self._replay = deque(self._pending)
            try:
                with self._patched():
                    yield self
            finally:
                self._completer.names, self.notes = (lambda: ()), (lambda: ())

    async def read(self) -> Line | None:
        """The next line: one a previous connection left, else what the user submits at the prompt; ``None``
        at Ctrl-D or Ctrl-C (``interrupted``)."""
        if self._replay:
            return self._replay.popleft()
        session = self._session
        if session is None:
            raise RuntimeError("read() outside attached()")
        try:
            # The host's own SIGINT and exception handlers stay: prompt_toolkit's would replace them on the loop
            # (Ctrl-C at the prompt is a key in raw mode; a SIGINT from outside still stops the host cleanly).
            text = await session.prompt_async(
                self._message, default=self._typed, handle_sigint=False, set_exception_handler=False
            )
        except anyio.get_cancelled_exc_class():
            self._typed = session.default_buffer.text
            raise
        except EOFError:
            return None
        except KeyboardInterrupt:
            self.interrupted = True
            return None
        self._typed = ""
        line = Line(f"{self._prefix}-{next(self._ids)}", text)
        self._pending.append(line)
        return line

    def done(self, line: Line) -> None:
        """The host took ``line`` (or it needs no taking): it is not read again."""
        with contextlib.suppress(ValueError):
            self._pending.remove(line)

    def print(self, text: str) -> None:
        """Write ``text`` (ANSI colours allowed; it should end with a newline) above the prompt, or straight
        out when no prompt runs. Safe from any thread (a log line of a worker thread).

        Unlike prompt_toolkit's ``run_in_terminal``, this leaves the terminal in raw mode: a key typed while a
        line is printed (Ctrl-D in cooked mode would be taken by the tty as the end of a read) is not lost.
        """
        app = self._session.app if self._session is not None else None
        if app is None or not app.is_running:
            self._write(text)
        elif _in_loop(app.loop):
            app.renderer.erase()
            self._write(text)
            app.renderer.reset()
            app.renderer.request_absolute_cursor_position()
            app.invalidate()
        elif app.loop is not None:
            app.loop.call_soon_threadsafe(self.print, text)

    def refresh(self) -> None:
        """Redraw the prompt and its notes (a no-op when no prompt runs)."""
        app = get_app_or_none()
        if self.prompting and app is not None:
            app.invalidate()

    # -- parts ------------------------------------------------------------------------------------------

    def _message(self) -> FormattedText:
        app = get_app_or_none()
        done = app is not None and app.is_done  # the line as submitted stays on the screen without the notes
        notes = [] if done else [note for note in self.notes() if note]
        shown = to_formatted_text(ANSI("".join(f"{note}\n" for note in notes)))
        # A colour, even the default one: prompt_toolkit leaves out a trailing space without one (a cursor move).
        return FormattedText([*shown, ("fg:ansidefault", PROMPT)])

    def _make_session(self, history: Path | None) -> PromptSession[str]:
        session: PromptSession[str] = PromptSession(
            history=_history(history),
            completer=self._completer,
            complete_while_typing=True,
            input=self._input,
            output=self._output,
            erase_when_done=False,
        )
        if getattr(signal, "SIGWINCH", None) is not None and threading.current_thread() is threading.main_thread():
            session.app.terminal_size_polling_interval = None  # SIGWINCH says when it changes: no timer while idle
        return session

    def _write(self, text: str) -> None:
        session = self._session
        try:
            if session is not None:
                session.output.write_raw(text)
                session.output.flush()
            else:
                stream = self._stdout or sys.stdout
                stream.write(text)
                stream.flush()
        except (OSError, ValueError) as exc:  # a closed terminal: nobody reads any more
            logger.debug("console output lost: %s", exc)

    @contextlib.contextmanager
    def _patched(self) -> Iterator[None]:
        """On the process's terminal: what is written to ``sys.stdout`` or ``sys.stderr`` and the root logger's
        handlers goes above the prompt while attached; a stream that is no terminal (stderr piped to a log
        file) is left alone."""
        if not self._patch:
            yield
            return
        saved_out, saved_err = sys.stdout, sys.stderr
        proxy = _AbovePrompt(self, saved_out if _is_tty(saved_out) else saved_err)
        handlers = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler and _is_tty(h.stream)]
        try:
            sys.stdout = proxy if _is_tty(saved_out) else saved_out
            sys.stderr = proxy if _is_tty(saved_err) else saved_err
            saved = [h.setStream(proxy) for h in handlers]
            try:
                yield
            finally:
                for handler, stream in zip(handlers, saved, strict=True):
                    if stream is not None:
                        handler.setStream(stream)
        finally:
            sys.stdout, sys.stderr = saved_out, saved_err
            proxy.flush()


class _AbovePrompt(io.TextIOBase):
    """A text stream whose whole lines the terminal prints above its prompt (``sys.stderr`` and the log
    handlers while a console is attached); ``real`` is the terminal stream it stands for."""

    def __init__(self, terminal: Terminal, real: IO[str]):
        super().__init__()
        self._terminal = terminal
        self._real = real
        self._buffer = ""

    def write(self, text: str) -> int:
        """Keep ``text``; print the lines it completes."""
        self._buffer += text
        cut = self._buffer.rfind("\n") + 1
        if cut:
            lines, self._buffer = self._buffer[:cut], self._buffer[cut:]
            self._terminal.print(lines)
        return len(text)

    def flush(self) -> None:
        """Print a partial line too."""
        if self._buffer:
            rest, self._buffer = self._buffer, ""
            self._terminal.print(rest + "\n")

    def isatty(self) -> bool:
        """It stands for a terminal."""
        return True

    def fileno(self) -> int:
        """The terminal's descriptor."""
        return self._real.fileno()


def _in_loop(loop: asyncio.AbstractEventLoop | None) -> bool:
    try:
        return loop is not None and asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop runs in this thread
        return False


def _is_tty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def _history(path: Path | None) -> History:
    """The history kept in ``path`` (``InMemoryHistory`` without one, or when it cannot be read)."""
    if path is None:
        return InMemoryHistory()
    try:
        _convert_readline_history(path)
        return FileHistory(str(path))
    except OSError as exc:
        logger.warning("console history %s cannot be used (%s); history is kept for this run only", path, exc)
        return InMemoryHistory()


def _convert_readline_history(path: Path) -> None:
    """A history file readline wrote (one line per entry) is rewritten the way ``FileHistory`` reads it."""
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines or any(line.startswith(("+", "#")) for line in lines):
        return
    path.write_text("".join(f"\n+{line}\n" for line in lines if line.strip()), encoding="utf-8")


TERMINAL = ServiceKey("ishiki_host.channels.console.terminal", Terminal)
"""Where a host keeps its terminal among its shared objects (``ChannelHost.shared``)."""
