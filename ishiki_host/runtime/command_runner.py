"""Running a command message: match, trust gate, handler, reply. Never raises for what a sender typed.

The runtime calls ``run_command(table, ctx, text)`` for every inbound message from an admitted sender before
anything is written to the fact log. ``None`` means the text is no command: ingest it as usual. Otherwise the
command has been answered (``ctx.reply``) and the message must not reach the model or the log.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ishiki_host.core.tools import trust_allows
from ishiki_host.errors import CommandError, IshikiError

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.plugins.commands import Command, CommandContext, CommandTable

__all__ = ["CommandResult", "refusal", "run_command"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How a command message was answered: ``ok``, ``refused`` (trust) or ``failed`` (the handler raised)."""

    command: Command
    status: Literal["ok", "refused", "failed"]
    reply: str | None


def refusal(needed: TrustLevel, typed: str) -> str:
    """The short reply to a sender below the level a command needs: who may use it."""
    who = "my owner" if needed == "owner" else "people I trust"
    return f"Sorry, /{typed} is only for {who}."


async def run_command(table: CommandTable, ctx: CommandContext, text: str) -> CommandResult | None:
    """Answer ``text`` if it is a command of ``table``; ``None`` if it is not one."""
    found = table.match(text)
    if found is None:
        return None
    command = found.command
    needed = command.needs(ctx.runtime.profile.trust)
    if not trust_allows(ctx.trust, needed):
        refused = refusal(needed, found.typed)
        await ctx.reply(refused)
        return CommandResult(command, "refused", refused)
    status: Literal["ok", "failed"] = "ok"
    reply: str | None
    try:
        reply = await command.handler(ctx, found.args)
    except CommandError as exc:
        reply, status = f"{exc}\nUsage: {command.synopsis}", "failed"
    except IshikiError as exc:
        logger.warning("/%s failed for %s: %s", command.name, ctx.sender, exc)
        reply, status = f"/{found.typed} failed: {exc}", "failed"
    except Exception:
        logger.exception("/%s failed for %s", command.name, ctx.sender)
        reply, status = f"/{found.typed} failed unexpectedly; the host log has the details.", "failed"
    if reply:
        await ctx.reply(reply)
    return CommandResult(command, status, reply)
