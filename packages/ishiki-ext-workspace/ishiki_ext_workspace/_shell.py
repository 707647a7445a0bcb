"""The optional shell tool's runner: ``/bin/sh -c`` in the workspace root, bounded in time and output.

This is NOT a security boundary. The command runs as the host's user, with the host's file-system rights: it
can read and write anything that user can, open network connections and leave the workspace with ``cd ..``.
What it does guarantee is hygiene, not isolation: the working directory is the workspace root; the
environment is a minimal one built here (``PATH``, ``HOME`` = the root, ``LANG``, ``TERM`` and the operator's
``shell_env``), so API keys and tokens in the host's environment are not passed on; stdin is empty; output
(stdout and stderr, interleaved) is capped, keeping its head and its tail; and the command runs in a new
session (its own process group), which is killed with SIGKILL at the deadline, and also as soon as the
command exits, so nothing it started in the background outlives it. A process that leaves the group itself
(``setsid``) escapes that; only a container or a separate user account confines the shell.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream

    from ishiki_host import Clock

__all__ = ["DEFAULT_PATH", "ShellOutcome", "minimal_env", "run_shell"]

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def minimal_env(root: str, extra: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of a shell command: a few neutral variables and the operator's ``extra``."""
    env = {"PATH": DEFAULT_PATH, "HOME": root, "PWD": root, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": "/bin/sh"}
    env.update(extra)
    return env


@dataclass(frozen=True, slots=True)
class ShellOutcome:
    """How a command ended: its exit status (``None`` when killed at the deadline), its output, what was cut."""

    exit_code: int | None
    output: bytes
    omitted: int
    timed_out: bool


class _Capture:
    """Keeps the first and the last ``limit / 2`` bytes of a stream and counts what falls between."""

    def __init__(self, limit: int):
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.omitted = 0
        self.done = anyio.Event()

    def add(self, chunk: bytes) -> None:
        """Take a chunk of output."""
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.half:
            self.omitted += len(self.tail) - self.half
            del self.tail[: len(self.tail) - self.half]

    async def read(self, stream: ByteReceiveStream) -> None:
        """Take everything ``stream`` gives until it ends; ``done`` is set then."""
        try:
            async for chunk in stream:
                self.add(chunk)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.done.set()

    def output(self) -> bytes:
        """The kept head and tail."""
        return bytes(self.head) + bytes(self.tail)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def run_shell(
    command: str,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 - the deadline runs on the injectable clock, not on anyio's
    max_output: int,
    clock: Clock,
) -> ShellOutcome:
    """Run ``command`` (see the module docstring); the deadline runs on ``clock``."""
    process = await anyio.open_process(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    capture = _Capture(max_output)
    timed_out = False
    try:
        async with anyio.create_task_group() as tg:

            async def watchdog() -> None:
                nonlocal timed_out
                await clock.sleep(timeout)
                timed_out = process.returncode is None
                _kill_group(process.pid)
                tg.cancel_scope.cancel()

            tg.start_soon(watchdog)
            assert process.stdout is not None
            tg.start_soon(capture.read, process.stdout)
            await process.wait()
            _kill_group(process.pid)  # what it left running in the background
            await capture.done.wait()  # end of output once the group is gone; the watchdog bounds it
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            _kill_group(process.pid)
            await process.aclose()
    return ShellOutcome(None if timed_out else process.returncode, capture.output(), capture.omitted, timed_out)
