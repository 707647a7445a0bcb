"""The ``web`` backend's connection: a linked device on a personal or business number (``WebConnection``).

``create_web_connection(host, account)`` is what ``WhatsAppChannel.create`` calls for ``backend: web``: it
validates the account (``WebSettings``) and makes the connection; nothing connects before ``run``.

``run`` lives the device's lives (``ishiki_channel_whatsapp.web.life``) one after the other: a life that ends
(the client stopped, a failed connection, a pairing nobody finished, a connection that did not come back) is
followed by a new one after a back-off on the host's clock (doubling up to the account's ``backoff_max``, jitter
from ``host.rng``; reset once connected). A life that must not be repeated ends ``run`` with a fatal
``WhatsAppWebError``: the device was logged out (its session is removed; pair again), or WhatsApp refuses it.

Readiness is reported once the sid ``whatsapp:<phone>`` is known and the device is usable or waiting for a
person: when it connected, or when a pairing prompt is shown for a number that is known (``web.phone``, or the
identity saved at the last connection). Without either, the first pairing has to finish within the host's
start-up timeout (60 s) or the host starts the connection again (with a new code); so set ``web.phone``.

The session lives in ``host.state_dir`` (``session``). ``status()`` reports the state (``connecting``,
``pairing``, ``connected``, ``reconnecting``, ``waiting``, ``stopped``, ``failed``), the number, the
restarts, the last trouble and the messages set aside.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import anyio
from ishiki_host import Backoff
from ishiki_host.errors import ChannelError, ResourceError

from ishiki_channel_whatsapp.aside import SetAsideFile
from ishiki_channel_whatsapp.seen import SeenIds
from ishiki_channel_whatsapp.web.client import ClientFactory, ClientOptions, QuoteRef, WebClient
from ishiki_channel_whatsapp.web.config import WebSettings
from ishiki_channel_whatsapp.web.errors import WhatsAppWebError, WhatsAppWebRefused
from ishiki_channel_whatsapp.web.intake import Intake
from ishiki_channel_whatsapp.web.life import DeviceLife
from ishiki_channel_whatsapp.web.media import make_fetcher
from ishiki_channel_whatsapp.web.outbound import Sender
from ishiki_channel_whatsapp.web.pairing import PairingPrompt
from ishiki_channel_whatsapp.web.recent import Recent
from ishiki_channel_whatsapp.web.session import Session
from ishiki_channel_whatsapp.web.shaping import Shaper

if TYPE_CHECKING:
    from anyio.abc import TaskStatus
    from ishiki_host import ChannelHost, Json, OutboundFile, SendResult

    from ishiki_channel_whatsapp.web.wire import Identity

__all__ = ["WebConnection", "create_web_connection"]


def create_web_connection(host: ChannelHost, account: Mapping[str, Any]) -> WebConnection:
    """The connection of one ``backend: web`` account (``HostConfigInvalid`` names a wrong key)."""
    return WebConnection(host, WebSettings.from_config(account))


def _neonize_client(options: ClientOptions) -> WebClient:
    from ishiki_channel_whatsapp.web.neonize_client import NeonizeClient

    return NeonizeClient(options)


class WebConnection:
    """The ``ChannelConnection`` of one linked device (see the module docstring).

    ``client_factory`` makes each life's client (default: neonize's); ``out`` is where pairing prompts go
    (default: stderr). ``run`` may be called again after it ended (the host restarts a crashed channel).
    """

    platform = "whatsapp"

    def __init__(
        self,
        host: ChannelHost,
        settings: WebSettings,
        *,
        client_factory: ClientFactory | None = None,
        out: TextIO | None = None,
    ):
        self._host = host
        self._settings = settings
        self._factory: ClientFactory = client_factory or _neonize_client
        self._out = out
        self._log = host.logger
        self._session = Session(host.state_dir, logger=host.logger)
        self._backoff = Backoff(host.rng, maximum=settings.backoff_max)
        self._known_phone = settings.phone
        self._me: Identity | None = None
        self._client: WebClient | None = None
        self._life_client: WebClient | None = None
        self._reported = False
        self._own: Recent[None] = Recent()
        self._quotes: Recent[QuoteRef] = Recent()
        self._state = "stopped"
        self._restarts = 0
        self._last_error: str | None = None
        self._intake: Intake | None = None
        self._report: Callable[[], None] = lambda: None
        self._sender = Sender(
            lambda: self._client,
            self._quotes,
            on_sent=lambda message_id: self._own.add(message_id, None),
            logger=host.logger,
            not_connected=self._not_connected,
        )

    @property
    def settings(self) -> WebSettings:
        """The account this connection serves."""
        return self._settings

    @property
    def self_id(self) -> str:
        """The number's digits: linked, saved, or configured (``ChannelError`` while none is known)."""
        phone = self._me.phone if self._me is not None else self._known_phone
        if phone is None:
            raise ChannelError(f"whatsapp account {self._settings.label}: the number is not known until it is linked")
        return phone

    @property
    def sid(self) -> str:
        """``whatsapp:<phone digits>``, the key the host routes by."""
        return f"whatsapp:{self.self_id}"

    @property
    def me(self) -> Identity | None:
        """Who the device is linked to, once connected."""
        return self._me

    def status(self) -> dict[str, Json]:
        """What the host's status shows: ``state``, ``phone``, ``restarts``, ``lastError``, ``taken``,
        ``setAside`` and ``lastSetAside``."""
        phone = self._me.phone if self._me is not None else self._known_phone
        intake = self._intake
        return {
            "state": self._state,
            "phone": f"+{phone}" if phone else None,
            "restarts": self._restarts,
            "lastError": self._last_error,
            "taken": intake.taken if intake is not None else 0,
            "setAside": intake.set_aside if intake is not None else 0,
            "lastSetAside": intake.last_set_aside if intake is not None else None,
        }

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Live the device's lives until cancelled (see the module docstring)."""
        stored = await self._session.load_identity()
        if stored is not None and self._settings.phone and stored.phone != self._settings.phone:
            raise WhatsAppWebRefused(self._other_number(stored.phone), what="connect")
        self._known_phone = self._settings.phone or (stored.phone if stored is not None else None)
        seen = SeenIds(self._host.state_dir, clock=self._host.clock, logger=self._log)
        await seen.load()
        self._intake = Intake(
            self._host,
            self._settings,
            seen=seen,
            aside=SetAsideFile(self._host.state_dir, logger=self._log),
            rng=self._host.rng,
            own=lambda message_id: message_id in self._own,
            quotes=self._quotes,
        )
        deregister: list[Callable[[], None]] = []
        self._report = lambda: self._ready(task_status, deregister)
        try:
            await self._lives_with_intake(self._intake)
        finally:
            self._client, self._report, self._reported = None, lambda: None, False
            self._state = "failed" if self._state == "failed" else "stopped"
            for off in deregister:
                off()

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send one chat message, split at 4,096 characters; the first part quotes ``reply_to`` when it is a
        recent message. Failures come back as ``SendResult.error``, never raised."""
        return await self._sender.send(channel_id, text, reply_to=reply_to)

    async def send_typing(self, channel_id: str) -> None:
        """Show "typing..." in the chat (unless ``web.typing`` is off)."""
        if self._settings.typing:
            await self._sender.send_typing(channel_id)

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send images, videos, audio and documents; failures come back as ``SendResult.error``."""
        return await self._sender.send_files(channel_id, files)

    # -- LifeOwner: what a life tells the connection ----------------------------------------------------------

    def pairing(self) -> None:
        """A pairing prompt was shown: ready, if the number is known."""
        if self._known_phone is not None:
            self._report()

    async def connected(self, me: Identity) -> Shaper:
        """Connected as ``me``: check the number, remember it, report readiness."""
        if self._settings.phone and me.phone != self._settings.phone:
            raise WhatsAppWebRefused(self._other_number(me.phone), what="connect")
        if self._reported and me.phone != self._known_phone:
            message = f"the device is now linked to +{me.phone}, but this host runs it as {self.sid}; restart the host"
            raise WhatsAppWebRefused(f"whatsapp account {self._settings.label}: {message}", what="connect")
        if self._me != me:
            await self._session.save_identity(me)
        self._me, self._known_phone, self._client = me, me.phone, self._life_client
        self._backoff.reset()
        self._log.info("whatsapp account %s: connected as +%s (%s)", self._settings.label, me.phone, self.sid)
        self._report()
        return Shaper(me, self._settings, fetcher=self.sid)

    def state(self, state: str) -> None:
        """The device's state, for ``status()``."""
        self._state = state

    # -- internals --------------------------------------------------------------------------------------------

    async def _lives_with_intake(self, intake: Intake) -> None:
        """The lives, beside the intake's lanes (the messages in hand outlive a life); an error comes out as
        itself, not as an exception group."""
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(intake.run)
                await self._lives()
        except BaseExceptionGroup as group:
            error: BaseException = group
            while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
                error = error.exceptions[0]
            raise error from None

    async def _lives(self) -> None:
        out = self._out or sys.stderr
        prompt = PairingPrompt(out, self._log, self._settings.label)
        assert self._intake is not None
        while True:
            client = self._life_client = self._factory(
                ClientOptions(self._session.database, self._settings.device_name, self._log, self._settings.proxy)
            )
            life = DeviceLife(
                self._host,
                self._settings,
                client=client,
                prompt=prompt,
                intake=self._intake,
                owner=self,
            )
            try:
                why = await life.run()
            except WhatsAppWebError as exc:
                self._client = self._life_client = None
                if exc.forget_session:
                    removed = await self._session.clear()
                    self._log.info("whatsapp account %s: removed %s", self._settings.label, [p.name for p in removed])
                if exc.fatal:
                    self._last_error, self._state = str(exc), "failed"
                    raise
                why = str(exc)
            finally:
                self._client = self._life_client = None
            await self._wait_to_restart(why)

    async def _wait_to_restart(self, why: str) -> None:
        delay = self._backoff.next_delay()
        self._restarts += 1
        self._last_error = why
        self._state = "waiting"
        self._log.warning("whatsapp account %s: %s; connecting again in %.1f s", self._settings.label, why, delay)
        await self._host.clock.sleep(delay)

    def _ready(self, task_status: TaskStatus[None], deregister: list[Callable[[], None]]) -> None:
        """Register the media fetcher and report readiness, once per ``run``."""
        if self._reported:
            return
        fetch = make_fetcher(lambda: self._client, self._settings.max_download_bytes)
        try:
            deregister.append(self._host.fetchers.register(self.sid, fetch))
        except ResourceError:
            raise WhatsAppWebRefused(
                f"whatsapp account {self._settings.label}: {self.sid} already runs in this host (is the same number "
                "configured twice?)",
                what="connect",
            ) from None
        self._reported = True
        task_status.started()

    def _other_number(self, phone: str) -> str:
        return (
            f"whatsapp account {self._settings.label}: the session in {self._session.directory} is linked to "
            f"+{phone}, but web.phone is +{self._settings.phone}; fix web.phone, or delete "
            f"{self._session.database.name} there to link +{self._settings.phone}"
        )

    def _not_connected(self) -> str:
        return f"whatsapp account {self._settings.label} is not connected ({self._state})"
