"""The contract between the host and a channel connection.

A channel plugin (entry-point group ``ishiki.channel``) is a ``Channel`` subclass whose ``create(ctx, account)``
makes one ``ChannelConnection`` per account configured in ``ishiki.yaml``. The host runs each connection in its own task
(``await tg.start(conn.run)``), restarts it with back-off when it crashes, and talks to it only through this
contract. A connection talks back only through its ``ChannelHost``.

Inbound: the connection shapes platform input into an ``IshikiEvent`` and awaits ``host.dispatch(event)``,
which returns once the event is durable in the owning runtime's fact log (or known to have no owner). A channel
that must confirm input to its platform (Telegram offsets) confirms only after that. The host makes the text
storable itself (a lone UTF-16 surrogate becomes U+FFFD; ``ishiki_host.channels.inbound``). When ``dispatch``
raises, the class of the error says whether retrying can help (``ishiki_host.errors.ChannelError``):
``EventRejected`` never, ``ChannelUnavailable`` later, anything else maybe; a channel retries the last two with
back-off, but a bounded number of times for the unknown kind, then sets the input aside (logged, counted) and
confirms past it, so one poison input never holds back everything after it.

Status: a connection may also have ``status() -> Mapping[str, Json]`` (optional, not part of the protocol):
the host puts what it returns in ``Host.status()["channels"][<label>]["connection"]`` (the Telegram channel
reports its offset and the updates it set aside). Two keys mean something to the host: ``setAside`` (an int,
how many inputs were set aside) and ``lastSetAside`` (``{"updateId": ..., "why": str}``); while ``setAside``
is above 0, ``/status`` in the connection's runtimes says so (``RuntimeView.channel_status``).

Failures: a connection may also have ``show_failure(channel_id, reason) -> None`` (optional, not part of the
protocol): the host calls it when a turn a person started in that channel failed, with the reason (the error's
class and message, on one line). It is for the operator, never the chat: the console prints a dim line; a
platform whose users are not the host's operator leaves it out, and its senders get only the profile's
``failure_reply`` (``ishiki_host.runtime.apology``).

Webhooks: a connection whose platform calls it (WhatsApp, Telegram's webhook mode) mounts routes on the host's
HTTP server with ``ChannelHost.http_mount()`` (``ishiki_host.ingress.types``): a prefix of its own, held while
the ``async with`` runs. Its handler answers a webhook with 200 only once ``dispatch`` returned, so input is
never confirmed before it is durable; the platform's redelivery of an unconfirmed one is a repeat (below).

Repeats: a message id names one message of its channel, and a channel never gives another message the same id
(not after a restart either). A platform that sends input again until it is confirmed (a crash between
"durable" and "confirmed") sends it with the same identity: ``kind``, ``sid``, ``channel_id``, ``message_id``
and ``extra["editedAt"]`` (set on the new version of an edited message). The host recognises such a repeat
among the recent input of the runtime (``ishiki_host.channels.repeats``), ignores it and still answers
``dispatch`` as durable, so the channel confirms it and nothing is answered twice.

Outbound: the host calls ``send`` with one chat message's text; the connection splits it to its own limit
(``ishiki_host.channels.split.split_message``), renders it for the platform and returns the ids it sent.

Drafts (streamed replies): a connection that can show a reply while the model writes it implements
``DraftingConnection`` (optional). For a step whose text would be the reply, the host calls ``show_draft``
with everything written so far, again whenever the previous call has returned (the newest text wins; texts in
between are skipped, so a connection throttles to its platform's rate simply by taking its time). Then exactly
one of: ``finish_draft`` with the final text (the reply, delivered once: it replaces ``send`` for that
message), or ``drop_draft`` when the draft will not become a message (the step called tools, the turn failed
or was aborted). Calls for one draft never overlap. When the draft ends, the host cancels a ``show_draft``
still in progress: a connection shields the platform call (so its own record of what it showed stays true)
and lets its pacing wait be cut, so the final text is never held back by a throttle.

Activity: a connection may also have ``show_activity(channel_id, activity: TurnActivity) -> None`` (optional,
synchronous, must not block): the host calls it as a turn a person started moves on (the model is called, a
tool runs, the reply is being written, the turn ended), so the console can show what is going on.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from ishiki_host.config.services import Plugin, PluginConfig
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    import logging
    import random
    from pathlib import Path

    from anyio.abc import TaskStatus

    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.shared import SharedObjects
    from ishiki_host.ingress.types import HttpMount
    from ishiki_host.resources import AssetFetchers, Blob

__all__ = [
    "Channel",
    "ChannelConnection",
    "ChannelHost",
    "Delivery",
    "Draft",
    "DraftEnd",
    "DraftingConnection",
    "Finding",
    "FindingLevel",
    "InboundAttachment",
    "OutboundFile",
    "SendResult",
    "TurnActivity",
    "TurnActivityState",
]

DraftEnd = Literal["tools", "failed", "aborted"]
"""Why a draft will not become a message: the step called tools, the turn failed, or it was aborted."""

TurnActivityState = Literal["thinking", "tool", "writing", "done"]
"""What a turn is doing: waiting for the model, running a tool, streaming its reply, or finished."""

FindingLevel = Literal["ok", "warning", "error"]
"""How a diagnosis came out: fine, works but worth fixing, or broken."""


@dataclass(frozen=True, slots=True)
class SendResult:
    """What one ``send`` delivered: the platform ids of the parts sent, in order.

    When a later part fails, ``error`` says why and ``ids`` holds the parts that did go out, so the model is
    told exactly what the person saw.
    """

    ids: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Every part went out."""
        return self.error is None


