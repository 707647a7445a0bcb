"""Which messages of a linked device go ahead of those still being dispatched: the slash commands the host
answers at once.

A message that arrives while a turn of its runtime runs joins the turn, and ``host.dispatch`` returns (the
message is durable) only when the turn's current step ends, which may take many seconds. A command is
answered by the runtime's command layer before anything is written, so its dispatch returns at once, and
``/stop`` must be: it is what ends that step. A message (an edit too) is such a command (``is_command``) when
its first word is ``/name`` (or ``/name@...``) and ``name``, in any case, is a command of the runtime answering
that chat (``ChannelHost.command_names``), as the command layer tells one. A slash word that is no command
(``/etc/hosts``, ``/stauts``) is a plain message and keeps its place.

Overtaking: a command goes ahead of the plain messages of its chat still being dispatched. It is answered
first and acts on the runtime as it is then: ``/stop`` ends the turn the earlier message waits on (that
message is appended when the turn ends, and is not lost); ``/status`` shows the session without it. Commands
are not ordered among themselves: at most ``AHEAD`` are dispatched at once, and one more waits for a place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host import IshikiEvent

__all__ = ["AHEAD", "is_command"]

AHEAD = 4
"""How many commands of one device may be dispatched at once, ahead of the plain messages."""


def is_command(event: IshikiEvent, command_names: Callable[[str], Sequence[str]]) -> bool:
    """Whether ``event`` is a command the host answers at once (see the module docstring);
    ``command_names(channel_id)`` names the commands of the runtime answering a chat (without the ``/``)."""
    if event.kind != "message.created":
        return False
    words = event.content.split(maxsplit=1)
    if not words or not words[0].startswith("/"):
        return False
    return words[0][1:].partition("@")[0].lower() in command_names(event.channel_id)
