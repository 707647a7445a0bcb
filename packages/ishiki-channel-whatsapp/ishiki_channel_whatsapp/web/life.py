"""One life of the linked device: a client connected (paired first when there is no session), its events
handled in the order they came, until the life ends. A message is handed to the intake (``Intake.submit``:
checked and shaped here, dispatched in the intake's lanes), so a message waiting on a running turn holds back
neither a command after it nor the life's own events.

The events (neonize's, read with ``wire``) and what each does:

- ``QR``: no session yet. ``pairing: qr`` draws each code; ``pairing: code`` asks once for a pairing code for
  ``web.phone`` and prints it. The life then has ``pairing_timeout`` to finish.
- ``PairStatus``: linked (to the configured number, or the life ends with ``WhatsAppWebRefused`` and the
  session is to be removed), or the pairing failed (the life ends: a new one shows a new code).
- ``Connected``: the owner checks who the device is and reports readiness; from now on ``Message`` events are
  input (``Intake``). Messages that came before it wait for it.
- ``Disconnected``: whatsmeow reconnects by itself; the life gives it ``reconnect_timeout``, then ends.
- ``LoggedOut``, or a ``ConnectFailure`` that says logged out: the device was unlinked; ``WhatsAppWebLoggedOut``
  (fatal) says to pair again, and asks for the session to be removed (``forget_session``: the connection does
  it once the client stopped, so no file is pulled from under the library's open database).
- ``TemporaryBan``, ``StreamReplaced`` (the session is used by another client), ``ClientOutdated``, or a
  ``ConnectFailure`` for those reasons: ``WhatsAppWebRefused`` (fatal: reconnecting cannot help).
- Any other ``ConnectFailure``, the client ending, or no ``Connected`` within the account's
  ``startup_timeout`` of connecting with a session: the life ends, and the connection starts another one after
  a back-off on the host's clock.

A life that ends normally returns why (for the log); one that must not be repeated raises.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, Protocol

import anyio
from ishiki_host import run_with_deadline

from ishiki_channel_whatsapp.web import wire
from ishiki_channel_whatsapp.web.errors import (
    WhatsAppWebError,
    WhatsAppWebLoggedOut,
    WhatsAppWebRefused,
)

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from ishiki_host import ChannelHost

    from ishiki_channel_whatsapp.web.client import WebClient
    from ishiki_channel_whatsapp.web.config import WebSettings
    from ishiki_channel_whatsapp.web.intake import Intake
    from ishiki_channel_whatsapp.web.pairing import PairingPrompt
    from ishiki_channel_whatsapp.web.shaping import Shaper

__all__ = ["DeviceLife", "LifeOwner"]

_LOGGED_OUT = frozenset({"LOGGED_OUT", "MAIN_DEVICE_GONE", "UNKNOWN_LOGOUT"})
_REFUSED = {
    "TEMP_BANNED": "WhatsApp banned this number for a while",
    "CLIENT_OUTDATED": "WhatsApp calls this client outdated (update neonize)",
    "BAD_USER_AGENT": "WhatsApp refused this client's user agent (update neonize)",
}


class LifeOwner(Protocol):
    """What a life tells the connection that runs it."""

    def pairing(self) -> None:
        """A pairing prompt was shown."""
        ...

    async def connected(self, me: wire.Identity) -> Shaper:
        """The device is connected as ``me``: checked, remembered, reported; the shaper of its messages."""
        ...

    def state(self, state: str) -> None:
        """The device's state changed (``connecting``, ``pairing``, ``connected``, ``reconnecting``)."""
        ...