@runtime_checkable
class Delivery(Protocol):
    """The receipt of ``ChannelHost.dispatch``."""

    @property
    def routed(self) -> bool:
        """Whether a profile owns the event's channel (False: recorded nowhere, by design)."""
        ...

    @property
    def runtime_key(self) -> str | None:
        """The key of the runtime that took the event."""
        ...

    @property
    def entry_id(self) -> int | None:
        """The fact-log id of the durable entry (``None`` when not routed)."""
        ...

    async def settled(self) -> None:
        """Wait until the runtime has no running or queued turn (the console reads its next line after this)."""
        ...


@dataclass(frozen=True, slots=True)
class Draft:
    """A reply being written: ``id`` names it for the host's run (one per turn step), ``text`` is everything
    written so far (it only grows), ``reply_to`` the message it will answer, if any."""

    id: str
    text: str
    reply_to: str | None = None


@dataclass(frozen=True, slots=True)
class TurnActivity:
    """What a running turn is doing, for a connection with ``show_activity`` (the console's thinking line).

    ``started_at`` is the clock time the turn started (the elapsed time is ``clock.now() - started_at``);
    ``model`` names the model being called (the profile's model reference, or who answered the previous
    step); ``tool`` the tool running (state ``tool``); ``step`` the step number from 1.
    """

    state: TurnActivityState
    started_at: float
    model: str | None = None
    tool: str | None = None
    step: int = 0


@dataclass(frozen=True, slots=True)
class Finding:
    """One result of ``ishiki doctor``: ``what`` was checked (``telegram account main``), ``detail`` what was
    found (``bot @my_bot answers getMe in 180 ms``), and for a warning or an error ``fix``, what to do."""

    level: FindingLevel
    what: str
    detail: str
    fix: str | None = None


@runtime_checkable
class DraftingConnection(Protocol):
    """The optional part of a connection that shows replies as they are written (see the module docstring)."""

    async def show_draft(self, channel_id: str, draft: Draft) -> None:
        """Show ``draft.text`` as the reply being written (a draft bubble, an edited message, printed text)."""
        ...

    async def finish_draft(self, channel_id: str, draft: Draft, text: str) -> SendResult:
        """Deliver the final ``text`` of the reply ``draft`` showed, exactly once, and return its ids (the
        first part answers ``draft.reply_to``); what the draft showed is replaced or completed by it."""
        ...

    async def drop_draft(self, channel_id: str, draft: Draft, why: DraftEnd) -> None:
        """The draft will not become a message: take back or mark what it showed (``why`` says why)."""
        ...


