"""Channel claims: compiling patterns, matching, and the symmetric overlap check (against brute force)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.config.claims import ClaimIndex, Claims, ClaimSet, compile_claims, overlaps


def claims(mapping: dict[str, list[str]]) -> Claims:
    compiled, problems = compile_claims(mapping)
    assert problems == []
    return compiled


def test_matching_includes_and_excludes() -> None:
    c = claims({"telegram:1": ["group:*", "private:7", "!group:13", "!group:9*"]})
    assert c.matches("telegram:1", "group:1")
    assert c.matches("telegram:1", "private:7")
    assert not c.matches("telegram:1", "private:8")
    assert not c.matches("telegram:1", "group:13")
    assert not c.matches("telegram:1", "group:99")
    assert c.matches("telegram:1", "group:130")
    assert not c.matches("telegram:2", "group:1")
    assert c.platforms() == ("telegram",)


def test_pattern_order_does_not_matter() -> None:
    a = claims({"x:1": ["!b", "*"]})
    b = claims({"x:1": ["*", "!b"]})
    for channel in ("a", "b", "bc", ""):
        assert a.matches("x:1", channel) == b.matches("x:1", channel)


@pytest.mark.parametrize(
    ("mapping", "path", "message"),
    [
        ({"console": ["*"]}, ("channels", "console"), "must be platform:selfId"),
        ({":1": ["*"]}, ("channels", ":1"), "must be platform:selfId"),
        ({"console:": ["*"]}, ("channels", "console:"), "must be platform:selfId"),
        ({"console:local": [""]}, ("channels", "console:local", 0), "empty channel pattern"),
        ({"console:local": ["*", "!"]}, ("channels", "console:local", 1), "bare '!'"),
        ({"console:local": ["!a", "!b*"]}, ("channels", "console:local"), "only excludes"),
        ({"console:local": ["gr*up"]}, ("channels", "console:local", 0), "only allowed at the end"),
        ({"console:local": [" a"]}, ("channels", "console:local", 0), "spaces"),
    ],
)
def test_invalid_claims(mapping: dict[str, list[str]], path: tuple[object, ...], message: str) -> None:
    compiled, problems = compile_claims(mapping)
    assert len(problems) == 1
    assert problems[0][0] == path
    assert message in problems[0][1]
    assert compiled.by_sid == {}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (["*"], ["private:1"], True),
        (["group:*"], ["private:*"], False),
        (["group:*", "!group:1"], ["group:1"], False),
        (["group:*", "!group:1"], ["group:1*"], True),  # group:12 is in both
        (["group:*"], ["group:1*", "!group:*"], False),
        (["a"], ["a"], True),
        (["a", "!a"], ["*"], False),
        (["ab*"], ["a*", "!abc*"], True),
    ],
)
def test_overlap_examples(a: list[str], b: list[str], expected: bool) -> None:
    ca, cb = claims({"s:1": a}).by_sid["s:1"], claims({"s:1": b}).by_sid["s:1"]
    assert (overlaps(ca, cb) is not None) is expected
    assert (overlaps(cb, ca) is not None) is expected


def test_different_accounts_never_overlap() -> None:
    a, b = claims({"s:1": ["*"]}).by_sid["s:1"], claims({"s:2": ["*"]}).by_sid["s:2"]
    assert overlaps(a, b) is None


ALPHABET = "ab"
patterns = st.builds(
    lambda exclude, text, star: ("!" if exclude else "") + text + ("*" if star else ""),
    st.booleans(),
    st.text(alphabet=ALPHABET, max_size=3),
    st.booleans(),
).filter(lambda p: p not in ("", "!"))
claim_lists = st.lists(patterns, min_size=1, max_size=4).filter(lambda ps: any(not p.startswith("!") for p in ps))


def universe(*claim_sets: ClaimSet) -> list[str]:
    """Every id over the patterns' alphabet plus one fresh letter, one longer than the longest pattern.

    Ids are open-ended strings, so a prefix pattern always has members no finite set of excludes names; the
    fresh letter keeps that true inside this finite universe.
    """
    longest = max(len(p.text) for c in claim_sets for p in (*c.includes, *c.excludes))
    letters = ALPHABET + "z"
    return ["".join(t) for n in range(longest + 2) for t in itertools.product(letters, repeat=n)]


@given(claim_lists, claim_lists)
def test_overlap_agrees_with_brute_force_and_is_symmetric(a: list[str], b: list[str]) -> None:
    ca, cb = claims({"s:1": a}).by_sid["s:1"], claims({"s:1": b}).by_sid["s:1"]
    brute = any(ca.matches(c) and cb.matches(c) for c in universe(ca, cb))
    assert (overlaps(ca, cb) is not None) is brute
    assert (overlaps(cb, ca) is not None) is brute


@given(st.lists(claim_lists, min_size=1, max_size=8), claim_lists)
def test_index_finds_the_earliest_overlapping_owner(earlier: list[list[str]], new: list[str]) -> None:
    index = ClaimIndex()
    sets = [claims({"s:1": ps}) for ps in earlier]
    for number, c in enumerate(sets):
        index.add(f"p{number}", c)
    candidate = claims({"s:1": new})
    expected = next(
        (f"p{n}" for n, c in enumerate(sets) if overlaps(c.by_sid["s:1"], candidate.by_sid["s:1"])),
        None,
    )
    conflict = index.conflict(candidate)
    assert (conflict.owner if conflict else None) == expected


def test_overlap_description_names_the_earlier_profile() -> None:
    index = ClaimIndex()
    index.add("alpha", claims({"telegram:1": ["group:*"]}))
    conflict = index.conflict(claims({"telegram:1": ["group:5"], "console:local": ["*"]}))
    assert conflict is not None
    assert conflict.owner == "alpha"
    assert "profile 'alpha' on telegram:1" in conflict.describe()
    assert index.conflict(claims({"telegram:1": ["private:*"]})) is None