@dataclass(frozen=True, slots=True)
class _Ended:
    """The client's ``run`` ended (``error``: how)."""

    error: WhatsAppWebError | None = None


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class DeviceLife:
    """One life (see the module docstring)."""

    def __init__(
        self,
        host: ChannelHost,
        settings: WebSettings,
        *,
        client: WebClient,
        prompt: PairingPrompt,
        intake: Intake,
        owner: LifeOwner,
    ):
        self._host = host
        self._settings = settings
        self._client = client
        self._prompt = prompt
        self._intake = intake
        self._owner = owner
        self._label = settings.label
        self._shaper: Shaper | None = None
        self._early: list[Any] = []
        self._code_asked = False
        self._pairing = False
        self._deadline: float | None = None
        self._waiting_for = ""

    async def run(self) -> str:
        """Live until the life ends; why it ended (``WhatsAppWebError`` when it must not be repeated)."""
        send, receive = anyio.create_memory_object_stream[Any](math.inf)
        self._wait(self._settings.startup_timeout, "no connection")
        self._owner.state("connecting")
        try:
            with send, receive:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._run_client, send)
                    try:
                        why = await self._consume(receive)
                    finally:
                        tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # an error comes out as itself, not as a group of one
            raise _single(group) from None
        return why

    async def _run_client(self, send: MemoryObjectSendStream[Any]) -> None:
        def sink(event: Any) -> None:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                send.send_nowait(event)

        try:
            await self._client.run(sink)
            sink(_Ended())
        except WhatsAppWebError as exc:
            sink(_Ended(exc))

    async def _consume(self, receive: MemoryObjectReceiveStream[Any]) -> str:
        while True:
            remaining = None if self._deadline is None else max(0.0, self._deadline - self._host.clock.monotonic())
            try:
                event = await run_with_deadline(self._host.clock, remaining, receive.receive)
            except TimeoutError:
                return self._waiting_for
            if isinstance(event, _Ended):
                if event.error is not None and event.error.fatal:
                    raise event.error
                return f"the client ended ({event.error})" if event.error else "the client ended"
            handler = self._handlers.get(wire.event_name(event), DeviceLife._other)
            outcome = await handler(self, event)
            if outcome is not None:
                return outcome

    def _wait(self, seconds: float | None, what: str) -> None:
        """From now on, end the life after ``seconds`` (``None``: never) unless something changes it."""
        self._deadline = None if seconds is None else self._host.clock.monotonic() + seconds
        self._waiting_for = f"{what} within {seconds:g} s" if seconds is not None else ""

    async def _qr(self, event: Any) -> str | None:
        if not self._pairing:
            self._pairing = True
            self._wait(self._settings.pairing_timeout, "the device was not linked")
            self._owner.state("pairing")
        codes = list(event.Codes)
        if self._settings.pairing == "qr" and codes:
            self._prompt.qr(str(codes[0]))
            self._owner.pairing()
        elif self._settings.pairing == "code" and not self._code_asked and self._settings.phone:
            self._code_asked = True
            try:
                code = await self._client.pair_phone(self._settings.phone)
            except WhatsAppWebError as exc:
                return f"WhatsApp gave no pairing code for +{self._settings.phone} ({exc})"
            self._prompt.code(code, self._settings.phone)
            self._owner.pairing()
        return None

    async def _pair_status(self, event: Any) -> str | None:
        if wire.enum_name(event, "Status") != "SUCCESS":
            return f"pairing failed ({event.Error or 'WhatsApp gave no reason'})"
        linked = wire.jid(event.ID)
        phone = linked.user if linked is not None else ""
        if self._settings.phone and phone and phone != self._settings.phone:
            raise WhatsAppWebRefused(
                f"whatsapp account {self._label}: the device was linked by +{phone}, but web.phone is "
                f"+{self._settings.phone}; its session was removed. Remove it from that phone's linked devices, "
                "then pair with the configured number (or fix web.phone)",
                what="pairing",
                forget_session=True,
            )
        self._host.logger.info("whatsapp account %s: linked to +%s", self._label, phone)
        self._wait(self._settings.startup_timeout, "no connection after linking")
        return None

    async def _connected(self, _: Any) -> str | None:
        me = await self._client.me()
        if me is None:
            return "connected, but WhatsApp named no linked account"
        self._shaper = await self._owner.connected(me)
        self._wait(None, "")
        self._owner.state("connected")
        if self._settings.typing:
            with suppress(WhatsAppWebError):
                await self._client.set_online()
        early, self._early = self._early, []
        for message in early:
            await self._intake.submit(message, self._shaper, self._client)
        return None

    async def _disconnected(self, _: Any) -> str | None:
        self._host.logger.warning("whatsapp account %s: disconnected; reconnecting", self._label)
        self._wait(self._settings.reconnect_timeout, "the connection did not come back")
        self._owner.state("reconnecting")
        return None

    async def _message(self, event: Any) -> str | None:
        if self._shaper is None:
            self._early.append(event)  # a message before Connected: who the device is is not known yet
        else:
            await self._intake.submit(event, self._shaper, self._client)
        return None

    async def _logged_out(self, event: Any) -> str | None:
        reason = wire.enum_name(event, "Reason") or "unlinked"
        how = "scan the new QR code" if self._settings.pairing == "qr" else "enter the new pairing code"
        raise WhatsAppWebLoggedOut(
            f"whatsapp account {self._label}: WhatsApp logged the linked device out ({reason}); its session was "
            f"removed. Pair again: restart the host and {how}",
            what="connect",
            forget_session=True,
        )

    async def _connect_failure(self, event: Any) -> str | None:
        reason = wire.enum_name(event, "Reason")
        if reason in _LOGGED_OUT:
            return await self._logged_out(event)
        if reason in _REFUSED:
            self._refuse(f"{_REFUSED[reason]}: {event.Message or reason}")
        return f"WhatsApp refused the connection ({reason or 'no reason'}: {event.Message})"

    async def _refused(self, event: Any) -> str | None:
        name = wire.event_name(event)
        if name == "TemporaryBan":
            hours = int(event.Expire) / 3600
            why = f"WhatsApp banned this number for now ({wire.enum_name(event, 'Code')}; {hours:.1f} h left)"
        elif name == "StreamReplaced":
            why = "another client connected with this device's session (does a second host run it?)"
        else:
            why = "WhatsApp calls this client outdated (update neonize)"
        self._refuse(why)

    def _refuse(self, why: str) -> NoReturn:
        raise WhatsAppWebRefused(f"whatsapp account {self._label}: {why}; not reconnecting", what="connect")

    async def _log_only(self, event: Any) -> str | None:
        name, log = wire.event_name(event), self._host.logger
        if name == "UndecryptableMessage":
            log.warning(
                "whatsapp account %s: a message could not be decrypted; WhatsApp is asked for it again", self._label
            )
        elif name == "KeepAliveTimeout":
            log.warning("whatsapp account %s: WhatsApp stopped answering keep-alives", self._label)
        else:
            log.info("whatsapp account %s: %s", self._label, name)
        return None

    async def _other(self, event: Any) -> str | None:
        self._host.logger.debug("whatsapp account %s: ignored a %s event", self._label, wire.event_name(event))
        return None

    _handlers: ClassVar[dict[str, Callable[[DeviceLife, Any], Awaitable[str | None]]]] = {
        "QR": _qr,
        "PairStatus": _pair_status,
        "Connected": _connected,
        "Disconnected": _disconnected,
        "Message": _message,
        "LoggedOut": _logged_out,
        "ConnectFailure": _connect_failure,
        "TemporaryBan": _refused,
        "StreamReplaced": _refused,
        "ClientOutdated": _refused,
        "UndecryptableMessage": _log_only,
        "KeepAliveTimeout": _log_only,
        "KeepAliveRestored": _log_only,
        "OfflineSyncCompleted": _log_only,
        "StreamError": _log_only,
    }
