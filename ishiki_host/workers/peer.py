"""Requests and answers over one link between a supervisor and a worker, both ways at once.

A ``Peer`` owns one byte stream. ``call(method, params)`` sends a request and waits for its answer; ``notify``
sends one nobody answers. ``run`` reads what the other side sends: answers wake their callers, requests run
their handler (at most ``max_in_flight`` at once; beyond that the peer stops reading, so a flood from the
other side waits in the socket's buffer instead of in memory). Messages:

- a request ``{"id": n, "method": m, "params": {...}}`` (a notification has no ``id``);
- an answer ``{"id": n, "result": ...}``, or ``{"id": n, "error": {"type": "ChannelUnavailable", "message": "...",
  "fatal": false}}`` (with the fields of the error that it has: ``fatal``, ``code``, ``model``, ``file``, ...).

A handler's failure travels back as itself when it is one of ``MAPPED_ERRORS`` (the caller gets the same class
with the same message: ``AgentStopped`` is ``AgentStopped`` on both sides of the link), as the nearest mapped
base class when it is a subclass, else as ``RemoteError`` naming the class. No traceback crosses.

A frame or message that does not parse is logged once with the peer's label and the link is closed: ``run``
returns, every pending ``call`` raises ``PeerClosed``, and the handlers still running are cancelled (their
answers could not be sent). Whoever called retries from what is durable.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host import errors
from ishiki_host.workers.wire import FrameError, FrameReader, encode_frame

if TYPE_CHECKING:
    from anyio.abc import ByteStream, TaskGroup, TaskStatus

    from ishiki_host.jsontypes import Json

__all__ = ["MAPPED_ERRORS", "Handler", "Peer", "PeerClosed", "RemoteError"]

logger = logging.getLogger("ishiki_host.workers")

Handler = Callable[[dict[str, "Json"]], Awaitable["Json"]]


class PeerClosed(errors.IshikiError):
    """The link is gone (or went while a call waited for its answer)."""


class RemoteError(errors.IshikiError):
    """A handler on the other side failed with an error that is not mapped; ``kind`` is its class name."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.detail = message


def _text(block: Mapping[str, Json], key: str) -> str | None:
    value = block.get(key)
    return value if isinstance(value, str) else None


def _number(block: Mapping[str, Json], key: str) -> int | None:
    value = block.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _model_error(cls: type[errors.ModelError]) -> Callable[[str, Mapping[str, Json]], Exception]:
    return lambda message, block: cls(message, model=_text(block, "model"), status=_number(block, "status"))


def _rate_limited(message: str, block: Mapping[str, Json]) -> Exception:
    retry_after = block.get("retry_after")
    wait = float(retry_after) if isinstance(retry_after, int | float) and not isinstance(retry_after, bool) else None
    status = _number(block, "status")
    return errors.ModelRateLimited(message, model=_text(block, "model"), status=status, retry_after=wait)


def _config_error(message: str, block: Mapping[str, Json]) -> Exception:
    return errors.ConfigError(
        message, file=_text(block, "file"), line=_number(block, "line"), path=_text(block, "path") or ""
    )


def _by_message(cls: type[Exception]) -> Callable[[str, Mapping[str, Json]], Exception]:
    return lambda message, block: cls(message)


MAPPED_ERRORS: dict[str, Callable[[str, Mapping[str, Json]], Exception]] = {
    **{
        cls.__name__: _by_message(cls)
        for cls in (
            errors.EventInvalid,
            errors.EventRejected,
            errors.ChannelNotReady,
            errors.ChannelUnavailable,
            errors.ChannelError,
            errors.AgentStopped,
            errors.FactLogError,
            errors.RuntimeStartFailed,
            errors.BeatRunFailed,
            errors.StoreError,
            FrameError,
            PeerClosed,
        )
    },
    **{
        cls.__name__: _model_error(cls)
        for cls in (
            errors.ModelUnavailable,
            errors.ContextLengthExceeded,
            errors.ModelAuthError,
            errors.ModelBadRequest,
            errors.ModelError,
        )
    },
    "ModelRateLimited": _rate_limited,
    "ConfigError": _config_error,
    "ResourceError": lambda message, block: errors.ResourceError(_text(block, "code") or "", message),
}
"""The error classes that cross a link as themselves (by class name), each with how it is made again from its
answer's ``error`` block. A subclass not named here crosses as its nearest base that is."""
_FIELDS = ("fatal", "code", "model", "status", "retry_after", "file", "line", "path")
"""The attributes of a mapped error that travel with its message (those it has)."""


def error_json(error: BaseException) -> dict[str, Json]:
    """The answer's ``error`` of a handler that raised ``error`` (its nearest mapped class and its fields)."""
    if isinstance(error, RemoteError):  # passed on as it came (an unknown method's, a failure further away)
        return {"type": "RemoteError", "kind": error.kind, "message": error.detail}
    name = next((cls.__name__ for cls in type(error).__mro__ if cls.__name__ in MAPPED_ERRORS), None)
    message = error.message if isinstance(error, errors.ConfigError) else str(error)
    if name is None:
        return {"type": "RemoteError", "kind": type(error).__name__, "message": message}
    block: dict[str, Json] = {"type": name, "message": message}
    for field in _FIELDS:
        value = getattr(error, field, None)
        if isinstance(value, str | int | float | bool):
            block[field] = value
    return block


def error_from(block: object) -> Exception:
    """The exception an answer's ``error`` stands for."""
    if not isinstance(block, dict):
        return RemoteError("UnknownError", repr(block))
    kind, message = str(block.get("type", "")), str(block.get("message", ""))
    make = MAPPED_ERRORS.get(kind)
    if make is None:
        return RemoteError(str(block.get("kind", kind)), message)
    error = make(message, block)
    fatal = block.get("fatal")
    if isinstance(fatal, bool) and hasattr(error, "fatal"):
        error.fatal = fatal  # a ChannelError raised with fatal=False stays a passing trouble at the caller
    return error


