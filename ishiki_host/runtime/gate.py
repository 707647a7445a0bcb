"""The command layer of one runtime: who is served, slash commands, and the host's own one-line notices.

``CommandGate`` is the runtime's first inbound filter (see ``AgentRuntime.add_inbound_filter``). For each event,
before anything is written to the fact log:

0. The channel's switch (``/channels``, ``plugin_settings`` kind ``channel``, named by the account
   ``platform:selfId``). While the account is switched off for the profile, the profile is not there: every
   event from it is consumed unanswered and unstored (no turn, no refusal notice, nothing in the fact log),
   except ``/channels`` from a sender allowed to use it (``trusted``), which is answered so the channel can be
   switched back on where it was switched off.
1. The sender's admission by the profile's ``TrustPolicy`` (``ishiki_host.runtime.trust``). A ``refused``
   sender (unlisted, with ``unlisted: refuse``) gets ``REFUSAL_TEXT`` once (``Refusals``) and the event is
   consumed: nothing reaches the log or the model. With ``unlisted: pairing`` (``ishiki_host.runtime.pairing``)
   the approvals of the memory database count first; a sender still refused gets their pairing code in a
   direct chat (and nothing else), the refusal in a group; an approved sender is welcomed on their first
   message after the approval, which then goes on.
2. A message whose first word is a command of the runtime's ``CommandTable`` (the host's own commands, given
   in ``SharedParts.commands``, then each extension's ``ishiki_commands`` in ``extends`` order) is answered
   through the channel it came from, gated by the sender's level, and consumed. ``/cmd@name`` in a group chat
   is ours only when the channel says the message addresses the bot (``mentions_self``). A command of an
   extension switched off with ``/extensions`` is answered with a line saying so. A slash word that is no
   command but one edit away from a command the sender may use (``/stauts``) is answered with a hint and
   consumed, unless the profile sets ``suggest_commands: false``; it is addressed the same way.
3. Anything else is ingested as usual, with ``data.trust`` set to the sender's level.

Replies go out as the host's notices (``Notices``): straight through the channel connection (noted for echo
dropping), not through the persona's outbox. They are the host speaking, and the fact log does not record them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_host.config.services import EXTENSION_GROUP, service_name
from ishiki_host.config.validation import did_you_mean
from ishiki_host.core.tools import trust_allows
from ishiki_host.plugins.commands import CommandTable
from ishiki_host.runtime.command_runner import run_command
from ishiki_host.runtime.pairing import Pairing
from ishiki_host.runtime.switches import channel_enabled, enabled_extensions
from ishiki_host.runtime.tracker import event_sender
from ishiki_host.runtime.trust import REFUSAL_TEXT, Refusals

if TYPE_CHECKING:
    from ishiki_host.channels.events import IshikiEvent
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.plugins.commands import Command, HostView
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.runtime.extensions import MountedExtensions
    from ishiki_host.runtime.notices import Notices
    from ishiki_host.runtime.trust import Admission, TrustPolicy

__all__ = ["CommandGate", "Invocation"]

logger = logging.getLogger(__name__)

_EXTENSION_PREFIX = EXTENSION_GROUP + "."
_CHANNELS_COMMAND = "channels"  # the host's command answered on a channel switched off, to switch it on again


class CommandGate:
    """The command layer of one runtime (see the module docstring)."""

    def __init__(
        self,
        runtime: RuntimeContext,
        policy: TrustPolicy,
        extensions: MountedExtensions,
        view: HostView,
        notices: Notices,
        host_commands: Sequence[Command],
    ):
        self._rt = runtime
        self.policy = policy
        self._extensions = extensions
        self._view = view
        self._notices = notices
        self._host_commands = host_commands
        self.refusals = Refusals()
        self.pairing = Pairing(runtime, policy)
        self.table = CommandTable()

    async def build(self) -> None:
        """Register the host's commands, then each extension's (once the extensions are attached)."""
        self.table.register_all(self._host_commands, source="host")
        if not self._extensions.implements("ishiki_commands"):
            return
        for name, commands in await self._extensions.commands():
            self.table.register_all(commands, source=service_name(EXTENSION_GROUP, name))

    async def __call__(self, event: IshikiEvent) -> bool:
        """The inbound filter: ``True`` when the event was answered here and must not be ingested."""
        sender = event_sender(event)
        paired = await self.pairing.refresh(sender)
        admission = self.policy.admit(sender)
        if not await channel_enabled(self._rt.services.memory, self._rt.profile.id, event.sid):
            await self._while_off(sender, admission, event)
            return True
        if admission == "refused":
            await self._refuse(sender, event)
            return True
        if event.kind != "message.created":
            return False
        if paired is not None:
            welcome = await self.pairing.welcome(paired)
            if welcome is not None:
                logger.info("%s: %s was approved by pairing (%s); welcomed", self._rt.key, sender, paired.level)
                await self._notices.reply(event, welcome)
        if not event.content.lstrip().startswith("/"):
            return False
        return await self._command(sender or "unknown", admission, event)

    async def _while_off(self, sender: str | None, admission: Admission, event: IshikiEvent) -> None:
        """A switched-off channel: answer ``/channels`` of a sender it allows, drop the rest unanswered."""
        found = self.table.match(event.content) if event.kind == "message.created" else None
        if (
            found is not None
            and admission != "refused"
            and found.command.name == _CHANNELS_COMMAND
            and self.table.source(_CHANNELS_COMMAND) == "host"
            and trust_allows(admission, found.command.needs(self._rt.profile.trust))  # below: silence, no refusal
        ):
            await self._command(sender or "unknown", admission, event)
            return
        logger.debug("%s: %s from %s dropped: channel %s is switched off", self._rt.key, event.kind, sender, event.sid)

    async def _refuse(self, sender: str | None, event: IshikiEvent) -> None:
        if event.kind == "message.created" and self.pairing.on and sender is not None and event.is_direct:
            code = await self.pairing.code_text(sender, event)
            if code is not None:
                await self._notices.reply(event, code)
            return
        key = sender or f"{event.sid} {event.channel_id}"
        if event.kind == "message.created" and self.refusals.first_time(key):
            logger.info("%s: refused %s (not listed in the profile's trust section)", self._rt.key, key)
            await self._notices.reply(event, REFUSAL_TEXT)

    async def _command(self, sender: str, trust: TrustLevel, event: IshikiEvent) -> bool:
        text = event.content
        if _addressed(text) and not (event.mentions_self or event.is_direct):
            return False  # addressed to a bot, but not (the channel says) to us: the model may see it as text
        found = self.table.match(text)
        if found is None:
            return await self._suggest(trust, event)  # a slash word that is no command of ours goes to the model
        switched_off = await self._switched_off(found.command.name)
        if switched_off is not None:
            await self._notices.reply(event, switched_off)
            return True
        channel = f"{event.sid} {event.channel_id}"
        context = Invocation(
            sender, trust, channel, self._rt, self.table, self._view, lambda t: self._notices.reply(event, t)
        )
        result = await run_command(self.table, context, text)
        if result is not None:
            logger.info("%s: /%s from %s: %s", self._rt.key, result.command.name, sender, result.status)
        return result is not None

    async def _suggest(self, trust: TrustLevel, event: IshikiEvent) -> bool:
        """Answer a slash word one edit away from a command ``trust`` may use with a hint (then ``True``)."""
        if not self._rt.profile.suggest_commands:
            return False
        levels = self._rt.profile.trust
        near = self.table.near(event.content, lambda command: trust_allows(trust, command.needs(levels)))
        if near is None:
            return False
        typed, names = near
        hint = did_you_mean(f"/{typed}", [f"/{name}" for name in names])
        if not hint:
            return False  # one edit, but of a name so short that the edit is most of it: not a likely typo
        await self._notices.reply(event, f"Unknown command /{typed}{hint}")
        logger.info("%s: /%s is no command; suggested %s", self._rt.key, typed, hint.removeprefix("; "))
        return True

    async def _switched_off(self, command: str) -> str | None:
        source = self.table.source(command) or ""
        if not source.startswith(_EXTENSION_PREFIX):
            return None
        name = source.removeprefix(_EXTENSION_PREFIX)
        if await enabled_extensions(self._rt.services.memory, self._rt.profile.id, [name]):
            return None
        return f"/{command} belongs to the {name} extension, which is switched off here (/extensions enable {name})."


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
    host: HostView
    send: Callable[[str], Awaitable[object]]

    async def reply(self, text: str) -> None:
        """Send ``text`` through ``send``."""
        await self.send(text)
