"""The stdio transport: one server process, newline-delimited JSON-RPC on its stdin and stdout.

The SDK's own ``stdio_client`` hides the process; this one keeps hold of it, because a supervisor needs its
pid (for ``/status``), its exit status (to say why it died), a hard kill for a server that hangs, and its
stderr in a log file (the last lines explain a failed start). The wire format and the shutdown sequence
follow the SDK and the MCP spec: close stdin, wait a grace period, then SIGTERM and SIGKILL the process
*group* (the server starts in its own session), so helpers a server spawned (``npx`` → ``node``) go too.
No orphan outlives the transport. Process waits use real time, never the injectable clock: an operating
system process does not care about a test's fake time.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import anyio
import mcp.types as types
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    from anyio.abc import Process
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ishiki_ext_mcp.config import ServerSpec

__all__ = ["GRACE_SECONDS", "ProcessInfo", "StartFailed", "StdioTransport"]

GRACE_SECONDS = 2.0
"""How long a server may take to exit after its stdin closes (and after SIGTERM) before the next step."""
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_LOG_KEEP_BYTES = 1024 * 1024
_POLL = 0.01


class StartFailed(Exception):
    """The server could not be started or connected; the message says why (and quotes its stderr)."""


@dataclass(slots=True)
class ProcessInfo:
    """What is known of the current (or last) server process."""

    pid: int | None = None
    returncode: int | None = None

    def exit_text(self) -> str:
        """``exited with code 3`` / ``killed by SIGKILL`` / ``still running``."""
        code = self.returncode
        if code is None:
            return "still running" if self.pid else "not started"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"


class StdioTransport:
    """Starts ``spec``'s command and connects to it; ``connect()`` is what the SDK ``Client`` enters.

    ``on_lost`` is called once when the server's stdout ends (it exited or closed it) while connected;
    ``on_spawn`` once the process exists. Set ``fast_stop`` before leaving to skip the grace period (the
    server is known to hang).
    """

    def __init__(
        self,
        spec: ServerSpec,
        stderr_log: Path,
        on_lost: Callable[[], None],
        on_spawn: Callable[[], None] = lambda: None,
    ):
        self.spec = spec
        self.stderr_log = stderr_log
        self.info = ProcessInfo()
        self.fast_stop = False
        self._on_lost = on_lost
        self._on_spawn = on_spawn
        self._log_start = 0

    def stderr_tail(self, lines: int = 5) -> str:
        """The last ``lines`` lines the current process wrote to stderr (empty if none)."""
        try:
            with self.stderr_log.open("rb") as handle:
                handle.seek(self._log_start)
                data = handle.read()
        except OSError:
            return ""
        text = data.decode("utf-8", errors="replace").strip()
        return "\n".join(text.splitlines()[-lines:])

    @asynccontextmanager
    async def connect(
        self,
    ) -> AsyncIterator[
        tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
    ]:
        """Spawn the process and yield the SDK's (read, write) stream pair; stop the process on the way out."""
        process = await self._spawn()
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        closing = False

        def lost() -> None:
            if not closing:
                self._on_lost()

        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_messages, process, read_writer, lost)
            tg.start_soon(_write_messages, process, write_reader, read_writer)
            try:
                yield read_stream, write_stream
            finally:
                closing = True
                with anyio.CancelScope(shield=True):
                    await self._stop(process)
                    self.info.returncode = process.returncode
                    for stream in (read_stream, write_stream, read_writer, write_reader):
                        await stream.aclose()
                tg.cancel_scope.cancel()

    async def _spawn(self) -> Process:
        spec = self.spec
        assert spec.command is not None
        self.info = ProcessInfo()
        if spec.cwd is not None and not await anyio.to_thread.run_sync(spec.cwd.is_dir):
            raise StartFailed(f"the working directory {spec.cwd} does not exist")
        env = {**get_default_environment(), **spec.env}
        log = await anyio.to_thread.run_sync(self._open_log)
        try:
            process = await anyio.open_process(
                [spec.command, *spec.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=spec.cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise StartFailed(f"cannot start {spec.command!r}: {exc.strerror or exc}") from exc
        finally:
            log.close()
        self.info = ProcessInfo(pid=process.pid)
        self._on_spawn()
        return process

    def _open_log(self) -> IO[bytes]:
        self.stderr_log.parent.mkdir(parents=True, exist_ok=True)
        if self.stderr_log.exists() and self.stderr_log.stat().st_size > _LOG_KEEP_BYTES:
            self.stderr_log.unlink()
        handle = self.stderr_log.open("ab")
        self._log_start = handle.tell()
        return handle

    async def _stop(self, process: Process) -> None:
        """Close stdin, wait, then end the whole process group (bounded at every step)."""
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            assert process.stdin is not None
            await process.stdin.aclose()
        if not self.fast_stop:
            await _wait_exit(process, GRACE_SECONDS)
        # The group may outlive its leader (a helper the server started); end both.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.returncode is not None and not _group_alive(process.pid):
                break
            _signal_group(process, sig)
            await _wait_exit(process, GRACE_SECONDS, group=True)
        # Closes the pipes and the asyncio transport (no ResourceWarning later); bounded like every wait here.
        with anyio.move_on_after(GRACE_SECONDS), suppress(OSError):
            await process.aclose()


async def _read_messages(
    process: Process, out: MemoryObjectSendStream[SessionMessage | Exception], lost: Callable[[], None]
) -> None:
    assert process.stdout is not None
    stdout = BufferedByteReceiveStream(process.stdout)
    try:
        async with out:
            while True:
                line = await stdout.receive_until(b"\n", MAX_MESSAGE_BYTES)
                if not line.strip():
                    continue
                try:
                    item: SessionMessage | Exception = SessionMessage(
                        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    )
                except ValueError as exc:
                    item = exc  # the session reports it to the message handler and goes on
                await out.send(item)
    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    except anyio.DelimiterNotFound:
        pass  # a line over the limit: the stream cannot be resynchronised, so the connection is lost
    finally:
        lost()


async def _write_messages(
    process: Process,
    messages: MemoryObjectReceiveStream[SessionMessage],
    reads: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    assert process.stdin is not None
    try:
        async with messages:
            async for message in messages:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode("utf-8"))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server stopped reading: end the read side so pending requests fail instead of hanging.
        await reads.aclose()


async def _wait_exit(process: Process, seconds: float, *, group: bool = False) -> None:
    # Polling, as the SDK does: waiting on the process also waits for its pipes, which a surviving helper
    # holds open, and nothing signals the end of a process group.
    with anyio.move_on_after(seconds):
        while process.returncode is None or (group and _group_alive(process.pid)):  # noqa: ASYNC110
            await anyio.sleep(_POLL)


def _group_alive(pgid: int) -> bool:
    if not hasattr(os, "killpg"):  # pragma: no cover - Windows has no process groups to probe
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(process: Process, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, sig)
        else:  # pragma: no cover - Windows: the leader only
            process.kill() if sig == signal.SIGKILL else process.terminate()