class Peer:
    """One end of a link (see the module docstring)."""

    def __init__(
        self,
        stream: ByteStream,
        handlers: Mapping[str, Handler],
        *,
        label: str,
        max_in_flight: int = 256,
        reader: FrameReader | None = None,
    ):
        self._stream = stream
        self._reader = reader or FrameReader(stream)  # given when frames were read already (a hello)
        self._handlers = dict(handlers)
        self.label = label
        self._slots = anyio.Semaphore(max_in_flight)
        self._write = anyio.Lock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self._closed = False
        self._gone = anyio.Event()
        self._tg: TaskGroup | None = None

    @property
    def closed(self) -> bool:
        """Whether the link is gone."""
        return self._closed

    async def wait_closed(self) -> None:
        """Until the link is gone."""
        await self._gone.wait()

    async def call(self, method: str, params: Mapping[str, Json]) -> Json:
        """Send a request and wait for its answer; the other side's error raised here (see the module docstring)."""
        if self._closed:
            raise PeerClosed(f"the link to {self.label} is closed")
        request_id = next(self._ids)
        answered, slot = anyio.Event(), list[Any]()
        self._waiting[request_id] = (answered, slot)
        try:
            await self._send({"id": request_id, "method": method, "params": dict(params)})
            await answered.wait()
        finally:
            self._waiting.pop(request_id, None)
        if not slot:
            raise PeerClosed(f"the link to {self.label} closed before {method} was answered")
        ok, value = slot[0]
        if not ok:
            raise value
        result: Json = value
        return result

    async def notify(self, method: str, params: Mapping[str, Json]) -> None:
        """Send a request nobody answers."""
        if self._closed:
            raise PeerClosed(f"the link to {self.label} is closed")
        await self._send({"method": method, "params": dict(params)})

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read and serve until the link ends, does not parse, or this is cancelled."""
        reader = self._reader
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                try:
                    while not self._closed:
                        try:
                            message = await reader.read()
                        except FrameError as exc:
                            logger.warning("the link to %s is reset: %s", self.label, exc)
                            break
                        except (anyio.BrokenResourceError, OSError) as exc:
                            logger.debug("the link to %s broke: %s", self.label, exc)
                            break
                        if message is None:
                            break
                        if not await self._take(message):
                            break
                finally:
                    tg.cancel_scope.cancel()  # handlers still running could not answer any more
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the link; every pending call raises ``PeerClosed``."""
        if self._closed:
            return
        self._closed = True
        self._gone.set()
        for answered, _ in list(self._waiting.values()):
            answered.set()
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                await self._stream.aclose()

    async def _take(self, message: dict[str, Json]) -> bool:
        """Handle one message; False when it does not have the shape of one (the link is then reset)."""
        request_id = message.get("id")
        if "method" in message:
            method, params = message.get("method"), message.get("params", {})
            if not isinstance(method, str) or not isinstance(params, dict):
                logger.warning("the link to %s is reset: a request without a method name or params", self.label)
                return False
            if request_id is not None and (not isinstance(request_id, int) or isinstance(request_id, bool)):
                logger.warning("the link to %s is reset: a request id %r", self.label, request_id)
                return False
            await self._slots.acquire()  # back-pressure: no more reading while max_in_flight handlers run
            assert self._tg is not None
            self._tg.start_soon(self._serve, request_id, method, params)
            return True
        if not isinstance(request_id, int) or ("result" not in message and "error" not in message):
            logger.warning("the link to %s is reset: a message that is neither a request nor an answer", self.label)
            return False
        waiting = self._waiting.get(request_id)
        if waiting is not None:  # else the caller gave up (cancelled): the late answer is dropped
            answered, slot = waiting
            slot.append((True, message["result"]) if "error" not in message else (False, error_from(message["error"])))
            answered.set()
        return True

    async def _serve(self, request_id: int | None, method: str, params: dict[str, Json]) -> None:
        try:
            handler = self._handlers.get(method)
            try:
                if handler is None:
                    raise RemoteError("UnknownMethod", f"{self.label} asked for {method!r}, which is not served here")
                result = await handler(params)
            except FrameError as exc:  # the other side sent what does not decode: reset, as for a bad frame
                logger.warning("the link to %s is reset: %s %s", self.label, method, exc)
                await self.aclose()
                return
            except Exception as exc:
                if request_id is None:
                    logger.warning("%s from %s failed: %s: %s", method, self.label, type(exc).__name__, exc)
                    return
                await self._answer({"id": request_id, "error": error_json(exc)})
                return
            if request_id is not None:
                await self._answer({"id": request_id, "result": result})
        finally:
            self._slots.release()

    async def _answer(self, message: dict[str, Json]) -> None:
        try:
            try:
                await self._send(message)
            except (TypeError, ValueError, FrameError) as exc:  # a result that cannot travel: say so instead
                error = RemoteError(type(exc).__name__, f"the answer could not be sent: {exc}")
                await self._send({"id": message["id"], "error": error_json(error)})
        except PeerClosed:
            pass  # nobody is there to read it

    async def _send(self, message: dict[str, Json]) -> None:
        frame = encode_frame(message)
        async with self._write:
            if self._closed:
                raise PeerClosed(f"the link to {self.label} is closed")
            try:
                await self._stream.send(frame)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                await self.aclose()
                raise PeerClosed(f"the link to {self.label} broke: {exc}") from exc