@runtime_checkable
class ChannelHost(Protocol):
    """What the host offers a channel connection."""

    @property
    def clock(self) -> Clock:
        """The host's clock (back-off, timestamps)."""
        ...

    @property
    def rng(self) -> random.Random:
        """The connection's random source (back-off jitter): seeded from the host's seed and the account, so a
        seeded run replays; draw from it rather than from ``random`` itself."""
        ...

    @property
    def state_dir(self) -> Path:
        """A directory the connection owns for its own state (e.g. a confirmed update offset); every account
        has its own."""
        ...

    @property
    def fetchers(self) -> AssetFetchers:
        """Where the connection registers lazy fetchers for the attachments it captures."""
        ...

    @property
    def logger(self) -> logging.Logger:
        """The connection's logger."""
        ...

    @property
    def shared(self) -> SharedObjects:
        """The host's shared objects by ``ServiceKey``, the very ones ``HostPluginContext.services`` and
        ``RuntimeContext.services`` hold: a channel meets a host plugin of its own package here (the
        dashboard's web chat does)."""
        ...

    def command_names(self, channel_id: str) -> Sequence[str]:
        """The slash commands (without the ``/``) the runtime answering ``channel_id`` of this account knows,
        sorted; the host's own commands when no runtime runs there yet (the console completes them)."""
        ...

    def http_mount(self) -> HttpMount:
        """This account's mount on the host's HTTP server, ``/hooks/<platform>/<account>`` (for webhooks):
        ``async with host.http_mount() as mount: mount.route("/", handler)``. Entering it raises
        ``IngressError`` (fatal) when the host serves no HTTP (``http.listen`` of ``ishiki.yaml``)."""
        ...

    async def dispatch(self, event: IshikiEvent, attachments: Sequence[InboundAttachment] = ()) -> Delivery:
        """Route ``event`` to its runtime; returns once it is durable there (or known to have no owner).

        ``attachments`` are captured into the owning runtime's resource center first; the event recorded
        carries their ``asset://`` URLs (any attachments already on ``event`` are kept as they are).
        """
        ...


@dataclass(frozen=True, slots=True)
class InboundAttachment:
    """Media that came with an inbound message, to be captured as an ``asset://`` resource.

    Either ``data`` holds the bytes, or ``fetcher`` names a fetcher the channel registered in
    ``ChannelHost.fetchers`` and ``locator`` says what to fetch (no credentials in it): the bytes are then
    downloaded on first read only.
    """

    media_type: str
    name: str | None = None
    size: int | None = None
    data: bytes | None = None
    fetcher: str | None = None
    locator: Mapping[str, Json] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OutboundFile:
    """A file to send, already read from a resource URL."""

    blob: Blob
    caption: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class ChannelConnection(Protocol):
    """One account's live connection to a platform."""

    @property
    def platform(self) -> str:
        """The platform name, e.g. ``telegram``; with ``self_id`` it forms the sid ``platform:selfId``."""
        ...

    @property
    def self_id(self) -> str:
        """This account's id on the platform; known once ``run`` has reported readiness."""
        ...

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        """Connect, report readiness with ``task_status.started()``, then receive until cancelled.

        Raise ``ChannelError`` for a problem restarting cannot fix (a wrong token): the host reports it once
        and keeps serving the other channels. A ``ChannelError`` with ``fatal = False`` (the platform cannot
        be reached), or any other exception, makes the host restart the connection with back-off.
        """
        ...

    async def send(self, channel_id: str, text: str, *, reply_to: str | None = None) -> SendResult:
        """Send one chat message (split to the platform's limit); the first part replies to ``reply_to``."""
        ...

    async def send_typing(self, channel_id: str) -> None:
        """Show a typing indicator for a few seconds (the host repeats it while a turn runs)."""
        ...

    async def send_files(self, channel_id: str, files: Sequence[OutboundFile]) -> SendResult:
        """Send files (photos, documents) read from resource URLs."""
        ...


class Channel(Plugin):
    """Base class of channels (group ``ishiki.channel``): a chat platform's input and output.

    The entry-point name is the platform (``telegram`` claims ``telegram:<selfId>``); ``config_schema`` is the
    schema of one account entry of ``channels.<platform>.accounts`` in ``ishiki.yaml``.
    """

    @abstractmethod
    def create(self, ctx: ChannelHost, account: PluginConfig) -> ChannelConnection:
        """Make the connection of one account.

        ``ctx`` is what the host offers this connection (event sink, resource capture, clock, state directory);
        ``account`` is the validated account entry with defaults.
        """

    async def diagnose(self, account: PluginConfig, *, seconds: float, state_dir: Path) -> Sequence[Finding]:
        """Check one account for ``ishiki doctor`` without running it: the token is accepted (Telegram's
        ``getMe``), the platform answers, a linked device's session is on disk. Each network call is cut at
        ``seconds``; ``state_dir`` is the account's ``ChannelHost.state_dir`` (it may not exist yet; read it,
        never write). A finding that is not ``ok`` says how to fix it. The default checks nothing."""
        return ()

    def exclusive(self, account: PluginConfig) -> bool:
        """Whether the account is served by one connection at a time across a fleet of hosts on one PostgreSQL
        ``store`` (long polling, a linked device, a socket the platform keeps one of): then only the host that
        holds the account's lease runs its connection, and the others stand by to take it over. ``False`` for
        an account whose events reach any host (a webhook behind a load balancer), which every host runs.
        The default is ``True``, which is always safe. Not asked on one machine."""
        return True
