"""Offered tool names: ``<server>__<tool>``, always acceptable to providers, unique and stable."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ishiki_ext_mcp import sanitize, tool_names
from ishiki_ext_mcp.names import server_prefix

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_plain_names_are_kept() -> None:
    assert tool_names("github", ["create_issue", "list-repos"]) == {
        "github__create_issue": "create_issue",
        "github__list-repos": "list-repos",
    }


def test_unsafe_characters_become_underscores() -> None:
    assert sanitize("files.read/all é") == "files_read_all__"
    assert tool_names("my server", ["fs.read"]) == {"my_server__fs_read": "fs.read"}


def test_a_collision_keeps_the_unchanged_name_and_hashes_the_other() -> None:
    offered = tool_names("s", ["a.b", "a_b"])
    assert offered["s__a_b"] == "a_b"
    (hashed,) = (name for name in offered if name != "s__a_b")
    assert re.fullmatch(r"s__a_b-[0-9a-f]{6}", hashed)
    assert offered[hashed] == "a.b"
    assert tool_names("s", ["a_b", "a.b"]) == offered  # the order the server lists them in does not matter


def test_long_names_are_cut_with_a_hash() -> None:
    offered = tool_names("server", ["x" * 100, "x" * 101])
    assert all(len(name) == 64 for name in offered)
    assert len(offered) == 2
    assert len(server_prefix("s" * 50)) == 32


@settings(deadline=None)
@given(
    server=st.text(min_size=1, max_size=80),
    tools=st.lists(st.text(min_size=1, max_size=100), min_size=1, max_size=12),
)
def test_every_offered_name_is_valid_unique_and_deterministic(server: str, tools: list[str]) -> None:
    offered = tool_names(server, tools)
    assert all(PROVIDER_NAME.fullmatch(name) for name in offered)
    assert sorted(offered.values()) == sorted(set(tools))
    assert tool_names(server, list(reversed(tools))) == offered
