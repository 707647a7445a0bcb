"""The core of the ``willingness`` wakeup engine: a per-channel score and the decision to answer.

Each channel has a score ``s`` in ``[0, max_willingness]`` and the time it was last updated. With ``M`` =
``max_willingness``, ``H`` = ``decay_half_life_seconds``, ``T`` = ``probability_threshold``, ``A`` =
``probability_amplifier``:

- **decay**: between two events ``dt`` seconds apart, ``s ← s · 2^(−dt / H)`` (halves every half-life; a clock
  that went back decays nothing);
- **gain** of a message: ``g = base + at_mention·[mentions the bot] + is_quote·[quotes the bot] +
  is_direct_message·[direct chat]``, times ``keyword_multiplier`` when its text contains any of ``keywords``
  (case-insensitive);
- **saturation**: ``s ← min(M, s + g · (1 − s / M))``: the first message adds its whole gain, later ones a share
  that shrinks as the score nears its maximum. With the defaults a mention from zero gives ``min(100, 112)`` =
  100, far above the threshold;
- **probability**: ``p = min(1, max(0, (s − T) · A))``: zero at or below the threshold, then growing linearly;
  with the defaults it reaches 1 at ``s = 80``;
- **decision**: trigger when ``p ≥ 1``, or when ``0 < p < 1`` and one draw of the random source is below ``p``
  (no draw is made otherwise, so replays with the same seed see the same draws);
- **reply cost**: when the bot has answered a channel, ``s ← max(0, s − reply_cost)`` for that channel only.

``observe`` adds a message without deciding and ``roll`` decides without adding one: the engine scores a message
that joined a running turn at once, and rolls for it only if the turn ended without seeing it.

Times are wall-clock seconds (``Clock.now()``), so persisted scores (``to_dict``/``from_dict``) decay across
a restart as they would have.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ishiki_host.engines._options import resolve_options
from ishiki_host.engines.wakeup._features import MessageFeatures, RandomSource
from ishiki_host.errors import ConfigError, EngineStateInvalid

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "WILLINGNESS_CONFIG_SCHEMA",
    "Decision",
    "WillingnessModel",
    "WillingnessOptions",
]

_STATE_VERSION = 1


def _number(default: float, description: str, *, positive: bool = False) -> dict[str, Any]:
    bound = {"exclusiveMinimum": 0} if positive else {"minimum": 0}
    return {"type": "number", **bound, "default": default, "description": description}


WILLINGNESS_CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "wakeup.willingness",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "base": _number(12, "Gain of every committed message."),
        "at_mention": _number(100, "Extra gain when the message mentions the bot."),
        "is_quote": _number(15, "Extra gain when the message quotes or replies to the bot."),
        "is_direct_message": _number(40, "Extra gain for a message in a direct (private) chat."),
        "keywords": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": [],
            "description": "Words that make a message more interesting (case-insensitive, anywhere in the text).",
        },
        "keyword_multiplier": _number(1.2, "Gain multiplier for a message that contains any keyword."),
        "max_willingness": _number(100, "Highest score; gains shrink as the score nears it.", positive=True),
        "decay_half_life_seconds": _number(600, "Seconds in which a score halves.", positive=True),
        "probability_threshold": _number(55, "Score at or below which the bot never answers."),
        "probability_amplifier": _number(0.04, "Probability added per point of score above the threshold."),
        "reply_cost": _number(35, "Score taken from a channel when the bot answered it."),
        "seed": {
            "type": ["integer", "null"],
            "default": None,
            "description": "Seed of the random source, to replay decisions; null seeds from the system.",
        },
    },
}


@dataclass(frozen=True, slots=True)
class WillingnessOptions:
    """The validated options (``from_config`` fills defaults from ``WILLINGNESS_CONFIG_SCHEMA``)."""

    base: float
    at_mention: float
    is_quote: float
    is_direct_message: float
    keywords: tuple[str, ...]
    keyword_multiplier: float
    max_willingness: float
    decay_half_life_seconds: float
    probability_threshold: float
    probability_amplifier: float
    reply_cost: float
    seed: int | None

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | None = None, *, where: str = "wakeup.willingness"
    ) -> WillingnessOptions:
        """Validate a config mapping (snake_case keys); raises ``ConfigError`` naming the key and value."""
        o = resolve_options(WILLINGNESS_CONFIG_SCHEMA, config, where=where)
        if o["probability_threshold"] >= o["max_willingness"]:
            top = o["max_willingness"]
            message = f"{o['probability_threshold']} must be below max_willingness ({top}), or the bot never answers"
            raise ConfigError(message, path=f"{where}.probability_threshold")
        return cls(
            o["base"], o["at_mention"], o["is_quote"], o["is_direct_message"], tuple(o["keywords"]),
            o["keyword_multiplier"], o["max_willingness"], o["decay_half_life_seconds"], o["probability_threshold"],
            o["probability_amplifier"], o["reply_cost"], o["seed"],
        )  # fmt: skip

    def make_rng(self) -> random.Random:
        """The random source the options ask for: seeded with ``seed``, or from the system when it is null."""
        return random.Random(self.seed)


class Decision(NamedTuple):
    """One decision: whether to start a turn, the channel's score after the message, and the probability used."""

    trigger: bool
    score: float
    probability: float


