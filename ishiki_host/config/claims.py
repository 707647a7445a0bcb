"""Channel claims: which channels of which platform accounts a profile answers in.

A profile's ``channels`` maps ``platform:selfId`` to patterns: ``*`` (every channel), ``prefix*``, an exact
channel id, and any of those after ``!`` to exclude. A channel is claimed when some include matches it and no
exclude does; the order of patterns does not matter.

Two claim sets overlap when some channel id could match both. Channel ids are open-ended strings, so a prefix
pattern always matches ids no exact exclude names: ``r*`` minus excludes is empty only when an excluded prefix
is a prefix of ``r``. The overlap relation is symmetric by construction; ``ClaimIndex`` finds the earliest
overlapping owner without comparing every pair of profiles.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ClaimIndex", "ClaimSet", "Claims", "Overlap", "Pattern", "compile_claims", "overlaps"]


@dataclass(frozen=True, slots=True)
class Pattern:
    """One pattern: ``exact`` matches one id, ``prefix`` every id starting with ``text`` (``*``: text ``""``)."""

    kind: Literal["exact", "prefix"]
    text: str

    def matches(self, channel_id: str) -> bool:
        """Whether ``channel_id`` matches."""
        return channel_id.startswith(self.text) if self.kind == "prefix" else channel_id == self.text

    def __str__(self) -> str:
        return f"{self.text}*" if self.kind == "prefix" else self.text


@dataclass(frozen=True, slots=True)
class ClaimSet:
    """The includes and excludes one profile declares for one ``platform:selfId``."""

    sid: str
    includes: tuple[Pattern, ...]
    excludes: tuple[Pattern, ...] = ()

    def matches(self, channel_id: str) -> bool:
        """Whether this claim set claims ``channel_id``."""
        return any(p.matches(channel_id) for p in self.includes) and not any(
            p.matches(channel_id) for p in self.excludes
        )


@dataclass(frozen=True, slots=True)
class Claims:
    """All claims of one profile, by ``platform:selfId``."""

    by_sid: Mapping[str, ClaimSet] = field(default_factory=dict)

    def matches(self, sid: str, channel_id: str) -> bool:
        """Whether the profile claims ``channel_id`` of the account ``sid``."""
        claim = self.by_sid.get(sid)
        return claim is not None and claim.matches(channel_id)

    def platforms(self) -> tuple[str, ...]:
        """The platforms named, sorted (each needs its ``ishiki.channel`` service)."""
        return tuple(sorted({sid.partition(":")[0] for sid in self.by_sid}))


@dataclass(frozen=True, slots=True)
class Overlap:
    """Why two claim sets overlap: the owner claimed first, the account, and the two patterns that meet."""

    owner: str
    sid: str
    theirs: Pattern
    ours: Pattern

    def describe(self) -> str:
        """One line for an error message."""
        return (
            f"its claims overlap profile '{self.owner}' on {self.sid} "
            f"('{self.ours}' and '{self.theirs}' can match the same channel); the earlier profile keeps them"
        )


def _parse_pattern(raw: str) -> tuple[Pattern, bool] | str:
    """``(pattern, is_exclude)``, or a problem message."""
    exclude = raw.startswith("!")
    body = raw[1:] if exclude else raw
    if not raw.strip():
        return "empty channel pattern"
    if exclude and not body.strip():
        return "a bare '!' excludes nothing; write '!pattern'"
    if body != body.strip():
        return f"pattern '{raw}' has leading or trailing spaces"
    if "*" in body[:-1]:
        return f"pattern '{raw}': '*' is only allowed at the end ('*' alone or 'prefix*')"
    if body.endswith("*"):
        return Pattern("prefix", body[:-1]), exclude
    return Pattern("exact", body), exclude


def compile_claims(channels: Mapping[str, Any]) -> tuple[Claims, list[tuple[tuple[Any, ...], str]]]:
    """Compile a profile's ``channels`` map; problems come back as ``(key path, message)`` pairs.

    Keys must be ``platform:selfId``; each list needs at least one include. A ``platform:selfId`` with a
    problem is left out of the result.
    """
    problems: list[tuple[tuple[Any, ...], str]] = []
    by_sid: dict[str, ClaimSet] = {}
    for sid, patterns in channels.items():
        platform, colon, self_id = str(sid).partition(":")
        if not colon or not platform.strip() or not self_id.strip():
            problems.append((("channels", sid), f"'{sid}' must be platform:selfId (e.g. console:local)"))
            continue
        claim = _compile_one(str(sid), patterns, problems)
        if claim is not None:
            by_sid[str(sid)] = claim
    return Claims(by_sid), problems


def _compile_one(sid: str, patterns: Sequence[Any], problems: list[tuple[tuple[Any, ...], str]]) -> ClaimSet | None:
    includes: list[Pattern] = []
    excludes: list[Pattern] = []
    bad = False
    for index, raw in enumerate(patterns):
        parsed = _parse_pattern(str(raw))
        if isinstance(parsed, str):
            problems.append((("channels", sid, index), parsed))
            bad = True
            continue
        pattern, exclude = parsed
        target = excludes if exclude else includes
        if pattern not in target:
            target.append(pattern)
    if not bad and not includes:
        problems.append((("channels", sid), "only excludes: add what to claim ('*', 'prefix*' or an exact id)"))
    if bad or not includes:
        return None
    return ClaimSet(sid, tuple(includes), tuple(excludes))


def _meet(a: Pattern, b: Pattern) -> Pattern | None:
    """The set of ids matching both patterns, as a pattern, or ``None`` when it is empty."""
    if a.kind == "exact" or b.kind == "exact":
        exact, other = (a, b) if a.kind == "exact" else (b, a)
        return exact if other.matches(exact.text) else None
    if a.text.startswith(b.text):
        return a
    return b if b.text.startswith(a.text) else None


def _survives(meet: Pattern, excludes: Sequence[Pattern]) -> bool:
    """Whether some id of ``meet`` escapes every exclude (ids are open-ended strings)."""
    if meet.kind == "exact":
        return not any(x.matches(meet.text) for x in excludes)
    return not any(x.kind == "prefix" and meet.text.startswith(x.text) for x in excludes)


def _pair_overlaps(a: ClaimSet, pa: Pattern, b: ClaimSet, pb: Pattern) -> bool:
    meet = _meet(pa, pb)
    return meet is not None and _survives(meet, (*a.excludes, *b.excludes))


def overlaps(a: ClaimSet, b: ClaimSet) -> tuple[Pattern, Pattern] | None:
    """The first pair of includes (one of ``a``, one of ``b``) through which ``a`` and ``b`` share a channel."""
    if a.sid != b.sid:
        return None
    for pa in a.includes:
        for pb in b.includes:
            if _pair_overlaps(a, pa, b, pb):
                return pa, pb
    return None


@dataclass
class _Entry:
    order: int
    owner: str
    claim: ClaimSet
    pattern: Pattern


class _SidIndex:
    """The includes of every claimed set of one ``platform:selfId``, indexed by exact id and by prefix."""

    def __init__(self) -> None:
        self.exact: dict[str, list[_Entry]] = {}
        self.prefix: dict[str, list[_Entry]] = {}
        self.exact_keys: list[str] = []
        self.prefix_keys: list[str] = []

    def add(self, entry: _Entry) -> None:
        table, keys = (
            (self.exact, self.exact_keys) if entry.pattern.kind == "exact" else (self.prefix, self.prefix_keys)
        )
        if entry.pattern.text not in table:
            bisect.insort(keys, entry.pattern.text)
        table.setdefault(entry.pattern.text, []).append(entry)

    def candidates(self, pattern: Pattern) -> Iterator[_Entry]:
        """Entries whose include meets ``pattern`` (before excludes are considered)."""
        text = pattern.text
        for end in range(len(text) + 1):  # prefixes of ours that are indexed prefixes
            yield from self.prefix.get(text[:end], ())
        if pattern.kind == "exact":
            yield from self.exact.get(text, ())
            return
        yield from self._starting_with(self.exact_keys, self.exact, text)
        yield from (e for e in self._starting_with(self.prefix_keys, self.prefix, text) if e.pattern.text != text)

    @staticmethod
    def _starting_with(keys: list[str], table: dict[str, list[_Entry]], text: str) -> Iterator[_Entry]:
        for key in keys[bisect.bisect_left(keys, text) :]:
            if not key.startswith(text):
                break
            yield from table[key]


class ClaimIndex:
    """The claims accepted so far, in load order; finds which earlier owner a new claim set overlaps."""

    def __init__(self) -> None:
        self._by_sid: dict[str, _SidIndex] = {}
        self._count = 0

    def add(self, owner: str, claims: Claims) -> None:
        """Accept ``owner``'s claims."""
        for sid, claim in claims.by_sid.items():
            index = self._by_sid.setdefault(sid, _SidIndex())
            for pattern in claim.includes:
                index.add(_Entry(self._count, owner, claim, pattern))
        self._count += 1

    def conflict(self, claims: Claims) -> Overlap | None:
        """The earliest-added owner whose claims overlap ``claims``, or ``None``."""
        best: tuple[int, Overlap] | None = None
        for sid, claim in claims.by_sid.items():
            index = self._by_sid.get(sid)
            if index is None:
                continue
            for ours in claim.includes:
                for entry in index.candidates(ours):
                    if (best is None or entry.order < best[0]) and _pair_overlaps(
                        entry.claim, entry.pattern, claim, ours
                    ):
                        best = (entry.order, Overlap(entry.owner, sid, entry.pattern, ours))
        return best[1] if best else None
