"""The command layer of one runtime: who is served, slash commands, and the host's own one-line notices.

``CommandGate`` is the runtime's first inbound filter (``AgentRuntime.add_inbound_filter``). For each event,
before anything is written to the fact log:

1. The sender's admission by the profile's ``TrustPolicy`` (``ishiki_host.runtime.trust``). A ``refused``
   sender (unlisted, with ``allow_unlisted: false``) gets ``REFUSAL_TEXT`` once (``Refusals``) and the event
   is consumed: nothing reaches the log or the model.
2. A message whose first word is a command of the runtime's ``CommandTable`` (the host's own commands, given
   in ``SharedParts.commands``, then each extension's ``ishiki_commands`` in ``extends`` order) is answered
   through the channel it came from, gated by the sender's level, and consumed. ``/cmd@name`` in a group chat
   is ours only when the channel says the message addresses the bot (``mentions_self``). A command of an
   extension switched off with ``/extensions`` is answered with a line saying so.
3. Anything else is ingested as usual, with ``data.trust`` set to the sender's level.

Replies and notices go straight through the channel connection (noted for echo dropping), not through the
persona's outbox: they are the host speaking, and the fact log does not record them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_host.addresses.ids import Target
from ishiki_host.config.services import EXTENSION_GROUP, service_name
from ishiki_host.plugins.commands import CommandTable
from ishiki_host.runtime.command_runner import run_command
from ishiki_host.runtime.hostview import RuntimeHostView
from ishiki_host.runtime.switches import enabled_extensions
from ishiki_host.runtime.tracker import event_sender
from ishiki_host.runtime.trust import REFUSAL_TEXT, Refusals

if TYPE_CHECKING:
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.plugins.commands import HostView
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.runtime.runtime import AgentRuntime
    from ishiki_host.runtime.trust import TrustPolicy
    from ishiki_host.sessions.manager import SessionManager

__all__ = ["CommandGate"]

logger = logging.getLogger(__name__)

_EXTENSION_PREFIX = EXTENSION_GROUP + "."


class CommandGate:
    """The command layer of one runtime (see the module docstring)."""

    def __init__(self, runtime: AgentRuntime, policy: TrustPolicy):
        self._rt = runtime
        self.policy = policy
        self.refusals = Refusals()
        self.table = CommandTable()
        self.view = RuntimeHostView(runtime)

    async def build(self) -> None:
        """Register the built-ins, then each extension's commands (once the extensions are attached)."""
        self.table.register_all(self._rt.host.commands, source="host")
        if not self._rt.extensions.implements("ishiki_commands"):
            return
        for name, commands in await self._rt.extensions.commands():
            self.table.register_all(commands, source=service_name(EXTENSION_GROUP, name))

    async def __call__(self, runtime: AgentRuntime, event: IshikiEvent) -> bool:
        """The inbound filter: ``True`` when the event was answered here and must not be ingested."""
        sender = event_sender(event)
        admission = self.policy.admit(sender)
        if admission == "refused":
            await self._refuse(sender, event)
            return True
        if event.kind != "message.created" or not event.content.lstrip().startswith("/"):
            return False
        return await self._command(sender or "unknown", admission, event)

    async def _refuse(self, sender: str | None, event: IshikiEvent) -> None:
        key = sender or f"{event.sid} {event.channel_id}"
        if event.kind == "message.created" and self.refusals.first_time(key):
            logger.info("%s: refused %s (not listed in the profile's trust section)", self._rt.key, key)
            await self.reply(event, REFUSAL_TEXT)

    async def _command(self, sender: str, trust: TrustLevel, event: IshikiEvent) -> bool:
        text = event.content
        found = self.table.match(text)
        if found is None or (_addressed(text) and not (event.mentions_self or event.is_direct)):
            return False  # a slash word that is no command of ours goes to the model as text
        switched_off = await self._switched_off(found.command.name)
        if switched_off is not None:
            await self.reply(event, switched_off)
            return True
        channel = f"{event.sid} {event.channel_id}"
        context = Invocation(
            sender, trust, channel, self._rt, self.table, self._rt.sessions, self.view, lambda t: self.reply(event, t)
        )
        result = await run_command(self.table, context, text)
        if result is not None:
            logger.info("%s: /%s from %s: %s", self._rt.key, result.command.name, sender, result.status)
        return result is not None

    async def _switched_off(self, command: str) -> str | None:
        source = self.table.source(command) or ""
        if not source.startswith(_EXTENSION_PREFIX):
            return None
        name = source.removeprefix(_EXTENSION_PREFIX)
        store = self._rt.services.get("memory")
        if await enabled_extensions(store, self._rt.profile.id, [name]):
            return None
        return f"/{command} belongs to the {name} extension, which is switched off here (/extensions enable {name})."

    async def reply(self, event: IshikiEvent, text: str) -> None:
        """Answer ``event`` in its channel (replying to it in group chats)."""
        reply_to = None if event.is_direct else event.message_id
        await self.notice(text, Target(event.sid, event.channel_id), reply_to=reply_to)

    async def notice(self, text: str, target: Target | None = None, *, reply_to: str | None = None) -> bool:
        """Send one line from the host to ``target`` (default: where the persona replies); whether it went out."""
        target = target or self._rt.default_target()
        if target is None:
            logger.warning("%s: nowhere to send the notice %r", self._rt.key, text)
            return False
        outlets = self._rt.host.outlets
        connection = outlets.connection(target.sid)
        if connection is None:
            logger.warning("%s: channel %s is not connected; notice not sent: %r", self._rt.key, target.sid, text)
            return False
        try:
            result = await connection.send(target.channel_id, text, reply_to=reply_to)
        except Exception:
            logger.warning("%s: sending a notice to %s failed", self._rt.key, target, exc_info=True)
            return False
        if result.ids:
            outlets.note_sent(target.sid, target.channel_id, result.ids)
        return result.error is None


def _addressed(text: str) -> bool:
    """Whether the command word names a bot (``/clear@MyBot``)."""
    return "@" in text.split(maxsplit=1)[0]


@dataclass(frozen=True, slots=True)
class Invocation:
    """A plain ``CommandContext``: the runtime fills it in; ``send`` delivers a reply to the channel."""

    sender: str
    trust: TrustLevel
    channel: str
    runtime: RuntimeContext
    table: CommandTable
    sessions: SessionManager
    host: HostView
    send: Callable[[str], Awaitable[object]]

    async def reply(self, text: str) -> None:
        """Send ``text`` through ``send``."""
        await self.send(text)
