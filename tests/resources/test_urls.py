"""The shared resource URL parser: strict about anything that could steer a handler, readable otherwise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ishiki_host.errors import ResourceError
from ishiki_host.resources.urls import format_resource_url, parse_resource_url


def test_parts_of_a_url() -> None:
    url = parse_resource_url("Workspace://main/src/app%20v2.py?view=meta&x=1%262#L3-L9")
    assert url.scheme == "workspace"
    assert url.authority == "main"
    assert url.path_segments == ("src", "app v2.py")
    assert url.path == "src/app v2.py"
    assert url.params == {"view": "meta", "x": "1&2"}
    assert url.view == "meta"
    assert url.fragment == "L3-L9"
    assert str(url) == "workspace://main/src/app%20v2.py?view=meta&x=1%262#L3-L9"
    assert str(url.without_fragment()) == "workspace://main/src/app%20v2.py?view=meta&x=1%262"
    assert str(url.bare()) == "workspace://main/src/app%20v2.py"


def test_empty_paths_trailing_slashes_and_unicode() -> None:
    assert parse_resource_url("local://").segments == ()
    assert parse_resource_url("local://dir/").segments == ("dir",)
    assert parse_resource_url(" local://笔记/今天.md ").segments == ("笔记", "今天.md")
    assert parse_resource_url("local://a?").query == ()


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("local://../etc/passwd", "'..' segment"),
        ("local://a/../../etc", "'..' segment"),
        ("local://%2e%2e/etc", "'..' segment"),
        ("local://%2E%2E/%2e%2e/etc", "'..' segment"),
        ("local://./a", "'.' segment"),
        ("local:///etc/passwd", "empty segment"),
        ("local://a//b", "empty segment"),
        ("local://a%2F..%2Fb", "encoded '/'"),
        ("local://a%5C..", "encoded '/' or '\\\\'"),
        ("local://a\x00b", "control"),
        ("local://a%00b", "control"),
        ("local://a\nb", "control"),
        ("local://a%zz", "malformed percent"),
        ("local://a%e", "malformed percent"),
        ("local://%ff%fe", "UTF-8"),
        ("local://a?x=1&x=2", "given twice"),
        ("local://a?=1", "without a name"),
        ("notaurl", "scheme://"),
        ("1local://a", "scheme://"),
        ("local:/a", "scheme://"),
        ("", "scheme://"),
        ("local://" + "a" * 9000, "longer than"),
    ],
)
def test_invalid_urls_are_refused_and_say_why(raw: str, why: str) -> None:
    with pytest.raises(ResourceError, match=why) as caught:
        parse_resource_url(raw)
    assert caught.value.code == "invalid_resource_uri"


def test_a_url_must_be_text() -> None:
    with pytest.raises(ResourceError, match="must be a string"):
        parse_resource_url(42)  # type: ignore[arg-type]


def test_formatting_refuses_bad_schemes() -> None:
    with pytest.raises(ResourceError, match="not a valid scheme") as caught:
        format_resource_url("Bad_Scheme", ["a"])
    assert caught.value.code == "invalid_scheme"


_segment = st.text(min_size=1, max_size=12).filter(
    lambda s: (
        s not in (".", "..")
        and "/" not in s
        and "\\" not in s
        and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in s)
    )
)


@settings(derandomize=True, deadline=None, max_examples=300)
@given(
    st.lists(_segment, max_size=4),
    st.dictionaries(
        st.text(alphabet="abcxyz=&%? ", min_size=1, max_size=5).filter(lambda k: "=" not in k), _segment, max_size=3
    ),
)
def test_formatted_urls_parse_back(segments: list[str], query: dict[str, str]) -> None:
    text = format_resource_url("x-test", segments, query)
    parsed = parse_resource_url(text)
    assert parsed.segments == tuple(segments)
    assert parsed.params == query
    assert str(parsed) == text
