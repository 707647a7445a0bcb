"""What a wakeup model needs to know about one committed message, and about randomness."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["MessageFeatures", "RandomSource"]


@dataclass(frozen=True, slots=True)
class MessageFeatures:
    """The facts of one incoming message that wakeup rules look at.

    ``mentions_self``: the message mentions the bot (``@bot``), or came in a group that needs no mention;
    ``quotes_self``: it quotes or replies to one of the bot's messages; ``is_direct``: it arrived in a direct
    (private) chat; ``text``: its plain text.
    """

    mentions_self: bool = False
    quotes_self: bool = False
    is_direct: bool = False
    text: str = ""


class RandomSource(Protocol):
    """A source of uniform floats in [0, 1); ``random.Random`` is one. Seed it to replay decisions."""

    def random(self) -> float:
        """The next float in [0, 1)."""
        ...
