"""Runtime keys and data paths: hostile ids never escape, never collide, and stay readable when they can."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ishiki_host.addresses.keys import MAX_SEGMENT, RuntimeKey, escape_segment, runtime_dir, unescape_segment
from ishiki_host.errors import EventInvalid

HOSTILE = [
    "../",
    "..",
    ".",
    "...",
    "a/../../b",
    "/etc/passwd",
    "nul\x00byte",
    "x" * 1000,
    "日本語のチャンネル",
    "telegram:123",
    "group:-100/sub",
    "C:\\Windows",
    "%2e%2e",
    "~user",
    "con",
    "NUL.txt",
    "trailing.",
    " spaced ",
    "\ud800lone",
    "😀" * 200,
]


def test_keys_and_their_strings() -> None:
    channel = RuntimeKey.for_channel("alice", "telegram:42", "group:-100")
    cross = RuntimeKey.for_cross("alice")
    assert str(channel) == "alice/telegram:42/group:-100"
    assert str(cross) == "alice/main"
    assert channel.mode == "channel"
    assert cross.mode == "cross"
    assert RuntimeKey.for_mode("cross", "alice", "telegram:42", "group:-100") == cross
    assert RuntimeKey.for_mode("channel", "alice", "telegram:42", "group:-100") == channel


def test_runtime_dirs(tmp_path: Path) -> None:
    key = RuntimeKey.for_channel("alice", "telegram:42", "private:7")
    assert runtime_dir(tmp_path, key) == tmp_path / "runtimes" / "alice" / "telegram%3A42" / "private%3A7"
    assert runtime_dir(tmp_path, RuntimeKey.for_cross("alice")) == tmp_path / "runtimes" / "alice" / "main"


def test_a_sid_segment_never_equals_main() -> None:
    assert "%3A" in RuntimeKey.for_channel("p", "main:main", "group:main").segments()[1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"profile": ""}, "profile id"),
        ({"profile": "a/b"}, "profile id"),
        ({"profile": "a", "sid": "telegram:1"}, "both sid and channel_id"),
    ],
)
def test_bad_keys_are_refused(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RuntimeKey(**kwargs)


def test_key_ids_are_validated() -> None:
    with pytest.raises(EventInvalid, match="sid"):
        RuntimeKey.for_channel("a", "nosid", "group:1")
    with pytest.raises(EventInvalid, match="channel id"):
        RuntimeKey.for_channel("a", "telegram:1", "room:1")


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_ids_become_one_safe_name(value: str, tmp_path: Path) -> None:
    name = escape_segment(value)
    assert name not in ("", ".", "..")
    assert not name.startswith(".")
    assert not name.endswith(".")
    assert all(ch.isascii() and (ch.isalnum() or ch in "._-%~") for ch in name)
    assert len(name) <= MAX_SEGMENT
    assert name.split(".")[0].lower() not in ("con", "nul", "prn", "aux")
    made = tmp_path / name
    made.mkdir()
    assert made.resolve().parent == tmp_path.resolve()
    if len(name) < MAX_SEGMENT - 17:
        assert unescape_segment(name) == value


def test_hostile_runtime_dirs_stay_under_runtimes(tmp_path: Path) -> None:
    for value in HOSTILE:
        if "\x00" in value or not value.strip():
            continue
        key = RuntimeKey.for_channel(value.replace("/", "_"), f"x:{value}", f"group:{value}")
        path = runtime_dir(tmp_path, key)
        path.mkdir(parents=True)
        assert path.resolve().is_relative_to((tmp_path / "runtimes").resolve())
        assert len(path.relative_to(tmp_path).parts) == 4


def test_long_ids_are_cut_with_a_hash_and_cannot_be_inverted() -> None:
    first, second = "a" * 500 + "1", "a" * 500 + "2"
    assert escape_segment(first) != escape_segment(second)
    assert len(escape_segment(first)) <= MAX_SEGMENT
    with pytest.raises(ValueError, match="shortened"):
        unescape_segment(escape_segment(first))


def test_an_escape_is_never_cut_in_half() -> None:
    for pad in range(4):
        name = escape_segment("a" * pad + "/" * 100)
        body = name.rsplit("~", 1)[0]
        assert all(
            body[i + 1 : i + 3].isalnum() and len(body[i + 1 : i + 3]) == 2 for i, ch in enumerate(body) if ch == "%"
        )


def test_ids_differing_only_in_case_differ_case_insensitively() -> None:
    names = {escape_segment(v).lower() for v in ("abc", "ABC", "Abc", "aBc", "abC")}
    assert len(names) == 5


def test_empty_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="directory name"):
        escape_segment("")


@settings(derandomize=True, deadline=None, max_examples=300)
@given(st.lists(st.text(min_size=1, max_size=40), min_size=2, max_size=6, unique=True))
def test_escaping_is_collision_free_even_ignoring_case(values: list[str]) -> None:
    names = [escape_segment(v) for v in values]
    assert len({n.lower() for n in names}) == len(values)
    for name, value in zip(names, values, strict=True):
        if len(name) < MAX_SEGMENT - 17:
            assert unescape_segment(name) == value


def test_parse_is_the_inverse_of_str_with_slashes_in_self_ids() -> None:
    for key in (
        RuntimeKey.for_channel("ana", "web:team/a", "private:42"),
        RuntimeKey.for_channel("ana", "telegram:bot", "group:-100/x"),
        RuntimeKey.for_cross("ana"),
    ):
        assert RuntimeKey.parse(str(key)) == key
    key = RuntimeKey.parse("ana/web:team/a/private:42")
    assert key is not None
    assert (key.profile, key.sid, key.channel_id) == ("ana", "web:team/a", "private:42")


@pytest.mark.parametrize("text", ["", "ana", "ana/", "/main", "ana/fake:bot/elsewhere:1", "ana/nosid/private:1"])
def test_parse_of_what_no_key_prints_is_none(text: str) -> None:
    assert RuntimeKey.parse(text) is None
