"""Which updates go ahead of the messages still being dispatched: the slash commands the host answers at once.

A message that arrives while a turn of its runtime runs joins the turn, and ``host.dispatch`` returns (the
message is durable) only when the turn's current step ends, which may take many seconds. A command is
answered by the runtime's command layer before anything is written, so its dispatch returns at once, and
``/stop`` must be: it is what ends that step. An update is such a command (``is_command``) when its one event
is a message whose first word is ``/name`` or ``/name@bot`` and ``name`` (any case) is a command of the
runtime answering that chat (``ChannelHost.command_names``), as the command layer tells one. ``/name@bot``
counts only when the shaper found the bot addressed (its own ``@username``) or the chat is private:
addressed to another bot it is text for the model, as the command layer also has it.

A slash word that is no command (``/etc/hosts``, a typo such as ``/stauts``) is a plain message and keeps its
place among the others.

Overtaking: a command goes ahead of the plain messages of its chat still being dispatched. It is answered
first and acts on the runtime as it is then: ``/stop`` ends the turn the earlier message waits on (that
message is appended when the turn ends, and is not lost); ``/status`` shows the session without it. That is
the point: a command is about now, as one typed at the console is. Commands are not ordered among
themselves: at most ``AHEAD`` are dispatched at once, and one more waits for a free place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_channel_telegram.shaping import Shaped

__all__ = ["AHEAD", "is_command"]

AHEAD = 4
"""How many commands of one connection may be dispatched at once, ahead of the plain messages."""


def is_command(shaped: Sequence[Shaped], command_names: Callable[[str], Sequence[str]]) -> bool:
    """Whether the events of one update are a command the host answers at once (see the module docstring);
    ``command_names(channel_id)`` names the commands of the runtime answering a chat (without the ``/``)."""
    if len(shaped) != 1 or shaped[0].event.kind != "message.created":
        return False
    event = shaped[0].event
    words = event.content.split(maxsplit=1)
    if not words or not words[0].startswith("/"):
        return False
    name, at, _ = words[0][1:].partition("@")
    if at and not (event.mentions_self or event.is_direct):
        return False  # ``/cmd@OtherBot``: the command layer leaves it to the model, in its place
    return name.lower() in command_names(event.channel_id)
