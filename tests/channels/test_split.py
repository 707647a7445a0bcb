"""Splitting outgoing text: limits, natural boundaries, code fences, graphemes; property-based."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ishiki_host.channels import split_message, utf16_len

FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def unclosed_fence(part: str) -> str | None:
    """The marker of a fence left open at the end of ``part`` (an independent, line-based reading)."""
    open_marker: str | None = None
    for line in part.split("\n"):
        match = FENCE_LINE.match(line)
        if match is None:
            continue
        marker, rest = match.groups()
        if open_marker is None:
            open_marker = marker
        elif marker[0] == open_marker[0] and len(marker) >= len(open_marker) and not rest.strip():
            open_marker = None
    return open_marker


def _readings(part: str) -> list[tuple[str, bool, bool]]:
    """Ways to read a part as source text: (core, a reopening line was added, a closing fence was added)."""
    readings = [(part, False, False)]
    first, _, after = part.partition("\n")
    reopened = FENCE_LINE.match(first) is not None
    closed = re.search(r"\n(`{3,}|~{3,})\Z", part)
    if reopened:
        readings.append((after, True, False))
    if closed:
        # A closer added after a cut at a line start keeps that line's newline; after a hard cut it does not.
        for core in (part[: closed.start() + 1], part[: closed.start()]):
            readings.append((core, False, True))
            if reopened:
                readings.append((core.partition("\n")[2], True, True))
    return readings


def assert_covers(text: str, parts: list[str]) -> None:
    """Parts, minus fence lines added at cuts, are the text in order with only whitespace between them.

    A reopening line is added exactly after an added closing fence, with nothing dropped between the two.
    """
    seen: set[tuple[int, int, bool]] = set()

    def match(index: int, cursor: int, reopen: bool) -> bool:
        if (index, cursor, reopen) in seen:
            return False
        seen.add((index, cursor, reopen))
        if index == len(parts):
            return not reopen and not text[cursor:].strip()
        for core, opened, closed in _readings(parts[index]):
            if opened != reopen or not core:
                continue
            at = text.find(core, cursor)
            gap = text[cursor:at]
            if at >= 0 and (not gap if reopen else not gap.strip()) and match(index + 1, at + len(core), closed):
                return True
        return False

    assert match(0, 0, False), parts


word = st.text(alphabet="abcdefghij", min_size=1, max_size=12) | st.sampled_from(
    ["😀", "👨‍👩‍👧", "🇯🇵", "é", "e\u0301", "👍🏽", "日本語。", "テスト！", "x" * 40]
)
sentence = st.lists(word, min_size=1, max_size=12).map(" ".join)
paragraph = st.lists(sentence, min_size=1, max_size=4).map("\n".join)
fence = st.builds(
    lambda marker, info, lines: f"{marker}{info}\n" + "\n".join(lines) + f"\n{marker}",
    st.sampled_from(["```", "~~~", "````"]),
    st.sampled_from(["", "python", "js", "c++"]),
    st.lists(st.text(alphabet="abc xyz(){}=;😀", max_size=30), min_size=1, max_size=15),
)
document = st.lists(paragraph | fence, min_size=1, max_size=8).map("\n\n".join)


@settings(derandomize=True, deadline=None, max_examples=400)
@given(document, st.integers(min_value=24, max_value=300), st.sampled_from([len, utf16_len]))
def test_parts_fit_cover_the_text_and_keep_fences_balanced(text: str, limit: int, measure: object) -> None:
    assert callable(measure)
    parts = split_message(text, limit, measure=measure)
    assert parts
    for part in parts:
        assert measure(part) <= limit
        assert part.strip()
        assert unclosed_fence(part) is None, part
    assert_covers(text, parts)


@settings(derandomize=True, deadline=None, max_examples=200)
@given(st.text(min_size=1, max_size=400), st.integers(min_value=8, max_value=60))
def test_any_text_without_fences_fits_and_is_covered(text: str, limit: int) -> None:
    text = text.replace("`", "'").replace("~", "-")
    parts = split_message(text, limit, measure=utf16_len)
    assert all(utf16_len(part) <= limit and part.strip() for part in parts)
    assert_covers(text, parts)


def test_short_text_is_one_part_and_blank_text_none() -> None:
    assert split_message("hello", 10) == ["hello"]
    assert split_message("  \n\t ", 10) == []
    assert split_message("", 10) == []


def test_paragraphs_then_lines_then_spaces() -> None:
    assert split_message("aaa bbb\nccc\n\nddd", 14) == ["aaa bbb\nccc", "ddd"]
    assert split_message("aaa bbb\nccc ddd", 12) == ["aaa bbb", "ccc ddd"]
    assert split_message("aaa bbb ccc ddd", 12) == ["aaa bbb ccc", "ddd"]
    assert split_message("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_cjk_text_breaks_after_sentence_punctuation() -> None:
    assert split_message("今日は晴れです。明日は雨です。", 10) == ["今日は晴れです。", "明日は雨です。"]


def test_hard_cuts_keep_grapheme_clusters_whole() -> None:
    family = "👨‍👩‍👧"
    parts = split_message("ab" + family * 3, 9)
    assert "".join(parts) == "ab" + family * 3
    assert all(part.replace(family, "") in ("", "ab") for part in parts)
    flags = split_message("🇯🇵🇫🇷🇩🇪", 3)
    assert flags == ["🇯🇵", "🇫🇷", "🇩🇪"]
    accents = split_message("e\u0301" * 6, 5)
    assert all(not part.startswith("\u0301") for part in accents)


def test_utf16_measure() -> None:
    assert utf16_len("a😀é") == 4
    assert utf16_len("\ud800") == 1
    parts = split_message("😀" * 10, 4, measure=utf16_len)
    assert parts == ["😀😀"] * 5


def test_a_fence_that_fits_is_never_cut() -> None:
    code = "```python\n" + "\n".join(f"x{n} = {n}" for n in range(10)) + "\n```"
    text = "intro line\n" + code + "\nafter"
    parts = split_message(text, len(code) + 5)
    assert code in parts


def test_a_long_fence_is_closed_and_reopened_with_its_info_string() -> None:
    code = "~~~~ js\n" + "\n".join(f"let x{n} = {n};" for n in range(50)) + "\n~~~~"
    parts = split_message("Here:\n\n" + code + "\n\nDone.", 120)
    inner = [p for p in parts if "let x" in p]
    assert len(inner) > 2
    assert all(p.startswith("~~~~ js\n") and p.endswith("\n~~~~") for p in inner[:-1])
    assert parts[0] == "Here:"
    assert parts[-1].endswith("let x49 = 49;\n~~~~\n\nDone.")
    assert all(len(p) <= 120 for p in parts)


def test_a_code_line_longer_than_the_limit_is_cut_inside_the_fence() -> None:
    parts = split_message("```\n" + "y" * 100 + "\n```", 30)
    assert all(len(p) <= 30 and p.startswith("```\n") and p.endswith("```") for p in parts)
    assert "".join(p[4:].removesuffix("```").strip("\n") for p in parts) == "y" * 100


def test_telegram_sized_reply() -> None:
    text = "\n\n".join(f"Paragraph {n}. " + "word " * 150 for n in range(12))
    parts = split_message(text, 4096, measure=utf16_len)
    assert len(parts) == 3
    assert all(utf16_len(p) <= 4096 for p in parts)


def test_a_limit_too_small_for_a_reopened_fence() -> None:
    with pytest.raises(ValueError, match="too small"):
        split_message("```python-with-a-long-info\n" + "z\n" * 50 + "```", 20)
    with pytest.raises(ValueError, match="positive"):
        split_message("x", 0)
