"""Actions: a request to the implementation and its answer, each under a deadline, over the link of the moment.

Over a WebSocket every request carries an ``echo`` of its own (``<n>``, counted per connection object) and the
answer with that ``echo`` is its answer, whatever else arrives between (events, answers to other requests).
When the link drops, every request waiting on it fails at once with ``OneBotUnavailable``; a request made while
there is no link fails the same way, so a turn's ``send_message`` gets an error result instead of hanging.
Over HTTP (mode ``http``) an action is a ``POST <url>/<action>`` with the parameters as JSON.

An answer says ``status: ok`` (or ``async``) with ``data``, or ``failed`` with ``retcode`` and ``wording`` /
``message`` (``OneBotActionFailed``). An action still unanswered at its deadline (``action_timeout``) ends in
``OneBotTimeout``; the deadline runs on the host's clock. ``timings`` keeps the last round trips (seconds).
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import httpx
from ishiki_host import run_with_deadline

from ishiki_channel_onebot.errors import OneBotActionFailed, OneBotAuthError, OneBotTimeout, OneBotUnavailable

if TYPE_CHECKING:
    from ishiki_host import Clock

__all__ = ["Actions", "HttpTransport", "Transport", "WsTransport"]

_TIMINGS_KEPT = 1024


class Transport(Protocol):
    """Carries one request and gives back the answer frame (``OneBotUnavailable`` when it cannot)."""

    async def request(self, action: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The answer frame of ``action``."""
        ...


class WsTransport:
    """Requests over one WebSocket link: ``send`` writes a text frame; the reader hands answers to ``answer``."""

    def __init__(self, send: Callable[[str], Awaitable[None]]):
        self._send = send
        self._echo = itertools.count(1)
        self._waiting: dict[str, tuple[anyio.Event, list[Mapping[str, Any]]]] = {}
        self._closed: str | None = None

    def answer(self, frame: Mapping[str, Any]) -> bool:
        """Take an answer frame; False when no request waits for its ``echo`` (late, or another's)."""
        waiting = self._waiting.pop(str(frame.get("echo")), None)
        if waiting is None:
            return False
        waiting[1].append(frame)
        waiting[0].set()
        return True

    def close(self, why: str) -> None:
        """The link is gone: every waiting request fails with ``OneBotUnavailable`` (``why``)."""
        self._closed = why
        for event, _ in self._waiting.values():
            event.set()
        self._waiting.clear()

    async def request(self, action: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send ``action`` with a fresh echo and wait for its answer."""
        if self._closed is not None:
            raise OneBotUnavailable(f"the link is closed ({self._closed})", action=action)
        echo = str(next(self._echo))
        done, answer = anyio.Event(), list[Mapping[str, Any]]()
        self._waiting[echo] = (done, answer)
        try:
            try:
                await self._send(json.dumps({"action": action, "params": dict(params), "echo": echo}))
            except ConnectionError as exc:
                raise OneBotUnavailable(f"the link closed while sending {action} ({exc})", action=action) from None
            await done.wait()
        finally:
            self._waiting.pop(echo, None)
        if not answer:
            raise OneBotUnavailable(f"the link closed before {action} was answered ({self._closed})", action=action)
        return answer[0]


class HttpTransport:
    """Requests over the implementation's HTTP API (``POST <url>/<action>``, the token as a bearer)."""

    def __init__(self, client: httpx.AsyncClient, url: str, token: str | None):
        self._client = client
        self._url = url
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def request(self, action: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """POST the action; the answer's JSON (HTTP errors as the answer frame OneBot's HTTP API means)."""
        try:
            response = await self._client.post(f"{self._url}/{action}", json=dict(params), headers=self._headers)
        except httpx.HTTPError as exc:
            raise OneBotUnavailable(f"{action}: {type(exc).__name__}: {exc}", action=action) from None
        if response.status_code in (401, 403):
            raise OneBotAuthError(f"the HTTP API refused the access token ({response.status_code})", action=action)
        if response.status_code != 200:
            return {"status": "failed", "retcode": response.status_code, "wording": f"HTTP {response.status_code}"}
        try:
            frame = response.json()
        except ValueError:
            raise OneBotUnavailable(
                f"{action}: the HTTP API answered something other than JSON", action=action
            ) from None
        if not isinstance(frame, dict):
            raise OneBotUnavailable(f"{action}: the HTTP API answered {type(frame).__name__}, not an object")
        answer: Mapping[str, Any] = frame
        return answer


class Actions:
    """Calls actions through the transport of the moment (``attach``/``detach``), each under its deadline."""

    def __init__(self, clock: Clock, timeout: float, label: str):
        self._clock = clock
        self._timeout = timeout
        self._label = label
        self._transport: Transport | None = None
        self._down = "not connected yet"
        self.timings: deque[float] = deque(maxlen=_TIMINGS_KEPT)

    @property
    def connected(self) -> bool:
        """Whether a link is there to carry requests."""
        return self._transport is not None

    def attach(self, transport: Transport) -> None:
        """Carry requests over ``transport`` from now on."""
        self._transport = transport

    def detach(self, transport: Transport, why: str) -> None:
        """``transport`` is gone (``why``); requests fail at once until another is attached."""
        if self._transport is transport:
            self._transport, self._down = None, why

    async def call(self, action: str, params: Mapping[str, Any] | None = None, *, deadline: float | None = None) -> Any:
        """The ``data`` of ``action``'s answer (see the module docstring for the errors); ``deadline`` replaces
        the account's ``action_timeout`` for this call."""
        transport = self._transport
        if transport is None:
            raise OneBotUnavailable(f"onebot account {self._label}: no link ({self._down})", action=action)
        seconds = self._timeout if deadline is None else deadline
        started = self._clock.monotonic()
        try:
            frame = await run_with_deadline(self._clock, seconds, lambda: transport.request(action, params or {}))
        except TimeoutError:
            raise OneBotTimeout(
                f"onebot account {self._label}: {action} had no answer within {seconds:g} s", action=action
            ) from None
        self.timings.append(self._clock.monotonic() - started)
        return _data(frame, action, self._label)


def _data(frame: Mapping[str, Any], action: str, label: str) -> Any:
    status = frame.get("status")
    if status in ("ok", "async"):
        return frame.get("data")
    retcode = frame.get("retcode")
    wording = frame.get("wording") or frame.get("message") or frame.get("msg") or ""
    code = retcode if isinstance(retcode, int) and not isinstance(retcode, bool) else -1
    raise OneBotActionFailed(
        f"onebot account {label}: {action} failed (retcode {code}{': ' + str(wording) if wording else ''})",
        action=action,
        retcode=code,
        wording=str(wording),
    )
