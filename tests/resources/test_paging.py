"""Paging arithmetic and line selectors (pure functions)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ishiki_host.errors import ResourceError
from ishiki_host.resources.paging import (
    LineSelector,
    page_lines,
    parse_line_fragment,
    parse_line_selector,
    split_lines,
)

LINES = [f"line {n}" for n in range(1, 101)]


@pytest.mark.parametrize(
    ("text", "selector"),
    [
        ("10-20", LineSelector(10, 20)),
        (" 10 - 20 ", LineSelector(10, 20)),
        ("L10-L20", LineSelector(10, 20)),
        ("10..20", LineSelector(10, 20)),
        ("42", LineSelector(42, 42)),
        (42, LineSelector(42, 42)),
        ("100-", LineSelector(100, None)),
        ("-50", LineSelector(last=50)),
    ],
)
def test_selectors(text: str | int, selector: LineSelector) -> None:
    assert parse_line_selector(text) == selector


@pytest.mark.parametrize("text", ["", "-", "L", "abc", "0", "0-5", "5-0", "20-10", "1-2-3", "--5", True, 1.5])
def test_bad_selectors_explain_the_forms(text: object) -> None:
    with pytest.raises(ResourceError) as caught:
        parse_line_selector(text)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_selector"


def test_fragments() -> None:
    assert parse_line_fragment("L10-L20") == LineSelector(10, 20)
    assert parse_line_fragment("L7") == LineSelector(7, 7)
    assert parse_line_fragment("L7-") == LineSelector(7, None)
    assert parse_line_fragment("section-2") is None
    assert parse_line_fragment(None) is None


def test_split_lines() -> None:
    assert split_lines("") == []
    assert split_lines("a") == ["a"]
    assert split_lines("a\n") == ["a"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("a\r\nb\u2028c") == ["a", "b\u2028c"]


def test_whole_text_in_one_page() -> None:
    page = page_lines(LINES)
    assert (page.first_line, page.last_line, page.total_lines) == (1, 100, 100)
    assert page.next_offset is None
    assert page.remaining_lines == 0
    assert page.text == "\n".join(LINES)


def test_line_cap_and_continuation() -> None:
    page = page_lines(LINES, max_lines=30)
    assert (page.first_line, page.last_line, page.next_offset, page.remaining_lines) == (1, 30, 31, 70)
    last = page_lines(LINES, offset=91, max_lines=30)
    assert (last.first_line, last.last_line, last.next_offset) == (91, 100, None)


def test_char_cap_counts_newlines() -> None:
    lines = ["x" * 9] * 10  # each line costs 9 + 1 for the newline joining it to the previous one
    page = page_lines(lines, max_chars=29)
    assert page.text == "\n".join(["x" * 9] * 3)
    assert page.next_offset == 4
    assert len(page_lines(lines, max_chars=28).text.split("\n")) == 2


@pytest.mark.parametrize(
    ("selector", "first", "last"),
    [("10-20", 10, 20), ("-5", 96, 100), ("95-", 95, 100), ("42", 42, 42), ("90-500", 90, 100), ("-500", 1, 100)],
)
def test_selected_ranges(selector: str, first: int, last: int) -> None:
    page = page_lines(LINES, selector=parse_line_selector(selector))
    assert (page.first_line, page.last_line) == (first, last)
    assert page.text.split("\n") == LINES[first - 1 : last]


def test_paging_inside_a_selection_keeps_its_end() -> None:
    selector = parse_line_selector("10-50")
    page = page_lines(LINES, selector=selector, max_lines=15)
    assert (page.first_line, page.last_line, page.next_offset, page.remaining_lines) == (10, 24, 25, 26)
    page = page_lines(LINES, selector=selector, offset=40, max_lines=15)
    assert (page.first_line, page.last_line, page.next_offset) == (40, 50, None)


def test_out_of_range() -> None:
    with pytest.raises(ResourceError, match="past the end") as caught:
        page_lines(LINES, selector=parse_line_selector("101"))
    assert caught.value.code == "out_of_range"
    with pytest.raises(ResourceError, match="past the end"):
        page_lines(LINES, selector=parse_line_selector("10-20"), offset=21)
    with pytest.raises(ResourceError, match="column"):
        page_lines(LINES, offset=1, column=50)


def test_empty_text() -> None:
    page = page_lines([])
    assert (page.text, page.first_line, page.total_lines, page.next_offset) == ("", 0, 0, None)
    assert page_lines([], selector=parse_line_selector("-10")).total_lines == 0
    with pytest.raises(ResourceError, match="empty"):
        page_lines([], selector=parse_line_selector("1-5"))


def test_a_line_longer_than_a_page_is_paged_by_column() -> None:
    lines = ["a" * 25, "b" * 3]
    first = page_lines(lines, max_chars=10)
    assert (first.text, first.next_offset, first.next_column, first.remaining_lines) == ("a" * 10, 1, 11, 2)
    second = page_lines(lines, offset=1, column=11, max_chars=10)
    assert (second.text, second.first_column, second.next_column) == ("a" * 10, 11, 21)
    third = page_lines(lines, offset=1, column=21, max_chars=10)
    assert third.text == "aaaaa\nbbb"
    assert third.next_offset is None


@settings(derandomize=True, deadline=None, max_examples=200)
@given(
    st.lists(st.text(alphabet="ab ", max_size=30), max_size=40),
    st.integers(min_value=1, max_value=7),
    st.integers(min_value=1, max_value=40),
)
def test_following_continuations_reads_everything_once(lines: list[str], max_lines: int, max_chars: int) -> None:
    offset: int | None = None
    column: int | None = None
    pieces: list[str] = []
    for _ in range(10_000):
        page = page_lines(lines, offset=offset, column=column, max_lines=max_lines, max_chars=max_chars)
        assert len(page.text) <= max_chars
        assert page.text.count("\n") < max_lines
        pieces.append(page.text)
        if page.next_offset is None:
            break
        # A page that ends mid-line continues that line; otherwise the next page starts a new line.
        if page.next_column is None:
            pieces.append("\n")
        offset, column = page.next_offset, page.next_column
    assert "".join(pieces) == "\n".join(lines)
