"""``ConceptEmbedder``: a deterministic embeddings model for tests and benchmarks (no network, no weights).

A real embeddings model places "my puppy" near "her dog" although they share no word. This one does the same
for the words of a small built-in thesaurus (``CONCEPTS``: each group of words is one concept) and treats any
other word as a concept of its own: the words of a text are folded (lower case, a plural ``s``, ``ing``, ``ed``
cut), common words dropped, each concept hashed to a few signed dimensions, and the sum scaled to length 1.
So texts that say the same thing in other words of the thesaurus get a high cosine similarity, and the same
text always gets the same vector, on every machine.

It embeds behind ``FakeOpenAIServer``'s ``POST /v1/embeddings``, and in-process as an ``Embedder`` (the
memory layer's protocol, ``ishiki_host.gateway.embeddings``) named ``concept-<dimensions>``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ishiki_host.gateway.embeddings import Embeddings

if TYPE_CHECKING:
    from ishiki_host.core.model import Priority

__all__ = ["CONCEPTS", "ConceptEmbedder"]

CONCEPTS: tuple[tuple[str, ...], ...] = (
    ("dog", "puppy", "hound", "pup", "doggy"),
    ("cat", "kitten", "kitty"),
    ("pet", "animal"),
    ("sister", "brother", "sibling"),
    ("mother", "mom", "mum", "father", "dad", "parent"),
    ("daughter", "son", "child", "kid"),
    ("wife", "husband", "spouse", "partner"),
    ("friend", "buddy", "pal"),
    ("live", "stay", "reside", "home", "house", "apartment", "flat"),
    ("job", "work", "employment", "career", "position", "office"),
    ("start", "begin", "commence", "first"),
    ("end", "finish", "stop", "quit"),
    ("allergic", "allergy", "intolerant", "react"),
    ("peanut", "nut", "satay", "almond", "cashew"),
    ("food", "eat", "meal", "dinner", "lunch", "breakfast", "cook", "dish"),
    ("vegetarian", "vegan", "meat", "meatless"),
    ("coffee", "espresso", "latte", "cappuccino"),
    ("tea", "chai", "matcha"),
    ("drink", "beverage", "sip"),
    ("like", "love", "enjoy", "favorite", "favourite", "prefer", "fond"),
    ("hate", "dislike", "loathe", "detest"),
    ("music", "song", "band", "concert", "album", "tune"),
    ("guitar", "piano", "violin", "instrument"),
    ("book", "novel", "read", "reading", "author"),
    ("movie", "film", "cinema"),
    ("travel", "trip", "journey", "vacation", "holiday", "visit", "flight", "fly"),
    ("city", "town"),
    ("birthday", "anniversary", "celebrate", "party"),
    ("doctor", "physician", "clinic", "dentist", "appointment"),
    ("sick", "ill", "flu", "fever", "unwell", "cold"),
    ("sleep", "insomnia", "nap", "rest", "tired"),
    ("run", "jog", "marathon", "race"),
    ("exercise", "gym", "workout", "training", "fitness"),
    ("car", "vehicle", "automobile"),
    ("bike", "bicycle", "cycle", "cycling"),
    ("exam", "test", "quiz"),
    ("study", "studies", "learn", "course", "class", "classes", "school", "university", "lecture"),
    ("language", "spanish", "french", "german", "japanese"),
    ("money", "salary", "pay", "budget", "savings", "loan", "rent"),
    ("buy", "purchase", "shop", "bought"),
    ("call", "phone", "ring", "talk"),
    ("remind", "remember", "forget", "reminder"),
    ("worry", "anxious", "nervous", "stress", "afraid", "fear"),
    ("happy", "glad", "excited", "thrilled", "joy"),
    ("sad", "upset", "down", "unhappy", "grief"),
    ("garden", "plant", "flower", "tomato", "tomatoes", "grow"),
    ("weather", "rain", "snow", "sunny", "storm"),
    ("morning", "early", "dawn", "sunrise"),
    ("night", "evening", "late", "midnight"),
    ("week", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    ("move", "moved", "moving", "relocate", "relocated", "relocating"),
    ("wedding", "marry", "married", "engaged", "fiance", "fiancee"),
    ("baby", "pregnant", "newborn", "expecting"),
    ("computer", "laptop", "pc"),
    ("code", "program", "software", "python", "developer", "engineer"),
    ("game", "chess", "play", "videogame"),
    ("name", "called", "named"),
    ("old", "age", "year", "born"),
    ("big", "large", "huge"),
    ("small", "little", "tiny"),
)
_STOP_WORDS = (
    "a an the and or but of to in on at for with by from as is are was were be been being am do does did doing "
    "have has had having i me my mine you your yours he him his she her hers it its we us our they them their "
    "this that these those what which who whom whose when where why how not no so if then than too very can "
    "could would should will shall may might must just about into over under again also there here any some "
    "all each every other such only own same s t now up out off get got"
)
_STOP = frozenset(_STOP_WORDS.split(" "))
_WORD = re.compile(r"[a-z0-9]+")
_FOLD = {word: group[0] for group in CONCEPTS for word in group}


def _fold(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and stem in _FOLD:
            return _FOLD[stem]
    if word in _FOLD:
        return _FOLD[word]
    return word[:-1] if word.endswith("s") and len(word) > 4 else word


class ConceptEmbedder:
    """A deterministic embeddings model of ``dimensions`` dimensions (see the module docstring)."""

    def __init__(self, dimensions: int = 128, *, hashes: int = 2):
        if dimensions < 2 or hashes < 1:
            raise ValueError("a ConceptEmbedder needs at least 2 dimensions and 1 hash per concept")
        self.dimensions = dimensions
        self.hashes = hashes
        self.name = f"concept-{dimensions}"

    def concepts(self, text: str) -> list[str]:
        """The concepts of ``text``, in order (common words left out)."""
        return [_fold(word) for word in _WORD.findall(text.lower()) if word not in _STOP]

    def vector(self, text: str) -> list[float]:
        """The embedding of one text: unit length, or all zeros for a text without a concept."""
        out = [0.0] * self.dimensions
        for concept in self.concepts(text):
            digest = hashlib.blake2b(concept.encode(), digest_size=4 * self.hashes).digest()
            for i in range(self.hashes):
                slot = int.from_bytes(digest[4 * i : 4 * i + 4], "big")
                out[slot % self.dimensions] += 1.0 if slot & 0x8000_0000 else -1.0
        norm = math.sqrt(sum(x * x for x in out))
        return [x / norm for x in out] if norm else out

    async def embed(
        self, texts: Sequence[str], *, priority: Priority = "background", limit_seconds: float | None = None
    ) -> Embeddings:
        """One vector per text, as an ``Embedder`` answers (``priority`` and ``limit_seconds`` change nothing)."""
        return Embeddings(tuple(tuple(self.vector(text)) for text in texts), self.name)
