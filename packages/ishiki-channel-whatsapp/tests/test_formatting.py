"""Markdown (parsed by markdown-it-py) in WhatsApp's formatting: what each construct becomes, and parts that fit
the limit, marks included, without cutting a code block that fits one part."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ishiki_host import utf16_len

from ishiki_channel_whatsapp.formatting import render_parts, render_whatsapp


@pytest.mark.parametrize(
    ("markdown", "whatsapp"),
    [
        ("**bold**, *it*, ~~gone~~ and `code`", "*bold*, _it_, ~gone~ and `code`"),
        ("## A **heading**", "*A heading*"),
        ("- one\n- two\n  - nested", "• one\n• two\n  • nested"),
        ("7. seven\n8. eight", "7. seven\n8. eight"),
        ("> said\n> twice", "> said\n> twice"),
        ("[docs](https://e.com/x) and [https://a.io](https://a.io)", "docs (https://e.com/x) and https://a.io"),
        ("[relative](x.md)", "relative"),
        ("```python\nprint('hi')\n```", "```\nprint('hi')\n```"),
        ("| a | bb |\n|---|---|\n| 1 | 2 |", "```\na | bb\n--+---\n1 | 2\n```"),
        ("<b>raw</b> & co", "<b>raw</b> & co"),
    ],
)
def test_rendering(markdown, whatsapp):
    assert render_whatsapp(markdown) == whatsapp


def test_a_long_code_block_is_closed_and_reopened():
    code = "\n".join(f"line {i} of the code" for i in range(400))
    parts = render_parts(f"Intro\n\n```\n{code}\n```", 4096)
    assert parts[0] == "Intro"
    assert all(part.startswith("```\n") and part.endswith("\n```") for part in parts[1:])
    assert all(len(part) <= 4096 for part in parts)
    assert "\n".join(part[4:-4] for part in parts[1:]).split("\n") == code.split("\n")


TOKENS = [*"ab _*~`[]()<>&\n#-|>1.", "😀", "```", "```py\n", "**", "~~", "](https://x.io/", "\n\n", "\n- ", "\n> "]
markdown = st.lists(st.sampled_from(TOKENS), max_size=150).map("".join)


@settings(max_examples=300, deadline=None)
@given(markdown, st.integers(min_value=12, max_value=200), st.sampled_from([len, utf16_len]))
def test_every_part_fits_with_its_marks(source, limit, measure):
    parts = render_parts(source, limit, measure)
    assert all(0 < measure(part) <= limit for part in parts)
    whole, joined = render_whatsapp(source), "".join(parts)
    assert [joined.count(letter) for letter in "ab😀"] == [whole.count(letter) for letter in "ab😀"]  # nothing lost