class WillingnessModel:
    """Scores of every channel of one runtime, and the decisions made from them (see the module docstring)."""

    __slots__ = ("_channels", "_half_life", "_keywords", "_top", "options")

    def __init__(self, options: WillingnessOptions):
        self.options = options
        self._keywords = tuple(word.casefold() for word in options.keywords)
        self._channels: dict[str, list[float]] = {}
        self._top = float(options.max_willingness)
        self._half_life = float(options.decay_half_life_seconds)

    def __len__(self) -> int:
        return len(self._channels)

    def channels(self) -> Iterator[str]:
        """The channels that have a score."""
        return iter(self._channels)

    def score(self, channel: str, now: float) -> float:
        """The channel's score at ``now`` (decayed; nothing changes)."""
        entry = self._channels.get(channel)
        return 0.0 if entry is None else self._decayed(entry, now)

    def gain(self, features: MessageFeatures) -> float:
        """What one message adds before saturation."""
        o = self.options
        gain = o.base
        gain += o.at_mention if features.mentions_self else 0.0
        gain += o.is_quote if features.quotes_self else 0.0
        gain += o.is_direct_message if features.is_direct else 0.0
        if self._keywords:
            text = features.text.casefold()
            for word in self._keywords:
                if word in text:
                    return gain * o.keyword_multiplier
        return gain

    def probability(self, score: float) -> float:
        """The chance of answering at ``score``."""
        o = self.options
        return min(1.0, max(0.0, (score - o.probability_threshold) * o.probability_amplifier))

    def decide(self, channel: str, features: MessageFeatures, now: float, rng: RandomSource) -> Decision:
        """Add a committed message to the channel's score and decide whether to start a turn."""
        # Written out rather than through score()/probability(): this runs for every message of every channel.
        top, entry = self._top, self._channels.get(channel)
        if entry is None:
            score = 0.0
        else:
            elapsed = now - entry[1]
            score = entry[0] * math.pow(2.0, -elapsed / self._half_life) if elapsed > 0.0 else entry[0]
        score = min(top, score + self.gain(features) * (1.0 - score / top))
        self._store(channel, entry, score, now)
        return self._roll(score, rng)

    def observe(self, channel: str, features: MessageFeatures, now: float) -> float:
        """Add a committed message to the channel's score without deciding; returns the new score.

        For a message that joined a running turn: the turn sees it, yet it still warms the channel.
        """
        entry = self._channels.get(channel)
        score = 0.0 if entry is None else self._decayed(entry, now)
        score = min(self._top, score + self.gain(features) * (1.0 - score / self._top))
        self._store(channel, entry, score, now)
        return score

    def roll(self, channel: str, now: float, rng: RandomSource) -> Decision:
        """Decide on the channel's current score without adding a message (its messages are already scored)."""
        return self._roll(self.score(channel, now), rng)

    def _roll(self, score: float, rng: RandomSource) -> Decision:
        o = self.options
        chance = (score - o.probability_threshold) * o.probability_amplifier
        if chance <= 0.0:
            return Decision(False, score, 0.0)
        if chance >= 1.0:
            return Decision(True, score, 1.0)
        return Decision(rng.random() < chance, score, chance)

    def on_reply(self, channel: str, now: float) -> float:
        """The bot answered ``channel``: take the reply cost from it (only it); returns its new score."""
        entry = self._channels.get(channel)
        score = 0.0 if entry is None else self._decayed(entry, now)
        score = max(0.0, score - self.options.reply_cost)
        self._store(channel, entry, score, now)
        return score

    def prune(self, now: float, below: float = 0.01) -> int:
        """Forget channels whose score decayed under ``below`` (they behave as unseen); how many were dropped."""
        stale = [channel for channel, entry in self._channels.items() if self._decayed(entry, now) < below]
        for channel in stale:
            del self._channels[channel]
        return len(stale)

    def _decayed(self, entry: list[float], now: float) -> float:
        elapsed = now - entry[1]
        if elapsed <= 0.0:
            return entry[0]
        return entry[0] * math.pow(2.0, -elapsed / self._half_life)

    def _store(self, channel: str, entry: list[float] | None, score: float, now: float) -> None:
        if entry is None:
            self._channels[channel] = [score, now]
        else:
            entry[0], entry[1] = score, max(now, entry[1])

    def to_dict(self) -> dict[str, Any]:
        """The scores as JSON-ready data: ``{"version": 1, "channels": {id: {"score", "updatedAt"}}}``."""
        channels = {ch: {"score": entry[0], "updatedAt": entry[1]} for ch, entry in self._channels.items()}
        return {"version": _STATE_VERSION, "channels": channels}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], options: WillingnessOptions) -> WillingnessModel:
        """Rebuild from ``to_dict`` data; raises ``EngineStateInvalid`` naming what is wrong."""
        if not isinstance(data, Mapping) or data.get("version") != _STATE_VERSION:
            raise EngineStateInvalid(f"willingness state: expected an object with version {_STATE_VERSION}")
        channels = data.get("channels")
        if not isinstance(channels, Mapping):
            raise EngineStateInvalid('willingness state: "channels" must be an object')
        model = cls(options)
        for channel, entry in channels.items():
            model._channels[str(channel)] = _entry_from(channel, entry, options.max_willingness)
        return model


def _entry_from(channel: Any, entry: Any, top: float) -> list[float]:
    try:
        score, updated = float(entry["score"]), float(entry["updatedAt"])
    except (TypeError, KeyError, ValueError):
        raise EngineStateInvalid(f"willingness state: channel {channel!r} needs numbers score and updatedAt") from None
    if not score >= 0.0 or updated != updated:
        raise EngineStateInvalid(f"willingness state: channel {channel!r} has score {score}, below 0 or not a number")
    # A lowered max_willingness since the state was saved caps old scores rather than rejecting them.
    return [min(score, top), updated]
