"""The host's control socket: ``<data_dir>/ishiki.sock``, which ``ishiki status`` asks.

Why a Unix socket under the data directory: ``ishiki status`` must reach a host that serves no HTTP (most do
not set ``http.listen``), answer at once (a file the host writes on a signal would need the client to poll for
it) and reach only the host of that directory, asked by the user who runs it. The socket is created
``0600`` by a host that already holds the data directory's lock (``ishiki_host.host.lock``), so a file left by
a crashed host is stale by construction and is replaced; it is removed when the host stops. POSIX only, like
the lock. A path longer than a socket address holds (about 100 bytes) is reached through
``/proc/self/fd/<dir>/ishiki.sock`` on Linux.

The protocol is one request line, answered with one JSON document, then the host closes the connection:
``status`` gives what ``answers["status"]()`` returns as ``{"ok": true, "answer": ...}``; anything else gives
``{"ok": false, "error": ...}``. A client that sends nothing within ``READ_SECONDS`` or more than
``MAX_REQUEST`` bytes is dropped. ``ask_host`` is the client.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import socket
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from ishiki_host.errors import HostNotAnswering

__all__ = ["CONTROL_SOCKET", "MAX_REQUEST", "READ_SECONDS", "ControlServer", "ask_host"]

logger = logging.getLogger("ishiki_host.host")

CONTROL_SOCKET = "ishiki.sock"
READ_SECONDS = 5.0
MAX_REQUEST = 1024
_MAX_ADDRESS = 100  # sun_path holds 108 bytes on Linux and 104 on macOS, the final NUL included


class ControlServer:
    """Serves ``answers`` on the socket at ``path`` (see the module docstring); ``error`` says why it could not
    listen, if it could not."""

    def __init__(self, path: Path, answers: Mapping[str, Callable[[], Any]]):
        self.path = path
        self.answers = dict(answers)
        self.error: str | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen, report readiness, serve until cancelled, then remove the socket. A socket that cannot be
        made is logged once (the host runs on; ``ishiki status`` will say it gets no answer)."""
        try:
            with _address(self.path) as address:
                listener = await anyio.create_unix_listener(address, mode=0o600)
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            logger.warning("control socket %s: %s (`ishiki status` will not reach this host)", self.path, self.error)
            task_status.started()
            return
        try:
            async with listener:
                task_status.started()
                await listener.serve(self._serve_one)
        finally:
            with contextlib.suppress(OSError):
                self.path.unlink()

    async def _serve_one(self, stream: SocketStream) -> None:
        async with stream:
            try:
                with anyio.move_on_after(READ_SECONDS):
                    line = await BufferedByteReceiveStream(stream).receive_until(b"\n", MAX_REQUEST)
                    await stream.send(self._reply(line.decode("utf-8", "replace").strip()))
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.BrokenResourceError):
                return  # a client that went away or sent no request line gets nothing
            except Exception:  # one bad client must never stop the server (or the host's task group)
                logger.exception("control socket: serving a client failed")

    def _reply(self, request: str) -> bytes:
        produce = self.answers.get(request)
        if produce is None:
            known = ", ".join(sorted(self.answers))
            reply: dict[str, Any] = {"ok": False, "error": f"unknown request {request[:40]!r}; known: {known}"}
        else:
            try:
                reply = {"ok": True, "answer": produce()}
            except Exception as exc:
                logger.exception("control socket: answering %r failed", request)
                reply = {"ok": False, "error": f"answering failed ({type(exc).__name__}: {exc}); see the host's log"}
        return json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n"


def ask_host(path: Path, request: str, *, timeout: float = 10.0) -> Any:
    """Ask the host listening at ``path`` and return its answer. ``HostNotAnswering`` when nothing listens
    there, it does not answer within ``timeout`` seconds, or it answers with an error."""
    try:
        with _address(path) as address, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(address)
            sock.sendall(request.encode() + b"\n")
            data = _read_all(sock)
    except FileNotFoundError:
        raise HostNotAnswering(f"{path} does not exist") from None
    except ConnectionRefusedError:
        raise HostNotAnswering(f"nothing listens on {path} (left by a host that stopped abruptly)") from None
    except TimeoutError:
        raise HostNotAnswering(f"the host did not answer on {path} within {timeout:g} s") from None
    except OSError as exc:
        raise HostNotAnswering(f"cannot reach {path}: {exc.strerror or exc}") from exc
    try:
        reply = json.loads(data)
    except ValueError:
        raise HostNotAnswering(f"the answer on {path} is not JSON: {data[:80]!r}") from None
    if not isinstance(reply, dict) or not reply.get("ok"):
        error = reply.get("error") if isinstance(reply, dict) else reply
        raise HostNotAnswering(f"the host could not answer {request!r}: {error}")
    return reply.get("answer")


def _read_all(sock: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


@contextlib.contextmanager
def _address(path: Path) -> Iterator[str]:
    """A socket address for ``path``: itself, or (too long) through the descriptor of its directory."""
    text = str(path)
    if len(os.fsencode(text)) <= _MAX_ADDRESS:
        yield text
        return
    if not Path("/proc/self/fd").is_dir():
        raise OSError(errno.ENAMETOOLONG, f"the socket path is longer than {_MAX_ADDRESS} bytes")
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)
